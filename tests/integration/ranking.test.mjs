// The ranked pool: probes measure latency and head; a slow endpoint is
// demoted and promoted back; a lagging one is excluded; writes are idempotent
// ("already known" is a success with the transaction's hash); confirmation
// polls follow the endpoint that accepted the transaction.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { keccak256 } from 'viem';
import { startFake, startSluice, post, call, sleep, waitFor, adminGet } from '../lib/harness.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const RAW_TX = '0x02f86b827a6980843b9aca00847735940082520894000000000000000000000000000000000000dead80c080a0aa';
const FAST = 'ranking: { probe_interval_ms: 200, switch_after_ms: 1000 }';

async function endpointsView(s) {
  return Object.fromEntries((await adminGet(s, '/admin/endpoints')).json.map((e) => [e.id, e]));
}

test('a slow endpoint is demoted within seconds and promoted back when it recovers', async () => {
  const a = await startFake({ name: 'a' }), b = await startFake({ name: 'b' });
  started.push(a, b);
  await b.setMode('slow', { delay_ms: 60 }); // b is the slower, steady alternative
  // the ranking by latency, observed through X-Sluice-Endpoint: hedged reads
  // would show b's answers before the ranking moves (hedge.test.mjs tests those)
  // eth_chainId's route is watched: a cache hit has none
  const s = await startSluice({ cache: false, workers: 2, networks: { eth: { lines: [FAST, 'hedge: { enabled: false }'], endpoints: [{ id: 'a', url: a.url }, { id: 'b', url: b.url }] } } });
  started.push(s);
  await sleep(800);
  assert.equal((await post(s.url('eth'), call('eth_chainId'))).headers.get('x-sluice-endpoint'), 'a');

  await a.setMode('slow', { delay_ms: 400 });
  const t0 = Date.now();
  await waitFor(async () => (await post(s.url('eth'), call('eth_chainId'))).headers.get('x-sluice-endpoint') === 'b',
    { timeoutMs: 8000, intervalMs: 100, what: 'a demoted' });
  const demotedAfter = Date.now() - t0;
  assert.ok(demotedAfter < 6000, `demoted after ${demotedAfter} ms`);
  // the admin view shows the ranking a worker flushed last (every ~100 ms):
  // the other worker may not have moved b up yet when this one answered
  const v = await waitFor(async () => { const x = await endpointsView(s); return x.b.position === 1 && x; },
    { timeoutMs: 3000, what: 'b first in /admin/endpoints' });
  assert.ok(v.a.score.latency_ms > v.b.score.latency_ms, JSON.stringify(v.a.score));

  await a.setMode('ok');
  await waitFor(async () => (await post(s.url('eth'), call('eth_chainId'))).headers.get('x-sluice-endpoint') === 'a',
    { timeoutMs: 10000, intervalMs: 100, what: 'a promoted back' });
});

test('a lagging endpoint (old head) is excluded from the plan', async () => {
  const a = await startFake({ name: 'a' }), b = await startFake({ name: 'b' });
  started.push(a, b);
  await a.setMode('lag', { behind: 100 });
  // eth_chainId's route and a's calls are watched: a cache hit has neither
  const s = await startSluice({ cache: false, workers: 2, networks: { eth: { lines: [FAST], endpoints: [{ id: 'a', url: a.url }, { id: 'b', url: b.url }] } } });
  started.push(s);
  await waitFor(async () => (await endpointsView(s)).a.score?.excluded === 'far behind the head',
    { timeoutMs: 5000, what: 'a excluded' });
  const v = await endpointsView(s);
  assert.ok(v.a.score.lag >= 99, `lag ${v.a.score.lag}`);
  assert.equal(v.b.score.lag, 0);
  await a.reset();
  for (let i = 0; i < 10; i++) assert.equal((await post(s.url('eth'), call('eth_chainId'))).headers.get('x-sluice-endpoint'), 'b');
  assert.equal((await a.stats()).methods.eth_chainId ?? 0, 0, 'no client call reached the lagging endpoint');
});

test('"already known" from the next endpoint is a success carrying the transaction hash', async () => {
  const a = await startFake({ name: 'a' }), b = await startFake({ name: 'b' });
  started.push(a, b);
  const s = await startSluice({ workers: 1, networks: { eth: { lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: [{ id: 'a', url: a.url }, { id: 'b', url: b.url }] } } });
  started.push(s);
  await a.setMode('http429', { method: 'eth_sendRawTransaction' });
  await b.setMode('rpc_error', { code: -32000, message: 'already known', method: 'eth_sendRawTransaction' });
  const r = await post(s.url('eth'), call('eth_sendRawTransaction', [RAW_TX], 'tx1'));
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.id, 'tx1');
  assert.equal(r.json.error, undefined);
  assert.equal(r.json.result, keccak256(RAW_TX));
  assert.equal(r.headers.get('x-sluice-endpoint'), 'b');
});

test('"already known" for a read is not rewritten', async () => {
  const a = await startFake({ name: 'a' });
  started.push(a);
  const s = await startSluice({ workers: 1, networks: { eth: { lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: [{ id: 'a', url: a.url }] } } });
  started.push(s);
  await a.setMode('rpc_error', { code: -32000, message: 'already known' });
  const r = await post(s.url('eth'), call('eth_call', [{ to: '0x0000000000000000000000000000000000000001' }, 'latest'], 3));
  assert.equal(r.json.error.message, 'already known');
});

test('"nonce too low" for a transaction the node does not have stays an error (checked by hash)', async () => {
  const a = await startFake({ name: 'a' });
  started.push(a);
  const s = await startSluice({ workers: 1, networks: { eth: { lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: [{ id: 'a', url: a.url }] } } });
  started.push(s);
  await a.setMode('rpc_error', { code: -32000, message: 'nonce too low: next nonce 5, tx nonce 1', method: 'eth_sendRawTransaction' });
  const r = await post(s.url('eth'), call('eth_sendRawTransaction', [RAW_TX], 4));
  assert.equal(r.json.error.code, -32000);
  assert.match(r.json.error.message, /nonce too low/);
  const st = await a.stats();
  assert.equal(st.methods.eth_getTransactionByHash, 1, 'sluice asked the node by hash');
  assert.equal(r.headers.get('x-sluice-attempts'), '2');
});

test('pinning: a receipt poll right after a send goes to the accepting endpoint, then anywhere', async () => {
  const a = await startFake({ name: 'a' }), b = await startFake({ name: 'b' });
  started.push(a, b);
  await b.setMode('slow', { delay_ms: 60 }); // a is clearly the better endpoint
  const s = await startSluice({
    cache: false, // eth_chainId's route is watched: a cache hit has none
    workers: 2,
    networks: { eth: { lines: [FAST, 'pin: { window_ms: 3000 }'], endpoints: [{ id: 'a', url: a.url }, { id: 'b', url: b.url }] } },
  });
  started.push(s);
  await a.setMode('http429', { method: 'eth_sendRawTransaction', retry_after: 1, count: 1 });
  const sent = await post(s.url('eth'), call('eth_sendRawTransaction', [RAW_TX], 1));
  assert.equal(sent.headers.get('x-sluice-endpoint'), 'b');
  const hash = sent.json.result;
  const t0 = Date.now();
  // a's rate-limit mark runs out and, being faster, a becomes the primary again
  await waitFor(async () => (await post(s.url('eth'), call('eth_chainId'))).headers.get('x-sluice-endpoint') === 'a',
    { timeoutMs: 2500, intervalMs: 100, what: 'a primary again' });
  for (const m of ['eth_getTransactionReceipt', 'eth_getTransactionByHash']) {
    const r = await post(s.url('eth'), call(m, [hash.toUpperCase().replace('0X', '0x')], 2));
    assert.equal(r.headers.get('x-sluice-endpoint'), 'b', `${m} follows the pin`);
    assert.notEqual(r.json.result, null, 'b knows the transaction');
  }
  await sleep(Math.max(0, 3100 - (Date.now() - t0))); // the pin expires
  const aBefore = (await a.stats()).methods.eth_getTransactionReceipt ?? 0;
  const later = await post(s.url('eth'), call('eth_getTransactionReceipt', [hash], 3));
  assert.equal((await a.stats()).methods.eth_getTransactionReceipt ?? 0, aBefore + 1, 'the pin expired: a is asked first');
  // a never saw the transaction: its null moves the lookup on (dispatch: not_null) to b, which has it
  assert.equal(later.headers.get('x-sluice-endpoint'), 'b');
  assert.notEqual(later.json.result, null);
});
