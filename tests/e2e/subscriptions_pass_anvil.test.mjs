// newPendingTransactions passed through from a real node's WebSocket
// (issue 22): anvil (no automine, so a transaction stays pending) serves
// WebSocket on its HTTP port; viem's watchPendingTransactions over a
// webSocket transport to sluice gets the hash of each transaction sent to
// anvil, under sluice's own subscription id, through the endpoint's ws_url.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicClient, webSocket } from 'viem';
import { startSluice, waitFor, metricValue } from '../lib/harness.mjs';
import { startAnvil, rpc, stopSluiceCleanly, DEV_ADDRESS } from '../lib/e2e.mjs';

let node, sluice;

before(async () => {
  node = await startAnvil({ name: 'pending', args: ['--no-mining'] });
  sluice = await startSluice({ workers: 2, networks: { eth: {
    lines: ['ranking: { probe_interval_ms: 500 }'],
    endpoints: [{ id: 'anvil', url: node.url, ws_url: `"ws://127.0.0.1:${node.port}"` }] } } });
});

after(async () => {
  await stopSluiceCleanly(sluice);
  await node?.kill('SIGTERM');
});

test('viem watchPendingTransactions through sluice gets the hash of each transaction sent to anvil', async () => {
  const client = createPublicClient({ transport: webSocket(`ws://127.0.0.1:${sluice.port}/eth`, { reconnect: false }) });
  const got = [];
  const unwatch = client.watchPendingTransactions({ onTransactions: (hs) => got.push(...hs), poll: false });
  try {
    // the subscription reaches anvil after viem's call: wait for it before sending
    await waitFor(async () => (await metricValue(sluice, 'sluice_subscription_upstream_sockets')) === 1,
      { timeoutMs: 10000, what: 'the upstream subscription socket' });
    const sent = [];
    for (let i = 0; i < 3; i++) {
      sent.push(await rpc(node.url, 'eth_sendTransaction',
        [{ from: DEV_ADDRESS, to: '0x000000000000000000000000000000000000dEaD', value: '0x1' }]));
    }
    await waitFor(() => sent.every((h) => got.includes(h)), { timeoutMs: 5000, what: 'the three hashes' });
    assert.deepEqual(got.filter((h) => sent.includes(h)), sent);
  } finally {
    unwatch();
    (await client.transport.getRpcClient()).close();
  }
});
