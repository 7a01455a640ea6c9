// A real node's WebSocket as the head source (issue 22, the upstream side):
// anvil serves WebSocket on its HTTP port. With the probes a minute apart,
// each block anvil mines reaches the network's head in /admin/networks
// through the ws_url stream's newHeads, and a reorg anvil makes
// (anvil_reorg) is seen from the hashes the stream carries.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startSluice, waitFor, adminGet, events } from '../lib/harness.mjs';
import { startAnvil, rpc, stopSluiceCleanly } from '../lib/e2e.mjs';

let node, sluice;

before(async () => {
  node = await startAnvil({ name: 'ws', args: ['--no-mining'] });
  sluice = await startSluice({ workers: 2, networks: { eth: {
    lines: ['ranking: { probe_interval_ms: 60000 }'],
    endpoints: [{ id: 'anvil', url: node.url, ws_url: `"ws://127.0.0.1:${node.port}"` }] } } });
  await waitFor(async () => (await adminGet(sluice, '/admin/endpoints')).json[0].ws?.state === 'connected',
    { timeoutMs: 10000, what: 'the stream to anvil subscribed' });
});

after(async () => {
  await stopSluiceCleanly(sluice);
  await node?.kill('SIGTERM');
});

const netHead = async () => (await adminGet(sluice, '/admin/networks')).json[0].head;

test('each block anvil mines is the network head within 200 ms, probes a minute apart', async () => {
  const lat = [];
  for (let i = 0; i < 8; i++) {
    const t0 = performance.now();
    await rpc(node.url, 'evm_mine');
    const want = Number(await rpc(node.url, 'eth_blockNumber'));
    await waitFor(async () => (await netHead()) === want, { timeoutMs: 2000, intervalMs: 5, what: `head ${want}` });
    lat.push(performance.now() - t0);
  }
  lat.sort((a, b) => a - b);
  console.log('anvil mine -> /admin/networks head, ms: median', lat[4].toFixed(1), 'max', lat[7].toFixed(1));
  assert.ok(lat[7] < 200, `every block within 200 ms (max ${lat[7]})`);
  const ep = (await adminGet(sluice, '/admin/endpoints')).json[0];
  assert.ok(ep.ws.heads_received >= 8, JSON.stringify(ep.ws));
});

test('a reorg anvil makes is seen from the stream\'s hashes', async () => {
  await rpc(node.url, 'evm_mine');
  const top = Number(await rpc(node.url, 'eth_blockNumber'));
  await waitFor(async () => (await netHead()) === top, { what: 'the head before the reorg' });
  await rpc(node.url, 'anvil_reorg', [2, []]); // the last two blocks replaced by new ones
  await rpc(node.url, 'evm_mine');
  await waitFor(async () => (await events(sluice)).some((e) => e.kind === 'reorg'),
    { timeoutMs: 5000, what: 'a reorg event' });
  const ev = (await events(sluice)).find((e) => e.kind === 'reorg');
  console.log('reorg:', ev.reason);
  assert.ok(ev.count >= 1);
});
