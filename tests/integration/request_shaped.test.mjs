// Request-shaped failures (policy/shape.h): a call whose answer is too
// large, a heavy call that outlives the attempt deadline, a call the
// upstreams cannot read (answered at id null) fails the same way at two
// endpoints. That is the request's doing: no breaker failure, no score
// penalty, no third endpoint, and a precise error. Before, each such call
// failed over to every endpoint and each recorded a breaker failure, so a
// handful of them took the whole network down for everyone.
import { test, before, after, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { startFake, startSluice, post, call, sleep, adminGet, events } from '../lib/harness.mjs';

let a, b, c, sluice;
const TIMEOUTS = 'timeouts: { connect_ms: 500, first_byte_ms: 400, attempt_ms: 600, request_ms: 5000 }';
// config order, one attempt per endpoint, a breaker that 5 failures in a row open
const LINES = [TIMEOUTS, 'ranking: { probe_interval_ms: 0 }', 'max_attempts: 3',
  'breaker: { consecutive: 5, cooldown_ms: 60000 }'];
const LOGS = ['eth_getLogs', [{ fromBlock: '0x0', toBlock: 'latest' }]];

before(async () => {
  [a, b, c] = await Promise.all(['a', 'b', 'c'].map((name) => startFake({ name })));
});
after(async () => { await Promise.all([a, b, c].map((f) => f.stop())); });

beforeEach(async () => {
  for (const f of [a, b, c]) { await f.setMode('ok'); await f.reset(); }
  sluice = await startSluice({
    workers: 1,
    server: { max_response_bytes: 1048576 },
    networks: { eth: { lines: LINES, endpoints: [{ id: 'a', url: a.url }, { id: 'b', url: b.url }, { id: 'c', url: c.url }] } },
  });
});
afterEach(async () => { await sluice.stop(); });

async function view() {
  await sleep(250); // counters are flushed every ~100 ms
  const v = (await adminGet(sluice, '/admin/endpoints')).json;
  return Object.fromEntries(v.map((e) => [e.id, e]));
}

// After the storm every endpoint is still usable and a plain call still works.
async function assertNetworkHealthy() {
  const evs = await events(sluice);
  assert.deepEqual(evs.filter((e) => e.kind === 'breaker_opened'), [], 'no breaker opened');
  const r = await post(sluice.url(), call('eth_chainId', [], 99));
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.result, '0x1');
  const v = await view();
  for (const id of ['a', 'b', 'c']) assert.equal(v[id].breaker.state, 'closed', id);
  return v;
}

test('an answer over max_response_bytes at two endpoints: too_large naming the limit, nobody blamed', async () => {
  for (const f of [a, b, c]) await f.setMode('huge', { size: 2 * 1024 * 1024, method: 'eth_getLogs' });
  for (let i = 0; i < 8; i++) {
    const r = await post(sluice.url(), call(...LOGS, i));
    assert.equal(r.status, 502, r.text);
    assert.equal(r.json.id, i);
    assert.equal(r.json.error.data.outcome, 'too_large');
    assert.equal(r.json.error.data.limit_bytes, 1048576);
    assert.match(r.json.error.message, /server\.max_response_bytes \(1048576 bytes\)/);
    assert.deepEqual(r.json.error.data.attempts.map((x) => x.endpoint), ['a', 'b'], 'two endpoints, not the plan');
  }
  assert.equal((await c.stats()).requests, 0, 'the third endpoint was never asked');
  const v = await assertNetworkHealthy();
  assert.equal(v.a.outcomes.too_large, 8);
  assert.equal(v.b.outcomes.too_large, 8);
  assert.equal(v.a.outcomes.malformed, 0);
  assert.equal(v.a.score.error_ratio, 0, 'no score penalty');
});

test('too large at the first endpoint only: that endpoint is blamed, the next answers', async () => {
  await a.setMode('huge', { size: 2 * 1024 * 1024 });
  const r = await post(sluice.url(), call(...LOGS, 1));
  assert.equal(r.status, 200, r.text);
  assert.equal(r.headers.get('x-sluice-endpoint'), 'b');
  const v = await view();
  assert.equal(v.a.outcomes.malformed, 1, 'the held failure counted against a');
  assert.equal(v.a.outcomes.too_large, 0);
});

test('a heavy call slower than attempt_ms at two endpoints: slow_call, nobody blamed', async () => {
  for (const f of [a, b, c]) await f.setMode('slow', { delay_ms: 1500, method: 'eth_getLogs' });
  for (let i = 0; i < 6; i++) {
    const r = await post(sluice.url(), call(...LOGS, i));
    assert.equal(r.status, 504, r.text);
    assert.equal(r.json.error.data.outcome, 'slow_call');
    assert.deepEqual(r.json.error.data.attempts.map((x) => x.endpoint), ['a', 'b']);
  }
  assert.equal((await c.stats()).requests, 0, 'the third endpoint was never asked');
  const v = await assertNetworkHealthy();
  assert.equal(v.a.outcomes.slow_call, 6);
  assert.equal(v.a.outcomes.timeout, 0);
});

test('a cheap call timing out everywhere is still the endpoints\' fault', async () => {
  for (const f of [a, b, c]) await f.setMode('hang');
  for (let i = 0; i < 2; i++) {
    const r = await post(sluice.url(), call('eth_blockNumber', [], i));
    assert.equal(r.status, 504);
    assert.equal(r.json.error.data.outcome, 'timeout');
  }
  const v = await view();
  assert.ok(v.a.outcomes.timeout >= 2 && v.c.outcomes.timeout >= 1, JSON.stringify(v.a.outcomes));
});

test('a call two upstreams answer at id null: -32600 id_unanswerable with the client\'s id, nobody blamed', async () => {
  for (const f of [a, b, c]) await f.setMode('rpc_error', { code: -32600, message: 'Invalid request', id: null, method: 'eth_call' });
  for (let i = 0; i < 8; i++) {
    const r = await post(sluice.url(), call('eth_call', [{ to: '0x0000000000000000000000000000000000000001' }, 'latest'], 40 + i));
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.id, 40 + i);
    assert.equal(r.json.error.code, -32600);
    assert.equal(r.json.error.data.outcome, 'id_unanswerable');
  }
  assert.equal((await c.stats()).requests, 0);
  const v = await assertNetworkHealthy();
  assert.equal(v.a.outcomes.id_unanswerable, 8);
});

test('another error at id null (an outage) is the endpoints\' wrong answer, not the request\'s', async () => {
  for (const f of [a, b, c]) await f.setMode('rpc_error', { code: -32603, message: 'no backend available', id: null, method: 'eth_call' });
  const r = await post(sluice.url(), call('eth_call', [{ to: '0x0000000000000000000000000000000000000001' }, 'latest'], 5));
  assert.equal(r.status, 502, r.text);
  assert.equal(r.json.error.data.outcome, 'upstream_error');
  assert.deepEqual(r.json.error.data.attempts.map((x) => x.endpoint), ['a', 'b', 'c'], 'the whole plan');
  const v = await view();
  for (const id of ['a', 'b', 'c']) assert.equal(v[id].outcomes.malformed, 1, id);
});

test('id 1.5 to jsonrpc-core upstreams (they answer it at id null): answered, with id 1.5, nobody blamed', async () => {
  for (const f of [a, b, c]) await f.setMode('strict_id');
  const upstream = { 'cache-control': 'no-cache' }; // each id makes the trip: a cache hit would answer eth_chainId at once
  for (const id of ['1.5', '1e3', '-7', '9007199254740993', '"caf\\u00e9"']) {
    for (let i = 0; i < 3; i++) {
      const r = await post(sluice.url(), `{"jsonrpc":"2.0","id":${id},"method":"eth_chainId","params":[]}`, upstream);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.text, `{"jsonrpc":"2.0","id":${id},"result":"0x1"}`, 'the client\'s id, byte for byte');
      assert.equal(r.headers.get('x-sluice-attempts'), '1');
    }
  }
  // a portable id still goes up as the client wrote it (and comes back byte for byte)
  const r = await post(sluice.url(), '{"jsonrpc":"2.0","id":12,"method":"eth_chainId","params":[]}', upstream);
  assert.equal(r.text, '{"jsonrpc":"2.0","id":12,"result":"0x1"}');
  const v = await assertNetworkHealthy();
  assert.equal(v.a.outcomes.malformed, 0);
  assert.equal((await b.stats()).requests, 0, 'never failed over');
});

// A provider that gives up on a heavy call itself (geth's -32002 "request
// timed out", "execution aborted (timeout = 5s)", its gateway's 504) says the
// same as our own attempt deadline: slow_call once two endpoints agree. Before,
// each such answer was a breaker failure at every endpoint tried, so a
// handful of them in a row opened every breaker on a quiet network.
const GAVE_UP = [
  ['rpc_error', { code: -32002, message: 'request timed out' }],
  ['rpc_error', { code: -32000, message: 'execution aborted (timeout = 5s)' }],
  ['http504', {}],
  ['http502', {}],
];

test('a heavy call the providers give up on for time: slow_call, no breaker opened, cheap calls still served', async () => {
  const n = 3; // per answer shape: 12 calls, breakers open after 5 failures in a row
  let id = 0;
  for (const [mode, opts] of GAVE_UP) {
    for (const f of [a, b, c]) await f.setMode(mode, { ...opts, method: 'eth_getLogs' });
    for (let i = 0; i < n; i++) {
      const r = await post(sluice.url(), call(...LOGS, ++id));
      assert.equal(r.status, 504, `${mode} ${opts.message ?? ''}: ${r.text}`);
      assert.equal(r.json.id, id);
      assert.equal(r.json.error.code, -32603);
      assert.equal(r.json.error.data.outcome, 'slow_call');
      assert.match(r.json.error.message, /provider gave up on it for time/);
      assert.deepEqual(r.json.error.data.attempts.map((x) => x.endpoint), ['a', 'b'], 'two endpoints, not the plan');
    }
  }
  assert.equal((await c.stats()).requests, 0, 'the third endpoint was never asked');
  const v = await assertNetworkHealthy();
  for (const id of ['a', 'b']) {
    assert.equal(v[id].outcomes.slow_call, n * GAVE_UP.length, id);
    assert.equal(v[id].outcomes.http_error, 0, id);
    assert.equal(v[id].score.error_ratio, 0, `${id}: no score penalty`);
  }
});

test('eth_feeHistory with reward percentiles is heavy (slow_call); over a few blocks without them it is cheap (the endpoints\' fault)', async () => {
  for (const f of [a, b, c]) await f.setMode('http504', { method: 'eth_feeHistory' });
  for (let i = 0; i < 6; i++) {
    const r = await post(sluice.url(), call('eth_feeHistory', ['0x5', 'latest', [25, 75]], i));
    assert.equal(r.status, 504, r.text);
    assert.equal(r.json.error.data.outcome, 'slow_call');
  }
  let v = await view();
  for (const id of ['a', 'b', 'c']) assert.equal(v[id].breaker.state, 'closed', id);
  // the wallet's call: a few headers, no percentiles; a 504 on it is the provider's failure
  const r = await post(sluice.url(), call('eth_feeHistory', ['0x4', 'latest', []], 7));
  assert.equal(r.status, 502, r.text);
  assert.equal(r.json.error.data.outcome, 'upstream_error');
  assert.deepEqual(r.json.error.data.attempts.map((x) => x.endpoint), ['a', 'b', 'c'], 'the whole plan');
  v = await view();
  for (const id of ['a', 'b', 'c']) assert.equal(v[id].outcomes.http_error, 1, id);
});

test('a cheap call the providers answer with 504 or "request timed out" is still their failure', async () => {
  for (const [mode, opts] of [['http504', {}], ['rpc_error', { code: -32002, message: 'request timed out' }]]) {
    for (const f of [a, b, c]) { await f.setMode(mode, { ...opts, method: 'eth_blockNumber' }); await f.reset(); }
    const r = await post(sluice.url(), call('eth_blockNumber', [], 1));
    assert.equal(r.status, 502, r.text);
    assert.equal(r.json.error.data.outcome, 'upstream_error');
    assert.deepEqual(r.json.error.data.attempts.map((x) => x.endpoint), ['a', 'b', 'c'], 'the whole plan');
  }
  const v = await view();
  for (const id of ['a', 'b', 'c']) {
    assert.equal(v[id].outcomes.http_error, 2, id);
    assert.equal(v[id].outcomes.slow_call, 0, id);
  }
});
