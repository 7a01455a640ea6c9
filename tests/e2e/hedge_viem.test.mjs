// A hung provider through viem (issue 11): three proxies in front of one
// anvil node, the first choice of them starts hanging (it reads each
// request and never answers). viem's own fallback() transport over the
// same three, with the same 2 s timeout sluice's attempts have, waits the
// timeout out on every read; through sluice (hedged reads, demotion on the
// first timeout) five reads take a fraction of that.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { createPublicClient, fallback, http as viemHttp } from 'viem';
import { foundry } from 'viem/chains';
import { startSluice, post, call } from '../lib/harness.mjs';
import { startAnvil, stopSluiceCleanly } from '../lib/e2e.mjs';

let node, proxies, sluice;

// A JSON-RPC proxy in front of target that can be told to hang.
async function startProxy(name, target) {
  const p = { name, hang: false, requests: 0, held: [] };
  p.server = http.createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    p.requests++;
    if (p.hang) { p.held.push(res); return; } // never answered
    try {
      const r = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body: Buffer.concat(chunks) });
      const text = await r.text();
      res.writeHead(r.status, { 'content-type': 'application/json' });
      res.end(text);
    } catch {
      res.destroy();
    }
  });
  await new Promise((r) => p.server.listen(0, '127.0.0.1', r));
  p.url = `http://127.0.0.1:${p.server.address().port}`;
  return p;
}

before(async () => {
  node = await startAnvil({ name: 'anvil', args: ['--block-time', '1'] });
  proxies = await Promise.all(['p1', 'p2', 'p3'].map((n) => startProxy(n, node.url)));
  sluice = await startSluice({
    workers: 2,
    networks: {
      eth: {
        lines: ['timeouts: { attempt_ms: 2000, request_ms: 10000 }', 'ranking: { probe_interval_ms: 250 }'],
        endpoints: proxies.map((p) => ({ id: p.name, url: p.url })),
      },
    },
  });
});

after(async () => {
  await stopSluiceCleanly(sluice);
  for (const p of proxies ?? []) { p.server.closeAllConnections(); p.server.close(); }
  await node?.kill('SIGTERM');
});

async function fiveReads(client) {
  const t0 = Date.now();
  for (let i = 0; i < 5; i++) assert.equal(typeof (await client.getBlockNumber()), 'bigint');
  return Date.now() - t0;
}

test('first choice hung: 5 viem reads through sluice take <= 1/4 of viem fallback() over the same providers', async () => {
  await new Promise((r) => setTimeout(r, 1000)); // probes rank the three
  const r = await post(sluice.url('eth'), call('eth_blockNumber'));
  assert.equal(r.status, 200, r.text);
  const first = proxies.find((p) => p.name === r.headers.get('x-sluice-endpoint'));
  first.hang = true;

  const viaSluice = createPublicClient({ chain: foundry, cacheTime: 0, transport: viemHttp(sluice.url('eth'), { retryCount: 0, timeout: 10000 }) });
  const sluiceMs = await fiveReads(viaSluice);

  // viem's own failover, the hung provider first, the same 2 s per attempt
  const ordered = [first, ...proxies.filter((p) => p !== first)];
  const viaFallback = createPublicClient({
    chain: foundry, cacheTime: 0,
    transport: fallback(ordered.map((p) => viemHttp(p.url, { retryCount: 0, timeout: 2000 })), { rank: false, retryCount: 0 }),
  });
  const fallbackMs = await fiveReads(viaFallback);

  assert.ok(first.requests > 0, 'the hung provider was asked');
  assert.ok(sluiceMs * 4 <= fallbackMs, `sluice ${sluiceMs} ms, viem fallback() ${fallbackMs} ms`);
  console.log(`# 5 reads, first provider hung: sluice ${sluiceMs} ms, viem fallback() ${fallbackMs} ms`);
});
