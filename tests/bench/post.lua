-- tests/bench/post.lua: wrk script for tests/bench/run.sh.
--
--   BENCH_METHOD=eth_blockNumber|eth_getLogs|eth_getTransactionReceipt|eth_chainId
--                                              which JSON-RPC call to POST (default eth_blockNumber)
--   BENCH_API_KEY=sl_...                       present this API key in an X-API-Key header on every
--                                              request (default: none, a keyless call)
--   BENCH_DELAY_MS=N                           wait about N ms (uniformly N/2..3N/2) before every
--                                              request (default 0: none); run.sh uses it to hold
--                                              many mostly idle keep-alive clients. The jitter keeps
--                                              the clients from firing all at once: 1,000 requests
--                                              in the same millisecond would exceed sluice's default
--                                              max_inflight (256 per endpoint) and get 503s.
--
-- At the end it prints one machine-readable line that run.sh parses:
--   BENCH requests=… duration_us=… bytes=… status=… connect=… read=… write=… timeout=… p50_us=… p90_us=… p99_us=… max_us=… mean_us=…
-- "status" is wrk's count of answers with a status >= 400 ("Non-2xx or 3xx responses").

local bodies = {
  eth_blockNumber = '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}',
  eth_getLogs = '{"jsonrpc":"2.0","id":1,"method":"eth_getLogs","params":[{"fromBlock":"0xf4200","toBlock":"latest"}]}',
  eth_getTransactionReceipt = '{"jsonrpc":"2.0","id":1,"method":"eth_getTransactionReceipt","params":["0x1111111111111111111111111111111111111111111111111111111111111111"]}',
  eth_chainId = '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}',
}

local method = os.getenv("BENCH_METHOD") or "eth_blockNumber"
wrk.method = "POST"
wrk.body = bodies[method] or error("post.lua: unknown BENCH_METHOD " .. method)
wrk.headers["Content-Type"] = "application/json"
local api_key = os.getenv("BENCH_API_KEY") or ""
if api_key ~= "" then
  wrk.headers["X-API-Key"] = api_key
end

local delay_ms = tonumber(os.getenv("BENCH_DELAY_MS") or "0") or 0
if delay_ms > 0 then
  math.randomseed(os.time())
  function delay()
    return math.floor(delay_ms / 2 + math.random() * delay_ms)
  end
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "BENCH requests=%d duration_us=%d bytes=%d status=%d connect=%d read=%d write=%d timeout=%d "
      .. "p50_us=%d p90_us=%d p99_us=%d max_us=%d mean_us=%.1f\n",
    summary.requests, summary.duration, summary.bytes, e.status, e.connect, e.read, e.write, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, latency.mean))
end
