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

static const struct {
    const char *name;
    const char *source;
} scripts[STATE_SCRIPT_COUNT] = {
    [STATE_SCRIPT_HELLO] = {"hello", hello_lua},
};

const char *state_script_source(state_script_t s)
{
    return (unsigned)s < STATE_SCRIPT_COUNT ? scripts[s].source : "";
}

const char *state_script_name(state_script_t s)
{
    return (unsigned)s < STATE_SCRIPT_COUNT ? scripts[s].name : "unknown";
}
