// Methods no table knows (policy/method.c). A name that says it changes state
// (mev_submitBundle, eth_cancelBundle: a send, cancel, submit, register,
// unregister or request verb opening a segment) is a write: never sent to a
// second endpoint once it may have reached the first. And no unknown method is
// coalesced: two identical calls in flight may each change state, so each
// goes upstream. Before, both were reads: re-sent after a reset, and shared.
import { test, before, after, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { startFake, startSluice, post, call } from '../lib/harness.mjs';

let a, b, sluice;
const LINES = ['ranking: { probe_interval_ms: 0 }', 'max_attempts: 2',
  'timeouts: { connect_ms: 500, first_byte_ms: 2000, attempt_ms: 3000, request_ms: 8000 }'];

before(async () => { [a, b] = await Promise.all(['a', 'b'].map((name) => startFake({ name }))); });
after(async () => { await Promise.all([a, b].map((f) => f.stop())); });

beforeEach(async () => {
  for (const f of [a, b]) { await f.setMode('ok'); await f.reset(); }
  sluice = await startSluice({
    workers: 1, // coalescing is per worker
    networks: { eth: { lines: LINES, endpoints: [{ id: 'a', url: a.url }, { id: 'b', url: b.url }] } },
  });
});
afterEach(async () => { await sluice.stop(); });

const BUNDLE = [{ txs: ['0x02f8'], blockNumber: '0x10' }];

for (const method of ['mev_submitBundle', 'eth_cancelBundle']) {
  test(`${method} (unknown, changes state) is not re-sent after the connection reset under it`, async () => {
    await a.setMode('reset', { method });
    const r = await post(sluice.url(), call(method, BUNDLE, 7));
    assert.equal(r.status, 502, r.text);
    assert.equal(r.json.id, 7);
    assert.equal(r.json.error.data.outcome, 'ambiguous_write');
    assert.deepEqual(r.json.error.data.attempts.map((x) => x.endpoint), ['a']);
    assert.equal((await a.stats()).methods[method], 1, 'sent once');
    assert.equal((await b.stats()).methods[method] ?? 0, 0, 'never sent to a second endpoint');
  });
}

// Four identical calls at once, each held 400 ms upstream: a known read is
// shared (the control: the test can see coalescing), an unknown method is not.
async function burst(method, params) {
  const rs = await Promise.all([1, 2, 3, 4].map((id) => post(sluice.url(), call(method, params, id))));
  for (const r of rs) assert.equal(r.status, 200, r.text);
  return rs;
}

test('identical unknown-method calls in flight each reach the upstream (not coalesced)', async () => {
  for (const f of [a, b]) await f.setMode('slow', { delay_ms: 400 });
  const known = await burst('eth_getBalance', ['0x0000000000000000000000000000000000000001', 'latest']);
  assert.equal((await a.stats()).methods.eth_getBalance, 1, 'control: a known read is coalesced');
  assert.ok(known.some((r) => r.headers.get('x-sluice-coalesced') === '1'));

  const params = [{ key: 'same' }];
  for (const method of ['eth_customRead', 'mev_submitBundle']) {
    const rs = await burst(method, params);
    for (const r of rs) {
      assert.equal(r.headers.get('x-sluice-coalesced'), null, `${method}: answered from its own call`);
      assert.equal(r.json.error.code, -32601, r.text); // the fake does not know it either
    }
    assert.equal((await a.stats()).methods[method], 4, `${method}: each call went upstream`);
  }
});
