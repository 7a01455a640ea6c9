// The ranking's stability terms from outside (policy/score.h, pool/pool_rank.c):
// the error-ratio and rate-limit terms of the cost, the exclusion past
// ranking.max_error_pct (70%), and the stickiness (a challenger must cost
// ranking.hysteresis_pct (30%) less for switch_after_ms (5 s); a demoted primary
// gives way at once). Each test watches where uncached reads (eth_blockNumber)
// go, on sluice's defaults otherwise (the cache on), with one worker (the error
// and rate-limit windows are each worker's own) and the breaker held out of the
// way (it cannot open during a test, so only the ranking can move traffic).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startFake, startSluice, post, call, sleep, waitFor, adminGet, events, metricValue } from '../lib/harness.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const ADDR = '0x000000000000000000000000000000000000dEaD';
const HOLD_BREAKER = 'breaker: { consecutive: 0, failure_count: 100000, min_calls: 100000 }';

// a (fast) and b (slowed by bDelayMs on every call, probes included) behind one sluice
async function pair(bDelayMs, lines) {
  const a = await startFake({ name: 'a' }), b = await startFake({ name: 'b' });
  started.push(a, b);
  await b.setMode('slow', { delay_ms: bDelayMs });
  const s = await startSluice({ workers: 1, networks: { eth: {
    lines: ['hedge: { enabled: false }', HOLD_BREAKER, ...lines],
    endpoints: [{ id: 'a', url: a.url }, { id: 'b', url: b.url }] } } });
  started.push(s);
  await waitFor(async () => await served(s) === 'a', { timeoutMs: 10000, intervalMs: 100, what: 'a first (the faster)' });
  return { a, b, s };
}

async function served(s, method = 'eth_blockNumber', params = []) {
  const r = await post(s.url('eth'), call(method, params));
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.error, undefined, r.text);
  return r.headers.get('x-sluice-endpoint');
}

async function view(s) {
  return Object.fromEntries((await adminGet(s, '/admin/endpoints')).json.map((e) => [e.id, e]));
}

test('the error-ratio term: an endpoint failing some calls costs more and loses first place (exclusion out of reach)', async () => {
  // w_error raised so the term outweighs b's 10 ms whatever the loopback latency; max_error_pct 100 excludes nothing
  const { a, s } = await pair(10, ['ranking: { probe_interval_ms: 200, switch_after_ms: 0, w_error: 50, max_error_pct: 100 }']);
  for (let i = 0; i < 10; i++) assert.equal(await served(s), 'a');
  await a.setMode('http500', { method: 'eth_getBalance' });
  // the first fails on a and b answers; the term then puts b first (switch_after_ms 0)
  for (let i = 0; i < 10; i++) assert.equal(await served(s, 'eth_getBalance', [ADDR, 'latest']), 'b');
  await a.setMode('ok');
  await waitFor(async () => await served(s) === 'b', { timeoutMs: 5000, intervalMs: 100, what: 'b first' });
  const v = await view(s);
  assert.ok(v.a.score.error_ratio > 0, JSON.stringify(v.a.score));
  assert.equal(v.a.score.excluded, undefined, 'not excluded: the term moved it');
  assert.equal(v.a.breaker.state, 'closed');
  assert.equal(v.a.demoted, null);
  assert.ok(v.a.score.latency_ms < v.b.score.latency_ms, 'a is still the faster');
  for (let i = 0; i < 5; i++) assert.equal(await served(s), 'b');
});

test('the rate-limit term: an endpoint refusing calls costs more once its marks run out', async () => {
  const { a, s } = await pair(10, ['ranking: { probe_interval_ms: 200, switch_after_ms: 0, w_rate_limit: 60 }']);
  for (let i = 0; i < 10; i++) assert.equal(await served(s), 'a');
  // Infura's -32005 with a 50 ms backoff: each refusal marks a for 50 ms only
  await a.setMode('rpc_error', { code: -32005, message: 'rate limited', data: { backoff_seconds: 0.05 }, method: 'eth_getBalance' });
  for (let i = 0; i < 10; i++) {
    assert.equal(await served(s, 'eth_getBalance', [ADDR, 'latest']), 'b');
    await sleep(120); // the mark runs out: the next call tries a again
  }
  await a.setMode('ok');
  await sleep(300); // no mark left: only the score keeps a behind
  const v = await view(s);
  assert.ok(v.a.score.rate_limit_ratio > 0, JSON.stringify(v.a.score));
  assert.equal(v.a.score.error_ratio, 0, 'a refusal is no failure');
  assert.ok(v.a.score.latency_ms < v.b.score.latency_ms, 'a is still the faster');
  assert.equal(v.b.position, 1, JSON.stringify(v.a.score));
  for (let i = 0; i < 5; i++) assert.equal(await served(s), 'b');
});

test('an endpoint failing more than max_error_pct (70%) of its calls is excluded; below it is not', async () => {
  // w_error 0: the cost ignores errors, so only the exclusion can move traffic
  const { a, s } = await pair(10, ['ranking: { probe_interval_ms: 1000, switch_after_ms: 0, w_error: 0 }']);
  for (let i = 0; i < 10; i++) assert.equal(await served(s), 'a');
  await a.setMode('http500', { method: 'eth_getBalance' });
  let below = 0;
  for (let i = 0; i < 100; i++) {
    assert.equal(await served(s, 'eth_getBalance', [ADDR, 'latest']), 'b');
    await sleep(150); // the tick publishes the score
    const v = await view(s);
    const ratio = v.a.score.error_ratio;
    if (ratio > 0.72) break;
    if (ratio >= 0.4 && ratio <= 0.68) { // between: failing, but not most calls
      assert.equal(v.a.score.excluded, undefined, `excluded at ${ratio}`);
      assert.equal(v.a.position, 1, `at ${ratio}`);
      below++;
    }
  }
  assert.ok(below >= 2, 'the ratio was seen below the bound');
  await a.setMode('ok');
  const v = await waitFor(async () => { const x = await view(s); return x.a.score.excluded && x; },
    { timeoutMs: 3000, what: 'a excluded' });
  assert.equal(v.a.score.excluded, 'error ratio too high');
  assert.ok(v.a.score.error_ratio > 0.7, JSON.stringify(v.a.score));
  assert.equal(v.a.breaker.state, 'closed');
  for (let i = 0; i < 5; i++) assert.equal(await served(s), 'b');
});

test('stickiness: a challenger 20% cheaper never takes over; one clearly (30%) cheaper only after 5 s', async () => {
  // delays large beside the loopback's jitter on a busy machine: b 100 ms, a 120 ms (b ~17% cheaper)
  const { a, s } = await pair(100, ['ranking: { probe_interval_ms: 200 }']); // hysteresis_pct 30, switch_after_ms 5000
  await a.setMode('slow', { delay_ms: 120 });
  await sleep(1500); // the latency averages follow
  let v, samples = 0, cheaper = 0;
  for (const until = Date.now() + 7000; Date.now() < until; await sleep(200)) {
    assert.equal(await served(s), 'a');
    v = await view(s);
    samples++;
    cheaper += v.b.score.cost < v.a.score.cost;
  }
  assert.ok(cheaper >= samples / 2, `b cheaper in ${cheaper} of ${samples} samples`);

  await a.setMode('slow', { delay_ms: 300 }); // b now costs ~65% less
  await waitFor(async () => { v = await view(s); return v.b.score.cost < v.a.score.cost * 0.7; },
    { timeoutMs: 5000, intervalMs: 50, what: 'b clearly cheaper' });
  const clear = Date.now();
  let switched;
  while (Date.now() - clear < 12000) {
    if (await served(s) === 'b') { switched = Date.now(); break; }
    await sleep(50);
  }
  assert.ok(switched, 'b took over');
  const took = switched - clear;
  assert.ok(took >= 4500 && took <= 9000, `b took over ${took} ms after it was clearly cheaper`);
});

test('a demoted primary gives way at once, stickiness or not; the endpoint_demoted event and metrics say so', async () => {
  const { a, s } = await pair(10, ['ranking: { probe_interval_ms: 200, switch_after_ms: 60000 }',
    'timeouts: { attempt_ms: 500, request_ms: 5000 }']);
  await a.setMode('hang', { method: 'eth_getBalance' }); // a cheap read times out there
  assert.equal(await served(s, 'eth_getBalance', [ADDR, 'latest']), 'b');
  const t0 = Date.now();
  await waitFor(async () => await served(s) === 'b', { timeoutMs: 2000, intervalMs: 20, what: 'b first' });
  assert.ok(Date.now() - t0 < 1000, `b first ${Date.now() - t0} ms after the timeout`);
  const v = await view(s);
  assert.equal(v.a.demoted?.reason, 'timed out', JSON.stringify(v.a));
  assert.equal(v.a.breaker.state, 'closed');
  assert.ok(v.a.score.cost < v.b.score.cost, 'a still scores better: only the demotion moved it');
  const ev = (await events(s)).filter((e) => e.kind === 'endpoint_demoted');
  assert.deepEqual(ev.map((e) => e.endpoint), ['a']);
  assert.equal((await events(s)).filter((e) => e.kind === 'breaker_opened').length, 0);
  await waitFor(async () => await metricValue(s, 'sluice_endpoint_demoted{network="eth",endpoint="a"}') === 1,
    { timeoutMs: 3000, what: 'sluice_endpoint_demoted 1' });
  assert.equal(await metricValue(s, 'sluice_endpoint_demoted{network="eth",endpoint="b"}'), 0);
  assert.equal(await metricValue(s, 'sluice_endpoint_demotions_total{network="eth",endpoint="a"}'), 1);
});
