// Real Ethereum clients (viem, ethers v6) against two real dev nodes (anvil)
// behind sluice: reads, signed transfers and receipts, JSON-RPC batches; then
// the primary node is SIGKILLed and both clients keep working on the other.
//
// A and B are independent chains (same chain id, same dev accounts): a
// transaction exists only on the node that got it. So before the kill every
// call must reach A (B is `tier: fallback`), and nothing may reach B's chain;
// after the kill the clients see B's chain (its block number, its nonce for the
// account) and a new transfer lands, and is found, on B.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicClient, createWalletClient, http, parseEther } from 'viem';
import { privateKeyToAccount, generatePrivateKey } from 'viem/accounts';
import { foundry } from 'viem/chains';
import { JsonRpcProvider, Wallet, parseEther as ethersParseEther } from 'ethers';
import { startSluice, post, call, waitFor, sleep, adminGet } from '../lib/harness.mjs';
import { startAnvil, rpc, DEV_KEY, DEV_ADDRESS, CHAIN_ID, stopSluiceCleanly } from '../lib/e2e.mjs';

let A, B, sluice, url;
let viemPublic, viemWallet, ethersBatched, ethersSingle, ethersWallet;
const account = privateKeyToAccount(DEV_KEY);
const freshAddress = () => privateKeyToAccount(generatePrivateKey()).address;
const INITIAL = parseEther('10000');   // anvil's dev account balance

before(async () => {
  [A, B] = await Promise.all([startAnvil({ name: 'A' }), startAnvil({ name: 'B' })]);
  sluice = await startSluice({
    workers: 2,
    networks: {
      eth: {
        lines: ['timeouts: { connect_ms: 1000, attempt_ms: 5000, request_ms: 10000 }'],
        endpoints: [{ id: 'a', url: A.url }, { id: 'b', url: B.url, tier: 'fallback' }],
      },
    },
  });
  url = sluice.url('eth');
  // retryCount 0 / cacheTime 0: no client-side retry or cache may hide what sluice did.
  const transport = http(url, { retryCount: 0 });
  viemPublic = createPublicClient({ chain: foundry, transport, cacheTime: 0, pollingInterval: 50 });
  viemWallet = createWalletClient({ account, chain: foundry, transport, cacheTime: 0, pollingInterval: 50 });
  // ethers batches calls made within 10 ms into one JSON-RPC batch by default.
  ethersBatched = new JsonRpcProvider(url, undefined, { cacheTimeout: -1, pollingInterval: 50 });
  ethersSingle = new JsonRpcProvider(url, CHAIN_ID, { batchMaxCount: 1, staticNetwork: true, cacheTimeout: -1, pollingInterval: 50 });
  ethersWallet = new Wallet(DEV_KEY, ethersSingle);
});

after(async () => {
  ethersBatched?.destroy();
  ethersSingle?.destroy();
  const trouble = sluice ? await stopSluiceCleanly(sluice) : [];
  for (const n of [A, B]) n?.child.kill('SIGKILL');
  assert.deepEqual(trouble, [], 'sluice ran and stopped cleanly');
});

// Access-log lines sluice wrote after `from` (an index into accessLines()).
const accessSince = (from) => sluice.accessLines().slice(from);
async function accessWhere(from, pred, what) {
  return waitFor(() => accessSince(from).find(pred), { timeoutMs: 3000, what });
}

test('viem reads through sluice come from anvil A', async () => {
  assert.equal(await viemPublic.getChainId(), CHAIN_ID);
  const direct = BigInt(await rpc(A.url, 'eth_blockNumber'));
  assert.equal(await viemPublic.getBlockNumber(), direct);
  assert.equal(await viemPublic.getBalance({ address: DEV_ADDRESS }), INITIAL);
  assert.equal(await viemPublic.getBalance({ address: freshAddress() }), 0n);

  const r = await post(url, call('eth_chainId', [], 7));
  assert.equal(r.status, 200);
  assert.deepEqual(r.json, { jsonrpc: '2.0', id: 7, result: '0x7a69' });
  assert.equal(r.headers.get('x-sluice-endpoint'), 'a');
  assert.equal(r.headers.get('x-sluice-attempts'), '1');
});

test('viem: a signed transfer goes through sluice to A; receipt and balance check out', async () => {
  const to = freshAddress();
  const value = parseEther('1.5');
  const mark = sluice.accessLines().length;
  const hash = await viemWallet.sendTransaction({ to, value });
  const receipt = await viemPublic.waitForTransactionReceipt({ hash, timeout: 10000 });
  assert.equal(receipt.status, 'success');
  assert.equal(receipt.transactionHash, hash);
  assert.equal(receipt.to, to.toLowerCase());
  assert.equal(await viemPublic.getBalance({ address: to }), value);

  const send = await accessWhere(mark, (l) => l.methods.includes('eth_sendRawTransaction'), 'the send in the access log');
  assert.deepEqual(send.upstream.map((u) => u.endpoint), ['a'], JSON.stringify(send));
  // the transaction exists on A only: sluice sent the write once, to A
  assert.ok(await rpc(A.url, 'eth_getTransactionByHash', [hash]));
  assert.equal(await rpc(B.url, 'eth_getTransactionByHash', [hash]), null);
  assert.equal(await rpc(B.url, 'eth_getTransactionCount', [DEV_ADDRESS, 'latest']), '0x0');
});

test('ethers: a default (batching) provider sends JSON-RPC batches through sluice', async () => {
  const net = await ethersBatched.getNetwork();
  assert.equal(net.chainId, BigInt(CHAIN_ID));
  const mark = sluice.accessLines().length;
  const [bn, bal, nonce, code] = await Promise.all([
    ethersBatched.getBlockNumber(),
    ethersBatched.getBalance(DEV_ADDRESS),
    ethersBatched.getTransactionCount(DEV_ADDRESS, 'latest'),
    ethersBatched.getCode(DEV_ADDRESS),
  ]);
  assert.equal(bn, Number(await rpc(A.url, 'eth_blockNumber')));
  assert.equal(bal, BigInt(await rpc(A.url, 'eth_getBalance', [DEV_ADDRESS, 'latest'])));
  assert.ok(bal < INITIAL, 'A has the transfer of the previous test');
  assert.equal(nonce, 1);
  assert.equal(code, '0x');
  const batch = await accessWhere(mark, (l) => l.calls >= 4 && l.methods.includes('eth_getBalance'), 'a batch in the access log');
  assert.deepEqual(batch.upstream.map((u) => u.endpoint), ['a']);
});

test('ethers: Wallet.sendTransaction + tx.wait() through sluice (unbatched provider)', async () => {
  const to = freshAddress();
  const value = ethersParseEther('0.25');
  const tx = await ethersWallet.sendTransaction({ to, value });
  assert.equal(tx.nonce, 1, 'ethers asked sluice (A) for the nonce');
  const receipt = await tx.wait(1, 10000);
  assert.equal(receipt.status, 1);
  assert.equal(receipt.hash, tx.hash);
  assert.equal(await ethersBatched.getBalance(to), value);
  assert.equal(await ethersSingle.getBalance(to), value);
  assert.equal(await rpc(B.url, 'eth_getTransactionByHash', [tx.hash]), null);
});

let blocksOnA;
test('anvil A is SIGKILLed under load: every read in flight still succeeds', async () => {
  blocksOnA = Number(await rpc(A.url, 'eth_blockNumber'));
  assert.equal(blocksOnA, 2);
  const errors = [];
  let ok = 0;
  let stop = false;
  const loop = async (i) => {
    while (!stop) {
      try {
        if (i % 2) await viemPublic.getBalance({ address: DEV_ADDRESS });
        else await ethersSingle.getBlockNumber();
        ok++;
      } catch (e) {
        errors.push(e.shortMessage || e.message);
      }
    }
  };
  const mark = sluice.accessLines().length;
  const loops = [0, 1, 2, 3].map(loop);
  await waitFor(() => ok >= 10 || errors.length > 0, { what: 'reads before the kill' });
  const exit = await A.kill('SIGKILL');
  assert.equal(exit.signal, 'SIGKILL');
  const atKill = ok;
  await waitFor(() => ok >= atKill + 12 || errors.length > 0, { what: 'reads after the kill' });
  stop = true;
  await Promise.all(loops);
  assert.deepEqual(errors, [], `${errors.length} of ${ok + errors.length} reads failed`);
  assert.ok(ok > 20, `only ${ok} reads`);
  // the reads after the kill really failed over: A refused (or reset), B answered
  const failedOver = await accessWhere(mark, (l) => l.upstream.length > 1, 'a failover in the access log');
  assert.equal(failedOver.status, 200);
  assert.equal(failedOver.upstream[0].endpoint, 'a');
  assert.notEqual(failedOver.upstream[0].result, 'answered');
  assert.equal(failedOver.upstream.at(-1).endpoint, 'b');
  assert.equal(failedOver.upstream.at(-1).result, 'answered');
});

test('after the kill: reads come from B (its own chain), with the header to prove it; the head served does not go back', async () => {
  const r = await post(url, call('eth_blockNumber', [], 'after'));
  assert.equal(r.status, 200, r.text);
  assert.equal(r.headers.get('x-sluice-endpoint'), 'b');
  assert.equal(r.json.id, 'after');
  // B has mined nothing, but the head served never goes backwards: A's last
  // head (the floor) is held while B is within ranking.max_lag of it (docs/guide/chain.md,
  // "The head never goes backwards")
  assert.equal(await rpc(B.url, 'eth_blockNumber'), '0x0');
  const floor = BigInt(r.json.result);
  assert.ok(floor > 0n, `the floor A reached is served, not B's 0 (${r.json.result})`);
  assert.equal(await viemPublic.getBlockNumber(), floor);
  assert.equal(await ethersSingle.getBlockNumber(), Number(floor));

  // what B holds is B's chain: its balance and nonce for the account
  assert.equal(await viemPublic.getBalance({ address: DEV_ADDRESS }), INITIAL);
  assert.equal(await ethersBatched.getTransactionCount(DEV_ADDRESS), 0);
  const [bn, bal] = await Promise.all([ethersBatched.getBlockNumber(), ethersBatched.getBalance(DEV_ADDRESS)]);
  assert.equal(bn, Number(floor));
  assert.equal(bal, INITIAL);
});

test('after the kill: a viem transfer lands on B and its receipt is found', async () => {
  const to = freshAddress();
  const value = parseEther('2');
  const mark = sluice.accessLines().length;
  const hash = await viemWallet.sendTransaction({ to, value });
  const receipt = await viemPublic.waitForTransactionReceipt({ hash, timeout: 10000 });
  assert.equal(receipt.status, 'success');
  assert.equal(receipt.blockNumber, 1n, "B's first block");
  assert.equal(await viemPublic.getBalance({ address: to }), value);
  const tx = await viemPublic.getTransaction({ hash });
  assert.equal(tx.nonce, 0, "B's nonce for the account, asked through sluice");
  assert.ok(await rpc(B.url, 'eth_getTransactionByHash', [hash]));

  const send = await accessWhere(mark, (l) => l.methods.includes('eth_sendRawTransaction'), 'the send in the access log');
  assert.equal(send.status, 200);
  assert.equal(send.upstream.at(-1).endpoint, 'b', JSON.stringify(send));
  assert.equal(send.upstream.at(-1).result, 'answered', JSON.stringify(send));
});

test('after the kill: an ethers transfer lands on B and tx.wait() finds it', async () => {
  const to = freshAddress();
  const value = ethersParseEther('0.75');
  const tx = await ethersWallet.sendTransaction({ to, value });
  assert.equal(tx.nonce, 1);
  const receipt = await tx.wait(1, 10000);
  assert.equal(receipt.status, 1);
  assert.equal(receipt.blockNumber, 2);
  assert.equal(await ethersBatched.getBalance(to), value);
  assert.ok(await rpc(B.url, 'eth_getTransactionByHash', [tx.hash]));
  const sender = await ethersBatched.getBalance(DEV_ADDRESS);
  assert.ok(sender < INITIAL - parseEther('2.75') && sender > INITIAL - parseEther('2.76'), `sender ${sender}`);
});

test('the clients ran on sluice\'s defaults: the response cache answered their constant calls', async () => {
  const net = (await adminGet(sluice, '/admin/networks')).json.find((n) => n.network === 'eth');
  assert.ok(net.cache && net.cache.hits > 0, JSON.stringify(net.cache));
});
