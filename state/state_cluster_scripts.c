/* state/state_cluster_scripts.c: the Lua scripts sluice runs in Redis.
 *
 * Each is loaded with SCRIPT LOAD when a connection opens and run with
 * EVALSHA. Time inside a script is Redis' TIME, so the hosts' clocks do not
 * matter to what the scripts decide. Keys are passed as KEYS (the prefix is
 * the config's); scripts touch only the keys they are given. */
#include "state/state_cluster_int.h"

/* KEYS[1] hosts set; ARGV host, ttl_ms, own heartbeat channel. A host is
 * kept a day after its last heartbeat: the limits hold a vanished host's
 * share back for their window (gcra), a day at most.
 * Returns {hosts seen within ttl, TIME seconds, TIME microseconds}. */
static const char hello_lua[] =
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "local ttl = tonumber(ARGV[2])\n"
    "redis.call('ZADD', KEYS[1], now, ARGV[1])\n"
    "redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - 86400000 - 10 * ttl)\n"
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

/* KEYS client-limit cells, then the cells' index (a sorted set), then the
 * hosts set; ARGV need, want, then per cell the interval, capacity and
 * window in µs, then the most cells kept, a host's alive_ms and hold_ms. Each cell holds its TAT in µs of Redis' clock and
 * expires a second after its backlog is gone. The same arithmetic as
 * policy/limiter.c: a cell fits floor((C - backlog) / I) calls; the lease is
 * the fewest any cell fits, at most want, or nothing when that is below
 * need (the wait: until need calls fit in every cell, at most a window).
 *
 * The bound (state.max_limit_cells, as LMDB's): the index scores every
 * cell by its TAT, so its first members are the cells that owe the fewest
 * calls' time; entries whose cell has expired are cut by score on every
 * run (cheap: a range at the low end), and a cell written past the bound
 * evicts the lowest others (never a cell of this call). O(log cells) per
 * lease, and the index is exact where a count would drift with expiries.
 * The evicted keys are not in KEYS: one Redis only (no Redis Cluster).
 *
 * Hosts cut off from Redis: such a host enforces limit / hosts on its own
 * (the hosts it last saw, itself included). So that the cluster does not
 * admit that share twice, the hosts still here hold it back: a host seen
 * within a cell's window (plus hold_ms) but not within alive_ms is taken
 * to be spending its share alone, and the cell's interval grows by
 * known / alive (the connected hosts get alive / known of the limit). A
 * host that has been away longer than the window is taken to be gone.
 * Returns {granted, retry_us, now_us, tat_us per cell}. */
static const char gcra_lua[] =
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"
    "local n = #KEYS - 2\n"
    "local idx = KEYS[n + 1]\n"
    "local need = tonumber(ARGV[1])\n"
    "local grant = tonumber(ARGV[2])\n"
    "local cap = tonumber(ARGV[3 * n + 3])\n"
    "local now_ms = math.floor(now / 1000)\n"
    "local alive = redis.call('ZCOUNT', KEYS[n + 2], now_ms - tonumber(ARGV[3 * n + 4]), '+inf')\n"
    "local retry = 0\n"
    "local back = {}\n"
    "local step = {}\n"
    "for i = 1, n do\n"
    "  local I = tonumber(ARGV[3 * i]); local C = tonumber(ARGV[3 * i + 1]); local W = tonumber(ARGV[3 * i + 2])\n"
    "  if alive > 0 then\n"
    "    local known = redis.call('ZCOUNT', KEYS[n + 2], now_ms - math.floor(W / 1000) - tonumber(ARGV[3 * n + 5]), '+inf')\n"
    "    if known > alive then I = math.ceil(I * known / alive) end\n"
    "  end\n"
    "  step[i] = I\n"
    "  local tat = tonumber(redis.call('GET', KEYS[i]) or '0') or 0\n"
    "  local d = 0\n"
    "  if tat > now then d = tat - now end\n"
    "  back[i] = d\n"
    "  local fits = 0\n"
    "  if d < C then fits = math.floor((C - d) / I) end\n"
    "  if fits < need then\n"
    "    local wait = W\n"
    "    if need * I <= C then wait = d - (C - need * I) end\n"
    "    if wait > W then wait = W end\n"
    "    if wait > retry then retry = wait end\n"
    "  end\n"
    "  if fits < grant then grant = fits end\n"
    "end\n"
    "local out = {0, retry, now}\n"
    "if grant < need or grant <= 0 then\n"
    "  for i = 1, n do out[3 + i] = now + back[i] end\n"
    "  return out\n"
    "end\n"
    "out[1] = grant\n"
    "out[2] = 0\n"
    "local mine = {}\n"
    "for i = 1, n do\n"
    "  local tat = now + back[i] + grant * step[i]\n"
    "  redis.call('SET', KEYS[i], string.format('%.0f', tat), 'PX', math.floor((tat - now) / 1000) + 1000)\n"
    "  redis.call('ZADD', idx, tat, KEYS[i])\n"
    "  mine[KEYS[i]] = true\n"
    "  out[3 + i] = tat\n"
    "end\n"
    "redis.call('ZREMRANGEBYSCORE', idx, '-inf', '(' .. string.format('%.0f', now - 1000000))\n"
    "local over = redis.call('ZCARD', idx) - cap\n"
    "if over > 0 then\n"
    "  for _, k in ipairs(redis.call('ZRANGE', idx, 0, over + n - 1)) do\n"
    "    if over > 0 and not mine[k] then\n"
    "      redis.call('DEL', k)\n"
    "      redis.call('ZREM', idx, k)\n"
    "      over = over - 1\n"
    "    end\n"
    "  end\n"
    "end\n"
    "return out\n";

/* KEYS credit ledgers (hashes start, spent, low, exh, and s:<host>), then
 * the hosts set; ARGV low_pct, this host, alive_ms, hold_ms, then per
 * ledger start_ms, end_ms, budget, need, size. A window's start never moves
 * back: a newer start resets the ledger, an older one (a caller's clock
 * behind) counts in the stored window. Every window must have need left, or
 * nothing is spent (budget_exhausted due once per window when the budget
 * itself lacks it); a granted lease is min(max(size, need), left);
 * budget_low is due once per window when at most low_pct of it is left.
 *
 * Hosts cut off: a host without Redis spends its share of what it last saw
 * left, (budget - seen) / hosts (pool_credit.c), so Redis notes what each
 * host last saw (s:<host>, on every answer) and the hosts still here leave
 * that much alone ("held"): a host seen within the window (plus hold_ms) but
 * not within alive_ms, divided by the hosts around at its last heartbeat.
 *
 * A ledger has no TTL (a key per endpoint and window name, reset in place
 * when a window turns over: their number is bounded by the config), so a
 * volatile-* maxmemory-policy never takes one; PERSIST clears the TTL older
 * versions set. Returns {granted, then per ledger grant, start, spent,
 * event (1 low, 2 exhausted)}. */
static const char credits_lua[] =
    "local low_pct = tonumber(ARGV[1])\n"
    "local me = ARGV[2]\n"
    "local n = #KEYS - 1\n"
    "local hk = KEYS[n + 1]\n"
    "local t = redis.call('TIME')\n"
    "local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "local alive_ms = tonumber(ARGV[3]); local hold = tonumber(ARGV[4])\n"
    "local function held(key, budget, len, fresh)\n"
    "  local v = redis.call('ZRANGEBYSCORE', hk, now_ms - len - hold, '(' .. (now_ms - alive_ms), 'WITHSCORES')\n"
    "  local sum = 0\n"
    "  for j = 1, #v, 2 do\n"
    "    if v[j] ~= me then\n"
    "      local seen = 0\n"
    "      if not fresh then seen = tonumber(redis.call('HGET', key, 's:' .. v[j]) or '0') or 0 end\n"
    "      local nh = redis.call('ZCOUNT', hk, tonumber(v[j + 1]) - hold, '+inf')\n"
    "      if nh < 1 then nh = 1 end\n"
    "      if budget > seen then sum = sum + math.floor((budget - seen) / nh) end\n"
    "    end\n"
    "  end\n"
    "  return sum\n"
    "end\n"
    "local st, sp, lo, ex, gr, ev, fresh = {}, {}, {}, {}, {}, {}, {}\n"
    "local lacking = false\n"
    "for i = 1, n do\n"
    "  local b = 4 + 5 * (i - 1)\n"
    "  local start = tonumber(ARGV[b + 1]); local budget = tonumber(ARGV[b + 3])\n"
    "  local need = tonumber(ARGV[b + 4]); local size = tonumber(ARGV[b + 5])\n"
    "  local h = redis.call('HMGET', KEYS[i], 'start', 'spent', 'low', 'exh')\n"
    "  local s0 = tonumber(h[1] or '0') or 0\n"
    "  fresh[i] = start > s0\n"
    "  if fresh[i] then\n"
    "    st[i] = start; sp[i] = 0; lo[i] = 0; ex[i] = 0\n"
    "  else\n"
    "    st[i] = s0; sp[i] = tonumber(h[2] or '0') or 0; lo[i] = tonumber(h[3] or '0') or 0; ex[i] = tonumber(h[4] or '0') or 0\n"
    "  end\n"
    "  ev[i] = 0; gr[i] = 0\n"
    "  local left = 0\n"
    "  if budget > sp[i] then left = budget - sp[i] end\n"
    "  local free = left - held(KEYS[i], budget, tonumber(ARGV[b + 2]) - start, fresh[i])\n"
    "  if free < need then\n"
    "    lacking = true\n"
    "    if left < need and ex[i] == 0 then ex[i] = 1; ev[i] = 2 end\n"
    "  else\n"
    "    local g = size\n"
    "    if g < need then g = need end\n"
    "    if g > free then g = free end\n"
    "    gr[i] = g\n"
    "  end\n"
    "end\n"
    "local out = {1}\n"
    "if lacking then out[1] = 0 end\n"
    "for i = 1, n do\n"
    "  local b = 4 + 5 * (i - 1)\n"
    "  local budget = tonumber(ARGV[b + 3])\n"
    "  if lacking then\n"
    "    gr[i] = 0\n"
    "  else\n"
    "    sp[i] = sp[i] + gr[i]\n"
    "    if lo[i] == 0 and (budget - sp[i]) * 100 <= budget * low_pct then lo[i] = 1; ev[i] = 1 end\n"
    "  end\n"
    "  local write = (not lacking) or ev[i] ~= 0\n"
    "  if write then\n"
    "    if fresh[i] then redis.call('DEL', KEYS[i]) end\n"
    "    redis.call('HSET', KEYS[i], 'start', string.format('%.0f', st[i]), 'spent', string.format('%.0f', sp[i]),\n"
    "               'low', lo[i], 'exh', ex[i])\n"
    "    redis.call('PERSIST', KEYS[i])\n"
    "  end\n"
    "  if write or not fresh[i] then redis.call('HSET', KEYS[i], 's:' .. me, string.format('%.0f', sp[i])) end\n"
    "  out[2 + 4 * (i - 1)] = gr[i]\n"
    "  out[3 + 4 * (i - 1)] = st[i]\n"
    "  out[4 + 4 * (i - 1)] = sp[i]\n"
    "  out[5 + 4 * (i - 1)] = ev[i]\n"
    "end\n"
    "return out\n";

/* KEYS credit ledgers; per ledger ARGV start, floor, delta: the host's
 * window, its copy of Redis' spent in it, and what it spent alone; the last
 * ARGV is the host. A window Redis has not reached starts at floor + delta
 * (the old window's fields go); the same window's spent becomes
 * max(spent, floor) + delta; a newer window in Redis is left alone. What the
 * host is told is noted (s:<host>, see credits). Returns per ledger
 * {start, spent, low + 2 * exh}. */
static const char ledgers_lua[] =
    "local out = {}\n"
    "local me = ARGV[#ARGV]\n"
    "for i = 1, #KEYS do\n"
    "  local start = tonumber(ARGV[3 * i - 2]); local floor = tonumber(ARGV[3 * i - 1]); local delta = tonumber(ARGV[3 * i])\n"
    "  local h = redis.call('HMGET', KEYS[i], 'start', 'spent', 'low', 'exh')\n"
    "  local s0 = tonumber(h[1] or '0') or 0; local sp = tonumber(h[2] or '0') or 0\n"
    "  local lo = tonumber(h[3] or '0') or 0; local ex = tonumber(h[4] or '0') or 0\n"
    "  local write = false\n"
    "  if start > s0 then\n"
    "    s0 = start; sp = floor + delta; lo = 0; ex = 0; write = true\n"
    "    redis.call('DEL', KEYS[i])\n"
    "  elseif start == s0 and start ~= 0 and (floor > sp or delta > 0) then\n"
    "    if floor > sp then sp = floor end\n"
    "    sp = sp + delta; write = true\n"
    "  end\n"
    "  if write then\n"
    "    redis.call('HSET', KEYS[i], 'start', string.format('%.0f', s0), 'spent', string.format('%.0f', sp), 'low', lo, 'exh', ex)\n"
    "  end\n"
    "  if s0 ~= 0 then redis.call('HSET', KEYS[i], 's:' .. me, string.format('%.0f', sp)) end\n"
    "  out[3 * i - 2] = s0; out[3 * i - 1] = sp; out[3 * i] = lo + 2 * ex\n"
    "end\n"
    "return out\n";

/* KEYS[1] a network's floor of heads served (a hash: k0 latest, k1 safe,
 * k2 finalized); ARGV channel, network, then a floor per kind. Each field
 * becomes the higher of the two (never lower: the floor only rises); when
 * one rose, "f <network> <k0> <k1> <k2>" goes to the channel. Returns the
 * floors as decimal strings. Heights are below 2^53 (Lua's numbers). */
static const char floor_lua[] =
    "local out, rose = {}, false\n"
    "for i = 3, #ARGV do\n"
    "  local f = 'k' .. (i - 3)\n"
    "  local cur = tonumber(redis.call('HGET', KEYS[1], f) or '0') or 0\n"
    "  local want = tonumber(ARGV[i]) or 0\n"
    "  if want > cur then\n"
    "    redis.call('HSET', KEYS[1], f, string.format('%.0f', want))\n"
    "    cur = want\n"
    "    rose = true\n"
    "  end\n"
    "  out[i - 2] = string.format('%.0f', cur)\n"
    "end\n"
    "if rose then redis.call('PUBLISH', ARGV[1], 'f ' .. ARGV[2] .. ' ' .. table.concat(out, ' ')) end\n"
    "return out\n";

/* KEYS[1] the run-time API keys (name -> 20-digit version, then the
 * record), KEYS[2] their tombstones (name -> version); ARGV 'p' (a key
 * made or changed) or 'd' (revoked), name, version (shared ms, 20 digits),
 * record ('' for 'd'), channel. The later version wins; a revocation wins
 * a tie. Tells the channel "k" when it wrote. Returns 1 if written, 0 if
 * Redis has a later change of that name. */
static const char keyput_lua[] =
    "local v = tonumber(ARGV[3])\n"
    "local gone = tonumber(redis.call('HGET', KEYS[2], ARGV[2]) or '0') or 0\n"
    "local cur = redis.call('HGET', KEYS[1], ARGV[2])\n"
    "local curv = cur and (tonumber(string.sub(cur, 1, 20)) or 0) or 0\n"
    "if ARGV[1] == 'p' then\n"
    "  if gone >= v or curv > v then return 0 end\n"
    "  redis.call('HSET', KEYS[1], ARGV[2], ARGV[3] .. ARGV[4])\n"
    "  redis.call('HDEL', KEYS[2], ARGV[2])\n"
    "else\n"
    "  if curv > v or gone >= v then return 0 end\n"
    "  redis.call('HDEL', KEYS[1], ARGV[2])\n"
    "  redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])\n"
    "end\n"
    "redis.call('PUBLISH', ARGV[5], 'k')\n"
    "return 1\n";

/* KEYS[1], KEYS[2] as keyput's. Returns {HGETALL keys, HGETALL tombstones}
 * read at one instant. */
static const char keyget_lua[] =
    "return {redis.call('HGETALL', KEYS[1]), redis.call('HGETALL', KEYS[2])}\n";
/* KEYS[1] the job's lease, KEYS[2] the token counter, KEYS[3] the job's
 * last holder; ARGV host, ttl_ms. The holder's own lease is extended
 * (compare-and-extend); a free one is taken with SET NX PX and a new token.
 * Returns {held 0/1, holder, token, ms left, taken now 0/1, last holder}. */
static const char joblease_lua[] =
    "local v = redis.call('GET', KEYS[1])\n"
    "if v then\n"
    "  local h, t = string.match(v, '^(%S+) (%d+)$')\n"
    "  if h == ARGV[1] then\n"
    "    redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
    "    return {1, h, t, tonumber(ARGV[2]), 0, ''}\n"
    "  end\n"
    "  return {0, h or '', t or '0', redis.call('PTTL', KEYS[1]), 0, ''}\n"
    "end\n"
    "local t = redis.call('INCR', KEYS[2])\n"
    "if not redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. t, 'NX', 'PX', ARGV[2]) then\n"
    "  return {0, '', '0', 0, 0, ''}\n"
    "end\n"
    "local prev = redis.call('GET', KEYS[3]) or ''\n"
    "redis.call('SET', KEYS[3], ARGV[1])\n"
    "return {1, ARGV[1], tostring(t), tonumber(ARGV[2]), 1, prev}\n";

static const struct {
    const char *name;
    const char *source;
} scripts[STATE_SCRIPT_COUNT] = {
    [STATE_SCRIPT_HELLO] = {"hello", hello_lua},
    [STATE_SCRIPT_CAS] = {"cas", cas_lua},
    [STATE_SCRIPT_GET] = {"get", get_lua},
    [STATE_SCRIPT_SHIP] = {"ship", ship_lua},
    [STATE_SCRIPT_LEVEL] = {"level", level_lua},
    [STATE_SCRIPT_GCRA] = {"gcra", gcra_lua},
    [STATE_SCRIPT_CREDITS] = {"credits", credits_lua},
    [STATE_SCRIPT_LEDGERS] = {"ledgers", ledgers_lua},
    [STATE_SCRIPT_FLOOR] = {"floor", floor_lua},
    [STATE_SCRIPT_KEYPUT] = {"keyput", keyput_lua},
    [STATE_SCRIPT_KEYGET] = {"keyget", keyget_lua},
    [STATE_SCRIPT_JOBLEASE] = {"joblease", joblease_lua},
};

const char *state_script_source(state_script_t s)
{
    return (unsigned)s < STATE_SCRIPT_COUNT ? scripts[s].source : "";
}

const char *state_script_name(state_script_t s)
{
    return (unsigned)s < STATE_SCRIPT_COUNT ? scripts[s].name : "unknown";
}
