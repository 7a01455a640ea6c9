// viem's waitForTransactionReceipt through sluice while one anvil lags
// behind (it mines nothing), and a transaction re-broadcast after it was
// mined: anvil says "nonce too low", sluice checks by hash, the client gets
// the hash back (idempotent broadcast on a real node).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicClient, createWalletClient, http, parseEther, keccak256 } from 'viem';
import { privateKeyToAccount, generatePrivateKey } from 'viem/accounts';
import { foundry } from 'viem/chains';
import { startSluice, post, call, waitFor, adminGet } from '../lib/harness.mjs';
import { startAnvil, rpc, DEV_KEY, stopSluiceCleanly } from '../lib/e2e.mjs';

let live, lagging, sluice, url;
const account = privateKeyToAccount(DEV_KEY);

before(async () => {
  // "lagging" is listed first: only the ranking keeps traffic away from it
  [live, lagging] = await Promise.all([
    startAnvil({ name: 'live', args: ['--block-time', '1'] }),
    startAnvil({ name: 'lagging', args: ['--no-mining'] }),
  ]);
  sluice = await startSluice({
    workers: 2,
    networks: {
      eth: {
        lines: ['ranking: { probe_interval_ms: 250, max_lag: 1 }'],
        endpoints: [{ id: 'lagging', url: lagging.url }, { id: 'live', url: live.url }],
      },
    },
  });
  url = sluice.url('eth');
  // the live node mines a block a second: after a few, the other is far behind
  await waitFor(async () => {
    const v = (await adminGet(sluice, '/admin/endpoints')).json;
    return v.find((e) => e.id === 'lagging').score?.excluded === 'far behind the head';
  }, { timeoutMs: 15000, intervalMs: 200, what: 'the lagging node excluded' });
});

after(async () => {
  await stopSluiceCleanly(sluice);
  await Promise.all([live, lagging].map((n) => n?.kill('SIGTERM')));
});

test('viem: send and waitForTransactionReceipt while one node lags', async () => {
  const transport = http(url, { retryCount: 0 });
  const pub = createPublicClient({ chain: foundry, transport, cacheTime: 0, pollingInterval: 100 });
  const wallet = createWalletClient({ account, chain: foundry, transport, cacheTime: 0 });
  const to = privateKeyToAccount(generatePrivateKey()).address;
  const hash = await wallet.sendTransaction({ to, value: parseEther('1.5') });
  const receipt = await pub.waitForTransactionReceipt({ hash, timeout: 20000 });
  assert.equal(receipt.status, 'success');
  assert.equal(await pub.getBalance({ address: to }), parseEther('1.5'));
  // nothing reached the lagging node: its mempool and chain never saw the transaction
  assert.equal(await rpc(lagging.url, 'eth_getTransactionByHash', [hash]), null);
  assert.equal(await rpc(lagging.url, 'eth_getTransactionCount', [account.address, 'pending']), '0x0');
});

test('a transaction re-sent after it was mined: "nonce too low" becomes a success with its hash', async () => {
  const wallet = createWalletClient({ account, chain: foundry, transport: http(live.url) });
  const to = privateKeyToAccount(generatePrivateKey()).address;
  const request = await wallet.prepareTransactionRequest({ to, value: 1n });
  const raw = await wallet.signTransaction(request);
  const hash = keccak256(raw);
  // broadcast straight to the node and let it be mined
  assert.equal(await rpc(live.url, 'eth_sendRawTransaction', [raw]), hash);
  await waitFor(async () => (await rpc(live.url, 'eth_getTransactionReceipt', [hash])) !== null,
    { timeoutMs: 10000, what: 'mined' });
  // a client retrying the same bytes through sluice
  const direct = await fetch(live.url, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify(call('eth_sendRawTransaction', [raw], 1)),
  }).then((x) => x.json());
  assert.ok(direct.error, 'the node itself refuses the duplicate');
  const r = await post(url, call('eth_sendRawTransaction', [raw], 'again'));
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.error, undefined, `${direct.error.message} -> ${r.text}`);
  assert.equal(r.json.result, hash);
  assert.equal(r.json.id, 'again');
});
