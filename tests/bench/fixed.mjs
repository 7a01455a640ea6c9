// tests/bench/fixed.mjs URL METHOD N CONCURRENCY: sends exactly N JSON-RPC
// calls of METHOD over CONCURRENCY keep-alive connections, then prints
// "fixed requests=N non200=K". For callgrind runs, where wrk's fixed
// duration would make the instruction count depend on the machine's speed.
import http from 'node:http';

const [url, method, nArg, cArg] = process.argv.slice(2);
const n = Number(nArg), conc = Number(cArg);
if (!url || !method || !(n > 0) || !(conc > 0)) {
  console.error('usage: fixed.mjs URL METHOD N CONCURRENCY');
  process.exit(2);
}
const params = {
  eth_blockNumber: [],
  eth_chainId: [],
  eth_getTransactionReceipt: ['0x' + '11'.repeat(32)],
  eth_getLogs: [{ fromBlock: '0xf4200', toBlock: 'latest' }],
  eth_call: [{ to: '0x00000000000000000000000000000000000000c0', data: '0x70a08231' }, 'latest'],
  getSignatureStatuses: [['5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW']],
}[method];
if (!params) { console.error(`fixed.mjs: unknown method ${method}`); process.exit(2); }
// FIXED_HEADERS: a JSON object of headers sent with every call (e.g. an Origin)
const extra = process.env.FIXED_HEADERS ? JSON.parse(process.env.FIXED_HEADERS) : {};
const agent = new http.Agent({ keepAlive: true, maxSockets: conc });
let next = 0, bad = 0;
function one(id) {
  const body = JSON.stringify({ jsonrpc: '2.0', id, method, params });
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', agent, headers: { ...extra, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      res.resume();
      res.on('end', () => { if (res.statusCode !== 200) bad++; resolve(); });
    });
    req.on('error', reject);
    req.end(body);
  });
}
// One call alone first (counted in N): sluice reserves a caller's share for an answer of
// unknown size at admission, half the share for a scan such as eth_getLogs, so a burst of
// scans from a caller it has never answered is partly refused (503 buffered_bytes_share)
// until the first answer teaches it their size, as a real client's first call would.
await one(next++);
await Promise.all(Array.from({ length: conc }, async () => {
  while (next < n) await one(next++);
}));
agent.destroy();
console.log(`fixed requests=${n} non200=${bad}`);
process.exit(bad ? 1 : 0);
