// Backpressure: the level (ok when idle, elevated and critical under load
// against a slow provider with a small max_inflight), the shed order (low
// priority refused with 503 + Retry-After and -32005 scope "pressure", never a
// confirmation poll), one pressure_changed event per change across workers,
// GET /admin/networks and /metrics, the refusal-ratio and slow-settle
// triggers, and the capacity forecast from live rates.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { startFake, startSluice, post, postFresh, call, sleep, waitFor, adminGet, adminPost, events } from '../lib/harness.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const NOPROBE = 'ranking: { probe_interval_ms: 0 }';
const BAL = ['0x0000000000000000000000000000000000000001', 'latest'];
const rcpt = () => call('eth_getTransactionReceipt', ['0x' + randomBytes(32).toString('hex')], 1);
// a read of its own: identical reads in flight share one upstream call
// (coalescing), and the load here must hold one slot per call
const balance = () => call('eth_getBalance', ['0x' + randomBytes(20).toString('hex'), 'latest']);

const networkView = async (s, name = 'eth') => (await adminGet(s, '/admin/networks')).json.find((n) => n.network === name);
const pressureEvents = async (s) => (await events(s)).filter((e) => e.kind === 'pressure_changed');

// n loops, each sending make() on a fresh connection (spread over the
// workers) until stop() is called, and pacing as a scheduler should: a call
// shed under pressure waits its Retry-After.
const loads = [];
function load(url, n, make, { fresh = true } = {}) {
  let running = true;
  const statuses = [];
  const done = Promise.all(Array.from({ length: n }, async () => {
    while (running) {
      let r;
      try { r = await (fresh ? postFresh : post)(url, make()); } catch (e) { statuses.push({ error: String(e) }); break; }
      const scope = r.json?.error?.data?.scope;
      statuses.push({ status: r.status, scope, pressure: r.headers.get('x-sluice-pressure'), at: Date.now() });
      if (scope === 'pressure') await sleep(Number(r.headers.get('retry-after')) * 1000);
    }
  }));
  const l = { statuses, stop: async () => { running = false; await done; } };
  loads.push(l);
  return l;
}
after(async () => { await Promise.all(loads.map((l) => l.stop())); });

test('ok when idle, elevated then critical under load; low priority shed with 503 + Retry-After; no receipt poll refused; one event per change', async () => {
  const fake = await startFake({ name: 'slow', args: ['--mode', 'slow', '--delay-ms', '400'] });
  started.push(fake);
  // one worker, so the load the test makes is the depth sluice sees (the
  // next test spreads it over two)
  const s = await startSluice({
    workers: 1,
    // merge_window_ms 0: each receipt poll holds its own slot (merged, 14 polls are a few calls)
    networks: { eth: { lines: [NOPROBE, 'pressure: { hold_ms: 1000, merge_window_ms: 0 }'], endpoints: [{ id: 'slow', url: fake.url, max_inflight: 10 }] } },
  });
  started.push(s);

  // idle: ok, on the answer and in the admin view
  const idle = await post(s.url('eth'), call('eth_blockNumber'));
  assert.equal(idle.status, 200);
  assert.equal(idle.headers.get('x-sluice-pressure'), 'ok');
  // (the admin view sums the slots the workers flush every ~100 ms)
  let v = await waitFor(async () => { const x = await networkView(s); return x.depth === 0 && x; }, { what: 'depth 0' });
  assert.equal(v.level, 'ok');
  assert.equal(v.ceiling, 10);
  assert.equal(v.utilisation, 0);
  assert.deepEqual(v.shed, { low: 'elevated', normal: 'critical', high: 'never', critical: 'never' });

  // 7 calls in flight of 10 slots: 0.7, elevated (entered at 0.6, left below 0.5);
  // with the test's own calls 0.8, still under critical (0.85)
  const reads = load(s.url('eth'), 7, balance, { fresh: false });
  await waitFor(async () => (await networkView(s)).level === 'elevated', { what: 'elevated', timeoutMs: 8000 });
  const shedLow = await postFresh(s.url('eth'), call('eth_call', [{ to: BAL[0] }, 'latest'], 77));
  assert.equal(shedLow.status, 503, shedLow.text);
  assert.equal(shedLow.headers.get('retry-after'), '1');
  assert.equal(shedLow.headers.get('x-sluice-pressure'), 'elevated');
  assert.equal(shedLow.json.id, 77);
  assert.equal(shedLow.json.error.code, -32005);
  assert.deepEqual(shedLow.json.error.data, { scope: 'pressure', level: 'elevated', priority: 'low', retry_after_ms: 1000 });
  const scan = await postFresh(s.url('eth'), call('eth_getLogs', [{}]));
  assert.equal(scan.status, 503);
  assert.equal(scan.json.error.data.scope, 'pressure');
  const normal = await postFresh(s.url('eth'), call('eth_getBalance', BAL));
  assert.notEqual(normal.json?.error?.data?.scope, 'pressure', 'a normal read is admitted at elevated');
  v = await waitFor(async () => { const x = await networkView(s); return x.depth >= 3 && x; },
    { what: `depth of the reads in flight (${JSON.stringify(reads.statuses.slice(-5))})`, timeoutMs: 3000 });
  assert.ok(v.depth <= 10, `depth ${v.depth}`);
  assert.equal(v.level, 'elevated');

  // receipt polls wait for a slot instead of a 503: depth passes the ceiling, critical
  const polls = load(s.url('eth'), 14, rcpt, { fresh: false });
  await waitFor(async () => (await networkView(s)).level === 'critical', { what: 'critical', timeoutMs: 8000 });
  const shedNormal = await postFresh(s.url('eth'), call('eth_getBalance', BAL, 78));
  assert.equal(shedNormal.status, 503);
  assert.equal(shedNormal.headers.get('retry-after'), '2');
  assert.equal(shedNormal.headers.get('x-sluice-pressure'), 'critical');
  assert.deepEqual(shedNormal.json.error.data, { scope: 'pressure', level: 'critical', priority: 'normal', retry_after_ms: 2000 });
  const write = await postFresh(s.url('eth'), call('eth_sendRawTransaction', ['0x02f8']));
  assert.notEqual(write.json?.error?.data?.scope, 'pressure', 'writes are admitted at critical');
  // a batch: the shed member is refused, the poll goes through
  const batch = await postFresh(s.url('eth'), [call('eth_estimateGas', [{}], 1), rcpt()]);
  assert.equal(batch.status, 200);
  assert.equal(batch.json[0].error.data.scope, 'pressure');
  assert.equal(batch.json[1].result, null);
  // the admin view sums the slots the workers flush every ~100 ms
  v = await waitFor(async () => { const x = await networkView(s); return x.depth > 10 && x; },
    { what: 'depth over the ceiling of 10', timeoutMs: 5000 });
  assert.ok(v.utilisation > 1);
  assert.ok(v.confirm_waits > 0);
  const metrics = (await adminGet(s, '/metrics')).text;
  assert.match(metrics, /sluice_pressure_level\{network="eth"\} 2/);
  assert.match(metrics, /sluice_pressure_ceiling\{network="eth"\} 10/);
  assert.match(metrics, /sluice_requests_total\{network="eth",method="eth_call",outcome="shed"\} 1/);

  await reads.stop();
  await polls.stop();
  // back down one step at a time, after the hold
  await waitFor(async () => (await networkView(s)).level === 'ok', { what: 'ok again', timeoutMs: 15000 });
  assert.equal((await post(s.url('eth'), call('eth_blockNumber'))).headers.get('x-sluice-pressure'), 'ok');

  const pollStatuses = polls.statuses.map((x) => x.status);
  assert.ok(pollStatuses.length > 20);
  assert.deepEqual(pollStatuses.filter((x) => x !== 200), [], 'no receipt poll was refused');
  assert.ok(polls.statuses.some((x) => x.pressure === 'critical'));
  // one event per change, in order, each saying how long the level before lasted
  const evs = await pressureEvents(s);
  assert.deepEqual(evs.map((e) => `${e.from}>${e.to}`), ['ok>elevated', 'elevated>critical', 'critical>elevated', 'elevated>ok']);
  for (const e of evs.slice(1)) assert.ok(e.previous_level_ms >= 1000 || e.from === 'elevated', JSON.stringify(e));
  assert.ok(evs[2].previous_level_ms >= 1000, 'critical lasted at least hold_ms');
  assert.match(evs[1].reason, /utilisation \d\.\d\d \(depth \d+ of 10\)/);
  assert.equal((await networkView(s)).changes, 4);
});

test('two workers: the depth is every worker\'s, the level one for all, one event per change', async () => {
  const fake = await startFake({ name: 'slow', args: ['--mode', 'slow', '--delay-ms', '300'] });
  started.push(fake);
  const s = await startSluice({
    workers: 2,
    networks: { eth: { lines: [NOPROBE, 'pressure: { hold_ms: 500, merge_window_ms: 0 }'], endpoints: [{ id: 'slow', url: fake.url, max_inflight: 4 }] } },
  });
  started.push(s);
  const polls = load(s.url('eth'), 12, rcpt);
  await waitFor(async () => (await networkView(s)).level === 'critical', { what: 'critical', timeoutMs: 8000 });
  const t = Date.now();
  await waitFor(async () => polls.statuses.filter((x) => x.at > t + 200).length >= 20, { what: 'answers while critical' });
  const tStop = Date.now();
  await polls.stop();
  // every answer from either worker says so within a snapshot of the change,
  // while the load lasts (the polls still queued when it stops drain as the
  // level falls)
  const late = polls.statuses.filter((x) => x.at > t + 200 && x.at <= tStop);
  assert.deepEqual([...new Set(late.map((x) => x.pressure))], ['critical'], JSON.stringify(late.map((x) => [x.at - t, x.pressure])));
  assert.deepEqual(polls.statuses.filter((x) => x.status !== 200), [], 'no receipt poll refused');
  await waitFor(async () => (await networkView(s)).level === 'ok', { what: 'ok again', timeoutMs: 10000 });
  const evs = await pressureEvents(s);
  assert.deepEqual(evs.map((e) => `${e.from}>${e.to}`), ['ok>critical', 'critical>elevated', 'elevated>ok']);
  assert.ok(evs[0].depth > 4, `depth ${evs[0].depth}: both workers' polls`);
});

test('a waiting poll whose endpoint stops being usable is answered at once, not at its deadline', async () => {
  const fake = await startFake({ name: 'slow', args: ['--mode', 'slow', '--delay-ms', '3000'] });
  started.push(fake);
  const s = await startSluice({ workers: 1, networks: { eth: {
    lines: [NOPROBE, 'timeouts: { request_ms: 20000 }', 'pressure: { merge_window_ms: 0 }'],
    endpoints: [{ id: 'slow', url: fake.url, max_inflight: 1 }] } } });
  started.push(s);
  const first = post(s.url('eth'), rcpt());
  await waitFor(async () => (await fake.stats()).in_flight === 1, { what: 'the slot taken' });
  const t0 = Date.now();
  const waiting = Promise.all([post(s.url('eth'), rcpt()), post(s.url('eth'), rcpt())]);
  await waitFor(async () => (await networkView(s)).confirm_waits === 2, { what: 'two polls waiting' });
  assert.equal((await adminPost(s, '/admin/endpoints/eth/slow/drain')).status, 200);
  const rs = await waiting;
  for (const r of rs) assert.equal(r.status, 503, r.text);
  assert.ok(Date.now() - t0 < 8000, `answered after ${Date.now() - t0} ms`);
  assert.equal((await first).status, 200, 'the call in flight still finishes');
});

test('too many refusals (429s and budget skips) elevate the level', async () => {
  const a = await startFake({ name: 'a' });
  started.push(a);
  const s = await startSluice({
    workers: 1,
    networks: { eth: { lines: [NOPROBE, 'pressure: { min_samples: 10 }'],
      endpoints: [{ id: 'a', url: a.url, cost_profile: 'flat', credits: '{ per_minute: 5 }' }] } },
  });
  started.push(s);
  // eth_blockNumber: the cache never answers it, so every call meets the endpoint
  for (let i = 0; i < 25; i++) await post(s.url('eth'), call('eth_blockNumber', [], i));
  // the admin view reads the slots the worker flushes every ~100 ms
  let last;
  const v = await waitFor(async () => { const x = last = await networkView(s); return x.level === 'elevated' && x.refusals >= 15 && x; },
    { what: 'elevated by refusals' }).catch((e) => { throw new Error(`${e.message}: ${JSON.stringify(last)}`); });
  assert.ok(v.refusal_ratio >= 0.6, `refusal ratio ${v.refusal_ratio}`);
  const [e] = await pressureEvents(s);
  assert.equal(e.to, 'elevated');
  assert.match(e.reason, /\[refusals\]/);
});

test('a refusal another endpoint answered for is no pressure: one endpoint out of credits, the other serving', async () => {
  const a = await startFake({ name: 'a' }), b = await startFake({ name: 'b' });
  started.push(a, b);
  const s = await startSluice({
    workers: 1,
    networks: { eth: { lines: [NOPROBE, 'pressure: { min_samples: 10 }', 'coalesce: { max_waiters: 0 }'],
      endpoints: [{ id: 'a', url: a.url, cost_profile: 'flat', credits: '{ per_second: 2 }' }, { id: 'b', url: b.url }] } },
  });
  started.push(s);
  const sim = (i) => call('eth_call', [{ to: BAL[0], data: '0x' }, 'latest'], i);
  // a's budget refuses most of these (skipped for credits); b answers every one
  for (let i = 0; i < 60; i++) {
    const r = await post(s.url('eth'), sim(i));
    assert.equal(r.status, 200, r.text);
  }
  assert.ok((await b.stats()).methods.eth_call >= 40, 'b served what a had no credits for');
  await sleep(300); // the slot the worker flushes every ~100 ms
  const v = await networkView(s);
  assert.equal(v.level, 'ok', JSON.stringify(v));
  assert.equal(v.refusals, 0, 'no client got a refusal');
  // low priority is shed first at elevated: none of the next 40 is
  const next = await Promise.all(Array.from({ length: 40 }, (_, i) => post(s.url('eth'), sim(100 + i))));
  assert.deepEqual(next.filter((r) => r.status !== 200).map((r) => r.text), []);
  assert.deepEqual((await pressureEvents(s)).map((e) => e.to), []);
});

test('30 identical reads cost one upstream slot: counted once in the depth, another client is not shed', async () => {
  const slow = await startFake({ name: 'slow', args: ['--mode', 'slow', '--delay-ms', '1500'] });
  started.push(slow);
  const s = await startSluice({
    workers: 1,
    networks: { eth: { lines: [NOPROBE], endpoints: [{ id: 'slow', url: slow.url, max_inflight: 10 }] } },
  });
  started.push(s);
  const same = Promise.all(Array.from({ length: 30 }, (_, i) => postFresh(s.url('eth'), call('eth_getBalance', BAL, i))));
  await sleep(600); // well past rise_ms (100): a level the depth called for would be in force
  const v = await networkView(s);
  assert.ok(v.depth <= 2, `depth ${v.depth} for one upstream call`);
  const other = await post(s.url('eth'), call('eth_blockNumber', [], 'other'));
  assert.equal(other.status, 200, other.text);
  assert.equal(other.headers.get('x-sluice-pressure'), 'ok');
  const answers = await same;
  assert.deepEqual(answers.map((r) => r.status), Array(30).fill(200));
  assert.deepEqual(answers.map((r) => r.json.id), Array.from({ length: 30 }, (_, i) => i));
  assert.equal((await slow.stats()).methods.eth_getBalance, 1, 'one upstream call');
});

test('one identity filling the depth bears the shedding: another address\'s normal reads still go at critical', async () => {
  const slow = await startFake({ name: 'slow', args: ['--mode', 'slow', '--delay-ms', '400'] });
  started.push(slow);
  const s = await startSluice({
    workers: 1,
    networks: { eth: { lines: [NOPROBE, 'pressure: { hold_ms: 1000, merge_window_ms: 0 }'],
      endpoints: [{ id: 'slow', url: slow.url, max_inflight: 10 }] } },
  });
  started.push(s);
  // 127.0.0.1 holds 9 of 10 slots with distinct reads: 0.9, critical
  const heavy = load(s.url('eth'), 9, balance, { fresh: false });
  await waitFor(async () => (await networkView(s)).level === 'critical', { what: 'critical', timeoutMs: 8000 });
  // its next normal read is shed (it is over its share: half the ceiling)
  const own = await postFresh(s.url('eth'), call('eth_getBalance', BAL, 'own'));
  assert.equal(own.status, 503, own.text);
  assert.deepEqual(own.json.error.data, { scope: 'pressure', level: 'critical', priority: 'normal', retry_after_ms: 2000 });
  // another address holds nothing: it sees the level a step lower, elevated
  const other = await postFresh(s.url('eth'), call('eth_getBalance', BAL, 'other'), {}, { localAddress: '127.0.0.2' });
  assert.equal(other.status, 200, other.text);
  assert.equal(other.headers.get('x-sluice-pressure'), 'critical', 'the header still says the network\'s level');
  const otherLow = await postFresh(s.url('eth'), call('eth_call', [{ to: BAL[0] }, 'latest'], 'low'), {}, { localAddress: '127.0.0.2' });
  assert.equal(otherLow.status, 503, 'its low priority calls wait for elevated to pass');
  assert.equal(otherLow.json.error.data.level, 'elevated');
  await heavy.stop();
  assert.equal((await networkView(s)).identity_share, 0.5);
});

test('settle times far over their baseline elevate the level', async () => {
  const a = await startFake({ name: 'a' });
  started.push(a);
  const s = await startSluice({ workers: 1, networks: { eth: { lines: [NOPROBE], endpoints: [{ id: 'a', url: a.url }] } } });
  started.push(s);
  // eth_blockNumber: the cache never answers it, so every call meets the endpoint
  for (let i = 0; i < 30; i++) await post(s.url('eth'), call('eth_blockNumber', [], i));
  await waitFor(async () => (await networkView(s)).settle_baseline_ms > 0, { what: 'a baseline' });
  assert.equal((await networkView(s)).level, 'ok');
  await a.setMode('slow', { delay_ms: 150 });
  await Promise.all(Array.from({ length: 8 }, async () => { for (let i = 0; i < 4; i++) await post(s.url('eth'), call('eth_blockNumber')); }));
  await waitFor(async () => (await networkView(s)).level === 'elevated', { what: 'elevated by slowness' });
  const v = await networkView(s);
  assert.ok(v.settle_p90_ms > 3 * v.settle_baseline_ms, JSON.stringify(v));
  assert.ok(v.utilisation < 0.6);
  const [e] = await pressureEvents(s);
  assert.match(e.reason, /\[slow\]/);
});

test('the header is exposed through CORS; pressure.enabled: false sends none and sheds nothing', async () => {
  const a = await startFake({ name: 'a', args: ['--mode', 'slow', '--delay-ms', '300'] });
  started.push(a);
  const s = await startSluice({ workers: 1, networks: {
    eth: { lines: [NOPROBE], endpoints: [{ id: 'a', url: a.url }] },
    off: { lines: [NOPROBE, 'pressure: { enabled: false }'], endpoints: [{ id: 'a', url: a.url, max_inflight: 2 }] } } });
  started.push(s);
  const r = await post(s.url('eth'), call('eth_chainId'), { origin: 'https://app.example' });
  assert.match(r.headers.get('access-control-expose-headers'), /X-Sluice-Pressure/);
  const off = load(s.url('off'), 4, balance);
  await sleep(1500);
  const low = await postFresh(s.url('off'), call('eth_call', [{}, 'latest']));
  await off.stop();
  assert.equal(low.headers.get('x-sluice-pressure'), undefined);
  assert.notEqual(low.json?.error?.data?.scope, 'pressure');
  const v = await networkView(s, 'off');
  assert.equal(v.enabled, false);
  assert.equal(v.level, 'ok');
});

test('/admin/networks needs the admin token when one is set', async () => {
  const a = await startFake({ name: 'a' });
  started.push(a);
  const s = await startSluice({ workers: 1, admin: '{ listen: "127.0.0.1:0", token: "pressure-admin-token-42" }',
    networks: { eth: { lines: [NOPROBE], endpoints: [{ id: 'a', url: a.url }] } } });
  started.push(s);
  assert.equal((await adminGet(s, '/admin/networks')).status, 401);
  const r = await adminGet(s, '/admin/networks', 'pressure-admin-token-42');
  assert.equal(r.status, 200);
  assert.equal(r.json[0].network, 'eth');
  assert.ok(!r.text.includes('pressure-admin-token-42'));
  assert.equal((await fetch(`${s.admin}/admin/networks`, { method: 'POST', headers: { authorization: 'Bearer pressure-admin-token-42' } })).status, 405);
});

test('capacity forecast: a known arrival rate x cost per call against what is left, within 20%', async () => {
  const a = await startFake({ name: 'a' });
  started.push(a);
  const s = await startSluice({ workers: 2, networks: { eth: { lines: [NOPROBE], endpoints: [
    { id: 'a', url: a.url, cost_profile: 'alchemy', credits: '{ per_second: 100000, per_minute: 1000000, per_day: 50000000 }' }] } } });
  started.push(s);
  // eth_call costs 26 CU on Alchemy; 25 calls/s for 11 s. The rate window is
  // 10 s, so the rate to compare with is what the provider received in the
  // last 10 s (on a busy machine the client does not keep its own pace).
  const t0 = Date.now();
  let sent = 0, from = 0;
  const inflight = [];
  while (Date.now() - t0 < 11000) {
    inflight.push(postFresh(s.url('eth'), call('eth_call', [{ to: BAL[0] }, 'latest'], sent++)));
    if (!from && Date.now() - t0 >= 1000) {
      await a.reset();
      from = Date.now();
    }
    await sleep(40 - ((Date.now() - t0) % 40));
  }
  await Promise.all(inflight);
  const rate = (await a.stats()).calls / ((Date.now() - from) / 1000);
  await sleep(150);
  const net = await networkView(s);
  const ep = net.endpoints.find((e) => e.id === 'a');
  for (const w of ['minute', 'day']) {
    const win = ep.credits[w];
    const want = win.remaining / (rate * 26);
    assert.ok(Math.abs(win.exhausted_in_s - want) <= 0.2 * want, `${w}: forecast ${win.exhausted_in_s} s, want ${want.toFixed(1)} s (${JSON.stringify(win)})`);
    assert.ok(Math.abs(win.arrival_per_s - rate) <= 0.2 * rate, `${w}: arrival ${win.arrival_per_s}/s, sent ${rate.toFixed(1)}/s`);
    assert.ok(Math.abs(win.cost_per_call - 26) < 0.5, `cost per call ${win.cost_per_call}`);
  }
  // /admin/endpoints shows the same forecast in place of the straight line
  const e = (await adminGet(s, '/admin/endpoints')).json.find((x) => x.id === 'a');
  const day = e.credits.windows.day;
  assert.ok(Math.abs(day.exhausted_in_s - ep.credits.day.exhausted_in_s) <= 0.2 * ep.credits.day.exhausted_in_s);
  assert.match((await adminGet(s, '/metrics')).text, /sluice_credits_exhausted_in_seconds\{network="eth",endpoint="a",window="day"\} \d/);
});

test('where a credit rate binds first, it sets the ceiling (Little\'s law)', async () => {
  const a = await startFake({ name: 'a', args: ['--mode', 'slow', '--delay-ms', '200'] });
  started.push(a);
  const s = await startSluice({ workers: 1, networks: { eth: { lines: [NOPROBE], endpoints: [
    { id: 'a', url: a.url, max_inflight: 64, cost_profile: 'flat', credits: '{ per_second: 20 }' }] } } });
  started.push(s);
  for (let i = 0; i < 5; i++) await post(s.url('eth'), call('eth_chainId', [], i));
  await sleep(200);
  // 20 calls/s of 1 credit, each ~200 ms in flight: 4 calls in flight at most
  const v = await networkView(s);
  const ep = v.endpoints.find((e) => e.id === 'a');
  assert.ok(ep.slots >= 4 && ep.slots <= 5, `slots ${ep.slots} (latency ${ep.latency_ms} ms)`);
  assert.equal(v.ceiling, ep.slots);
});
