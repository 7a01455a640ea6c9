/* state/state_cluster_scripts.c: the Lua scripts sluice runs in Redis.
 *
 * Each is loaded with SCRIPT LOAD when a connection opens and run with
 * EVALSHA. Time inside a script is Redis' TIME, so the hosts' clocks do not
 * matter to what the scripts decide. Keys are passed as KEYS (the prefix is
 * the config's); scripts touch only the keys they are given. */
#include "state/state_cluster_int.h"

/* KEYS[1] hosts set; ARGV host, ttl_ms, own heartbeat channel.
 * Returns {hosts seen within ttl, TIME seconds, TIME microseconds}. */
static const char hello_lua[] =
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "local ttl = tonumber(ARGV[2])\n"
    "redis.call('ZADD', KEYS[1], now, ARGV[1])\n"
    "redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - 10 * ttl)\n"
    "local n = redis.call('ZCOUNT', KEYS[1], now - ttl, '+inf')\n"
    "redis.call('PUBLISH', ARGV[3], 'hb')\n"
    "return {n, t[1], t[2]}\n";

/* KEYS[1] an endpoint record; ARGV expected version, new record, channel,
 * "<network>/<endpoint>". The version is a decimal string; a new one is
 * above the old and not below Redis' clock in µs (so it keeps growing even
 * when Redis lost the record). Returns {1, version} when written and
 * published, {0, version, record} (the current ones) when not. */
static const char cas_lua[] =
    "local cur = redis.call('HGET', KEYS[1], 'v') or '0'\n"
    "if cur ~= ARGV[1] then\n"
    "  return {0, cur, redis.call('HGET', KEYS[1], 'r') or ''}\n"
    "end\n"
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"
    "local v = math.max(tonumber(cur) + 1, now)\n"
    "local vs = string.format('%.0f', v)\n"
    "redis.call('HSET', KEYS[1], 'v', vs, 'r', ARGV[2])\n"
    "redis.call('PUBLISH', ARGV[3], 'e ' .. vs .. ' ' .. ARGV[4] .. '\\n' .. ARGV[2])\n"
    "return {1, vs}\n";

/* KEYS endpoint records. Returns {version, record, ...} per key ('0', ''
 * when absent). */
static const char get_lua[] =
    "local out = {}\n"
    "for i, k in ipairs(KEYS) do\n"
    "  local r = redis.call('HMGET', k, 'v', 'r')\n"
    "  out[2 * i - 1] = r[1] or '0'\n"
    "  out[2 * i] = r[2] or ''\n"
    "end\n"
    "return out\n";

/* KEYS[1] the event stream; ARGV maxlen, channel, then (host, sequence,
 * event) for each event. Appends them (the stream kept near maxlen entries)
 * and tells the channel "x". Returns how many. */
static const char ship_lua[] =
    "local n = 0\n"
    "for i = 3, #ARGV, 3 do\n"
    "  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'h', ARGV[i], 's', ARGV[i + 1], 'e', ARGV[i + 2])\n"
    "  n = n + 1\n"
    "end\n"
    "redis.call('PUBLISH', ARGV[2], 'x')\n"
    "return n\n";

/* KEYS[1] a network's level; ARGV the level a host just saw. Returns 1 if
 * it is news (this host reports the change), 0 if another host did. */
static const char level_lua[] =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return 0 end\n"
    "redis.call('SET', KEYS[1], ARGV[1])\n"
    "return 1\n";

static const struct {
    const char *name;
    const char *source;
} scripts[STATE_SCRIPT_COUNT] = {
    [STATE_SCRIPT_HELLO] = {"hello", hello_lua},
    [STATE_SCRIPT_CAS] = {"cas", cas_lua},
    [STATE_SCRIPT_GET] = {"get", get_lua},
    [STATE_SCRIPT_SHIP] = {"ship", ship_lua},
    [STATE_SCRIPT_LEVEL] = {"level", level_lua},
};

const char *state_script_source(state_script_t s)
{
    return (unsigned)s < STATE_SCRIPT_COUNT ? scripts[s].source : "";
}

const char *state_script_name(state_script_t s)
{
    return (unsigned)s < STATE_SCRIPT_COUNT ? scripts[s].name : "unknown";
}
