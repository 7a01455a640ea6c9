// Learned capabilities (issue 35): an endpoint that answers "method not
// found" for a method is put last in that method's plans for
// capability_ttl_ms, then asked again; events say when, /admin/endpoints
// shows what is remembered.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startFake, startSluice, post, call, sleep, waitFor, events, adminGet } from '../lib/harness.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const ADDR = '0x' + '33'.repeat(20);
const NOT_FOUND = { code: -32601, message: 'the method eth_getBalance does not exist/is not available', method: 'eth_getBalance' };

async function balances(f) {
  return (await f.stats()).methods.eth_getBalance ?? 0;
}

test('an endpoint answering "method not found" gets none of the next 20 such calls, and is asked again after the TTL', async () => {
  const [a, b] = await Promise.all(['a', 'b'].map((name) => startFake({ name })));
  started.push(a, b);
  const s = await startSluice({
    cache: false, // the fakes must see every read: which endpoint is asked is the test
    workers: 1,
    networks: { eth: {
      lines: ['ranking: { probe_interval_ms: 0 }', 'hedge: { enabled: false }', 'capability_ttl_ms: 3000'],
      endpoints: [{ id: 'a', url: a.url }, { id: 'b', url: b.url }] } },
  });
  started.push(s);
  await a.setMode('rpc_error', NOT_FOUND);
  // b fails the first call once, so a is asked whichever ranks first
  await b.setMode('http503', { method: 'eth_getBalance', count: 1 });
  const first = await post(s.url('eth'), call('eth_getBalance', [ADDR, 'latest'], 1));
  assert.equal(first.status, 200, first.text);
  assert.equal(await balances(a), 1, 'a was asked once');
  await waitFor(async () => (await events(s)).some((e) => e.kind === 'endpoint_capability_learned' && e.endpoint === 'a'),
    { what: 'endpoint_capability_learned for a' });
  const ev = (await events(s)).find((e) => e.kind === 'endpoint_capability_learned');
  assert.match(ev.reason, /eth_getBalance/);
  const view = (await adminGet(s, '/admin/endpoints')).json;
  const ea = view.find((e) => e.id === 'a');
  assert.deepEqual(ea.learned, { methods: ['eth_getBalance'], depth: null }, JSON.stringify(ea.learned));
  assert.deepEqual(view.find((e) => e.id === 'b').learned, { methods: [], depth: null });

  for (let i = 0; i < 20; i++) {
    const r = await post(s.url('eth'), call('eth_getBalance', [ADDR, 'latest'], 10 + i));
    assert.equal(r.status, 200, r.text);
    assert.ok(r.json.result, r.text);
    assert.equal(r.headers.get('x-sluice-endpoint'), 'b');
  }
  assert.equal(await balances(a), 1, 'a got none of the next 20 calls');
  // after the TTL a is asked again (b fails once more, so a is reached whatever the ranking)
  // (a serves the method now: it is not learned again)
  await sleep(3300);
  await a.setMode('ok');
  await b.setMode('http503', { method: 'eth_getBalance', count: 1 });
  const again = await post(s.url('eth'), call('eth_getBalance', [ADDR, 'latest'], 99));
  assert.equal(again.status, 200, again.text);
  assert.equal(await balances(a), 2, 'a was asked again after the TTL');
  await waitFor(async () => (await events(s)).some((e) => e.kind === 'endpoint_capability_forgotten' && e.endpoint === 'a'),
    { what: 'endpoint_capability_forgotten for a' });
  assert.deepEqual((await adminGet(s, '/admin/endpoints')).json.find((e) => e.id === 'a').learned.methods, []);
});

test('capability_ttl_ms: 0 learns nothing: the endpoint is asked as ranked', async () => {
  const [a, b] = await Promise.all(['a', 'b'].map((name) => startFake({ name })));
  started.push(a, b);
  const s = await startSluice({
    cache: false, // the fakes must see every read: which endpoint is asked is the test
    workers: 1,
    networks: { eth: {
      lines: ['ranking: { probe_interval_ms: 0 }', 'hedge: { enabled: false }', 'capability_ttl_ms: 0'],
      endpoints: [{ id: 'a', url: a.url }, { id: 'b', url: b.url }] } },
  });
  started.push(s);
  await a.setMode('rpc_error', NOT_FOUND);
  for (let i = 0; i < 6; i++) {
    await b.setMode('http503', { method: 'eth_getBalance', count: 1 });
    await post(s.url('eth'), call('eth_getBalance', [ADDR, 'latest'], i));
  }
  assert.equal(await balances(a), 6, 'a was asked every time');
  assert.ok(!(await events(s)).some((e) => e.kind === 'endpoint_capability_learned'));
});
