// viem with JSON-RPC batching through sluice in front of a real node (anvil),
// and deterministic errors: a contract that always reverts must surface in
// viem as the revert, with its data byte-for-byte, answered by the node that
// ran it and never retried at the spare endpoint behind it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  createPublicClient, createWalletClient, http, parseEther,
  CallExecutionError, ContractFunctionExecutionError, ContractFunctionRevertedError,
  ExecutionRevertedError, TransactionExecutionError, RpcRequestError,
} from 'viem';
import { privateKeyToAccount, generatePrivateKey } from 'viem/accounts';
import { foundry } from 'viem/chains';
import { startFake, startSluice, post, call, waitFor } from '../lib/harness.mjs';
import {
  startAnvil, rpc, deployCode, revertingRuntime, errorStringData, stopSluiceCleanly, DEV_KEY, DEV_ADDRESS, CHAIN_ID,
} from '../lib/e2e.mjs';

const REASON = 'sluice: deterministic revert';
const REVERT_DATA = `0x${errorStringData(REASON)}`;
const FAIL_ABI = [{ type: 'function', name: 'fail', inputs: [], outputs: [{ type: 'uint256' }], stateMutability: 'view' }];

let node, spare, sluice, url, client, batchClient, wallet;
let reverter, bare;   // contract addresses: reverts with Error(REASON) / with no data

// The error chain viem builds, for assertion messages.
const chain = (e) => {
  const out = [];
  for (let x = e; x; x = x.cause) out.push(`${x.name ?? 'object'}(code=${x.code}, data=${x.data})`);
  return out.join(' <- ');
};
// How many of these calls reached the spare. (Only methods a client sends:
// health probes, once sluice has them, may ask the spare for its head.)
const CLIENT_METHODS = ['eth_call', 'eth_estimateGas', 'eth_getBalance', 'eth_getCode', 'eth_getTransactionCount', 'eth_gasPrice', 'eth_sendRawTransaction'];
async function spareCalls() {
  const { methods = {} } = await spare.stats();
  return CLIENT_METHODS.reduce((n, m) => n + (methods[m] || 0), 0);
}

// The JSON-RPC error viem got from the wire (RpcRequestError: code, data).
const wireError = (e) => e.walk((x) => x instanceof RpcRequestError);

before(async () => {
  // the spare is a fake provider: anything it answered would show in its stats
  [node, spare] = await Promise.all([startAnvil({ name: 'node' }), startFake({ name: 'spare', args: ['--chain-id', '0x7a69'] })]);
  sluice = await startSluice({
    workers: 2,
    // the spare fake reports block 1,000,000: head probes would (rightly) rank
    // the fresh anvil as far behind it, so this test keeps config order; and it
    // counts every read at the spare: a read hedged there when anvil is slow for
    // a moment (a busy machine, a sanitizer build) would count too
    networks: { eth: { lines: ['ranking: { probe_interval_ms: 0 }', 'hedge: { enabled: false }'],
      endpoints: [{ id: 'anvil', url: node.url }, { id: 'spare', url: spare.url, tier: 'fallback' }] } },
  });
  url = sluice.url('eth');
  client = createPublicClient({ chain: foundry, transport: http(url, { retryCount: 0 }), cacheTime: 0, pollingInterval: 50 });
  batchClient = createPublicClient({ chain: foundry, transport: http(url, { batch: true, retryCount: 0 }), cacheTime: 0 });
  wallet = createWalletClient({ account: privateKeyToAccount(DEV_KEY), chain: foundry, transport: http(url, { retryCount: 0 }) });

  for (const [runtime, set] of [[revertingRuntime(errorStringData(REASON)), (a) => { reverter = a; }],
    [revertingRuntime(''), (a) => { bare = a; }]]) {
    const hash = await wallet.deployContract({ abi: [], bytecode: deployCode(runtime) });
    const receipt = await client.waitForTransactionReceipt({ hash, timeout: 10000 });
    assert.equal(receipt.status, 'success');
    assert.equal(await client.getCode({ address: receipt.contractAddress }), `0x${runtime}`);
    set(receipt.contractAddress);
  }
  await spare.reset();
});

after(async () => {
  const trouble = sluice ? await stopSluiceCleanly(sluice) : [];
  await spare?.stop();
  node?.child.kill('SIGKILL');
  assert.deepEqual(trouble, [], 'sluice ran and stopped cleanly');
});

test('viem batch: parallel reads travel as one JSON-RPC batch and each gets its own answer', async () => {
  const others = [privateKeyToAccount(generatePrivateKey()).address, '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'];
  const mark = sluice.accessLines().length;
  const [chainId, blockNumber, balance, zero, second, nonce, code, gasPrice] = await Promise.all([
    batchClient.getChainId(),
    batchClient.getBlockNumber(),
    batchClient.getBalance({ address: DEV_ADDRESS }),
    batchClient.getBalance({ address: others[0] }),
    batchClient.getBalance({ address: others[1] }),
    batchClient.getTransactionCount({ address: DEV_ADDRESS }),
    batchClient.getCode({ address: reverter }),
    batchClient.getGasPrice(),
  ]);
  assert.equal(chainId, CHAIN_ID);
  assert.equal(blockNumber, BigInt(await rpc(node.url, 'eth_blockNumber')));
  assert.equal(blockNumber, 2n, 'two deployments mined');
  assert.equal(balance, BigInt(await rpc(node.url, 'eth_getBalance', [DEV_ADDRESS, 'latest'])));
  assert.ok(balance < parseEther('10000'));
  assert.equal(zero, 0n);
  assert.equal(second, parseEther('10000'));
  assert.equal(nonce, 2);
  assert.equal(code, `0x${revertingRuntime(errorStringData(REASON))}`);
  assert.equal(gasPrice, BigInt(await rpc(node.url, 'eth_gasPrice')));

  const line = await waitFor(() => sluice.accessLines().slice(mark).find((l) => l.calls > 1), { timeoutMs: 3000, what: 'the batch in the access log' });
  assert.equal(line.calls, 8, JSON.stringify(line));
  assert.deepEqual(line.upstream.map((u) => u.endpoint), ['anvil']);
  assert.equal(await spareCalls(), 0);
});

test('readContract on an always-reverting contract: viem decodes the reason sluice passed through', async () => {
  await assert.rejects(client.readContract({ address: reverter, abi: FAIL_ABI, functionName: 'fail' }), (e) => {
    assert.ok(e instanceof ContractFunctionExecutionError, `${e.name}: ${e.message}`);
    const reverted = e.walk((x) => x instanceof ContractFunctionRevertedError);
    assert.ok(reverted, e.message);
    assert.equal(reverted.reason, REASON);
    assert.equal(reverted.raw, REVERT_DATA);
    return true;
  });
  assert.equal(await spareCalls(), 0, 'a deterministic error is not retried elsewhere');
});

test('call / eth_call: CallExecutionError carrying the exact revert data; raw error equals the node\'s', async () => {
  await assert.rejects(client.call({ to: reverter, data: '0x12345678' }), (e) => {
    assert.ok(e instanceof CallExecutionError, chain(e));
    assert.ok(e.walk((x) => x instanceof ExecutionRevertedError), chain(e));
    const wire = wireError(e);
    assert.ok(wire, chain(e));
    assert.equal(wire.code, 3);
    assert.equal(wire.data, REVERT_DATA);
    assert.match(e.shortMessage, /Execution reverted with reason: sluice: deterministic revert/);
    return true;
  });

  // the JSON-RPC error object through sluice is the node's, unchanged
  const params = [{ to: reverter, data: '0x' }, 'latest'];
  const direct = await rpc(node.url, 'eth_call', params).then(() => null, (e) => e.rpc);
  assert.equal(direct.code, 3);
  assert.equal(direct.data, REVERT_DATA);
  const r = await post(url, call('eth_call', params, 'rev'));
  assert.equal(r.status, 200);
  assert.deepEqual(r.json, { jsonrpc: '2.0', id: 'rev', error: direct });
  assert.equal(r.headers.get('x-sluice-endpoint'), 'anvil');
  assert.equal(r.headers.get('x-sluice-attempts'), '1');

  // and viem's raw request surfaces code 3 and the data
  await assert.rejects(client.request({ method: 'eth_call', params }), (e) => {
    assert.ok(e instanceof RpcRequestError, chain(e));
    assert.equal(e.code, 3);
    assert.equal(e.data, REVERT_DATA);
    assert.equal(e.details, `execution reverted: ${REASON}`);
    return true;
  });
  assert.equal(await spareCalls(), 0);
});

test('a revert without data, and an estimateGas revert, come through as reverts', async () => {
  const direct = await rpc(node.url, 'eth_call', [{ to: bare }, 'latest']).then(() => null, (e) => e.rpc);
  assert.equal(direct?.code, 3);
  await assert.rejects(client.call({ to: bare }), (e) => {
    assert.ok(e instanceof CallExecutionError, chain(e));
    assert.ok(e.walk((x) => x instanceof ExecutionRevertedError), chain(e));
    assert.equal(wireError(e)?.code, 3, chain(e));
    assert.equal(wireError(e).data, direct.data);
    assert.equal(wireError(e).details, direct.message);
    return true;
  });
  await assert.rejects(wallet.sendTransaction({ to: reverter, value: 0n }), (e) => {
    assert.ok(e instanceof TransactionExecutionError, chain(e));
    assert.ok(e.walk((x) => x instanceof ExecutionRevertedError), chain(e));
    assert.equal(wireError(e)?.code, 3, chain(e));
    assert.equal(wireError(e).data, REVERT_DATA);
    assert.match(e.shortMessage, /sluice: deterministic revert/);
    return true;
  });
  assert.equal(await rpc(node.url, 'eth_getTransactionCount', [DEV_ADDRESS, 'latest']), '0x2', 'nothing was sent');
  assert.equal(await spareCalls(), 0);
});

test('viem batch: a reverting member fails alone, the others in the batch succeed', async () => {
  const mark = sluice.accessLines().length;
  const results = await Promise.allSettled([
    batchClient.getBlockNumber(),
    batchClient.call({ to: reverter }),
    batchClient.getBalance({ address: DEV_ADDRESS }),
    batchClient.call({ to: bare }),
    batchClient.getChainId(),
  ]);
  assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled', 'rejected', 'fulfilled']);
  assert.equal(results[0].value, 2n);
  assert.equal(results[4].value, CHAIN_ID);
  assert.ok(results[1].reason instanceof CallExecutionError, chain(results[1].reason));
  assert.equal(wireError(results[1].reason)?.data, REVERT_DATA, chain(results[1].reason));
  assert.ok(results[3].reason instanceof CallExecutionError, chain(results[3].reason));
  assert.ok(results[3].reason.walk((x) => x instanceof ExecutionRevertedError), chain(results[3].reason));

  const line = await waitFor(() => sluice.accessLines().slice(mark).find((l) => l.calls > 1), { timeoutMs: 3000, what: 'the batch in the access log' });
  assert.equal(line.calls, 5, JSON.stringify(line));
  assert.deepEqual(line.upstream.map((u) => u.endpoint), ['anvil'], JSON.stringify(line));
  assert.equal(await spareCalls(), 0);
});
