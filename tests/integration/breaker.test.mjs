// Circuit breakers across worker processes: one event per transition, one
// half-open probe across all workers (counted at the fake provider), recovery
// with the open duration, and a hung upstream trips it too.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startFake, startSluice, post, call, sleep, waitFor, events, adminGet, adminPost } from '../lib/harness.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const kinds = (evs, endpoint) => evs.filter((e) => !endpoint || e.endpoint === endpoint).map((e) => e.kind);

test('a failing endpoint: one breaker_opened, one probe per cooldown across workers, one breaker_closed', async () => {
  const a = await startFake({ name: 'a' }), b = await startFake({ name: 'b' });
  started.push(a, b);
  const s = await startSluice({
    cache: false, // the 30 identical calls must each reach a: the cache would fetch them once
    workers: 2,
    networks: {
      eth: {
        // health probes off: the fake counts the breaker's probes alone; no
        // coalescing: the 30 identical calls below must each reach a
        lines: ['breaker: { consecutive: 3, cooldown_ms: 1000, max_cooldown_ms: 8000 }', 'ranking: { probe_interval_ms: 0 }',
          'coalesce: { max_waiters: 0 }'],
        endpoints: [{ id: 'a', url: a.url }, { id: 'b', url: b.url }],
      },
    },
  });
  started.push(s);
  await a.setMode('http500');
  // enough traffic that both workers see a fail (SO_REUSEPORT spreads connections)
  // (eth_chainId: the breaker's probes are eth_blockNumber, counted apart)
  const rs = await Promise.all(Array.from({ length: 30 }, (_, i) => post(s.url('eth'), call('eth_chainId', [], i))));
  assert.ok(rs.every((r) => r.status === 200), 'every call answered by b');
  let evs = await events(s);
  assert.deepEqual(kinds(evs, 'a'), ['breaker_opened'], JSON.stringify(evs));
  const opened = evs.find((e) => e.kind === 'breaker_opened');
  assert.equal(opened.from, 'closed');
  assert.equal(opened.to, 'open');
  assert.match(opened.reason, /failures in a row|calls failed/);
  assert.ok(evs.some((e) => e.kind === 'redundancy_low'), 'one usable endpoint left');

  // while open, client traffic never reaches a; after the cooldown exactly one probe does.
  // Workers re-read the shared breaker every ~50 ms, so the other worker may send
  // one more call in that window: count from 200 ms after the opening.
  await sleep(200);
  const failed = (await a.stats()).methods.eth_chainId;
  const stop = Date.now() + 1500;
  while (Date.now() < stop) {
    const r = await post(s.url('eth'), call('eth_chainId'));
    assert.equal(r.headers.get('x-sluice-endpoint'), 'b');
    await sleep(20);
  }
  let sa = await a.stats();
  assert.equal(sa.methods.eth_chainId, failed, 'no client call reached a while its breaker was open');
  assert.equal(sa.methods.eth_blockNumber, 1, 'one probe (eth_blockNumber), not one per worker');
  evs = await events(s);
  assert.deepEqual(kinds(evs, 'a'), ['breaker_opened', 'breaker_half_open', 'breaker_opened']);
  assert.match(evs.filter((e) => e.endpoint === 'a').pop().reason, /probe failed/);

  // a recovers; the next probe (cooldown doubled to 2 s) closes the breaker
  await a.setMode('ok');
  await a.reset();
  await waitFor(async () => kinds(await events(s), 'a').includes('breaker_closed'), { timeoutMs: 5000, what: 'breaker_closed' });
  evs = await events(s);
  assert.deepEqual(kinds(evs, 'a'), ['breaker_opened', 'breaker_half_open', 'breaker_opened', 'breaker_half_open', 'breaker_closed']);
  const closed = evs.find((e) => e.kind === 'breaker_closed');
  assert.ok(closed.open_for_ms >= 2500 && closed.open_for_ms < 6000, `open for ${closed.open_for_ms} ms`);
  sa = await a.stats();
  assert.equal(sa.requests, 1, 'one probe, not one per worker');
  assert.ok(evs.some((e) => e.kind === 'network_up'), 'redundancy restored');
  // a is back in the plan (b stays first: a is not clearly better, so no flap);
  // workers publish their plan with their counters, every ~100 ms
  await sleep(300);
  const view = (await adminGet(s, '/admin/endpoints')).json;
  const va = view.find((e) => e.id === 'a');
  assert.equal(va.usable, true);
  assert.equal(va.position, 2);
  assert.equal(va.breaker.state, 'closed');
  assert.equal(va.breaker.transitions.open, 2);
  assert.equal(va.breaker.transitions.closed, 1);
});

test('a hanging endpoint (accepts, never answers) trips the breaker', async () => {
  const a = await startFake({ name: 'a' }), b = await startFake({ name: 'b' });
  started.push(a, b);
  const s = await startSluice({
    cache: false, // each eth_chainId must meet the hung endpoint: the first answer, cached, would step around it
    workers: 1,
    networks: {
      eth: {
        // the breaker's own counting of timeouts: without hedges (which cancel the
        // hung attempt) and demotion (which moves calls off it after the first)
        lines: ['timeouts: { connect_ms: 300, first_byte_ms: 300, attempt_ms: 600, request_ms: 5000 }',
          'breaker: { consecutive: 3, cooldown_ms: 60000 }', 'hedge: { enabled: false }', 'demote_ms: 0'],
        endpoints: [{ id: 'a', url: a.url }, { id: 'b', url: b.url }],
      },
    },
  });
  started.push(s);
  await a.setMode('hang');
  for (let i = 0; i < 3; i++) assert.equal((await post(s.url('eth'), call('eth_chainId'))).status, 200);
  const evs = await events(s);
  const opened = evs.find((e) => e.kind === 'breaker_opened' && e.endpoint === 'a');
  assert.ok(opened, JSON.stringify(evs));
  assert.match(opened.reason, /timeout/);
  const hung = (await a.stats()).requests;
  const r = await post(s.url('eth'), call('eth_chainId'));
  assert.equal(r.headers.get('x-sluice-endpoint'), 'b');
  assert.equal(r.headers.get('x-sluice-attempts'), '1', 'no more waiting on the hung endpoint');
  assert.equal((await a.stats()).requests, hung);
});

test('every breaker open: 503 with Retry-After, and /readyz says so', async () => {
  const a = await startFake({ name: 'a' });
  started.push(a);
  const s = await startSluice({
    workers: 1,
    networks: { eth: { lines: ['breaker: { consecutive: 2, cooldown_ms: 60000 }'], endpoints: [{ id: 'a', url: a.url }] } },
  });
  started.push(s);
  await a.setMode('http503');
  await post(s.url('eth'), call('eth_chainId'));
  await post(s.url('eth'), call('eth_chainId'));
  const r = await post(s.url('eth'), call('eth_chainId', [], 3));
  assert.equal(r.status, 503);
  assert.ok(Number(r.headers.get('retry-after')) >= 1);
  assert.equal(r.json.error.data.outcome, 'unavailable');
  const ready = await adminGet(s, '/readyz');
  assert.equal(ready.status, 503);
  assert.match(ready.json.reason, /network eth has no usable endpoint/);
  assert.ok((await events(s)).some((e) => e.kind === 'network_down'));
});

test('a 429 marks the endpoint for Retry-After, then it is used again', async () => {
  const a = await startFake({ name: 'a' }), b = await startFake({ name: 'b' });
  started.push(a, b);
  // health probes off: a probe could take the one 429 meant for the client call
  const s = await startSluice({
    cache: false, // eth_chainId's route is watched and a's requests counted: a cache hit has neither
    workers: 2,
    networks: { eth: { lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: [{ id: 'a', url: a.url }, { id: 'b', url: b.url }] } },
  });
  started.push(s);
  await a.setMode('http429', { retry_after: 2, count: 1 });
  await post(s.url('eth'), call('eth_chainId'));
  const evs = await events(s);
  const rl = evs.filter((e) => e.kind === 'endpoint_rate_limited');
  assert.equal(rl.length, 1);
  assert.equal(rl[0].endpoint, 'a');
  await a.reset();
  await sleep(150); // every worker's snapshot has the mark
  for (let i = 0; i < 20; i++) assert.equal((await post(s.url('eth'), call('eth_chainId'))).headers.get('x-sluice-endpoint'), 'b');
  assert.equal((await a.stats()).requests, 0, 'no worker sent to a while it was marked');
  const view = (await adminGet(s, '/admin/endpoints')).json.find((e) => e.id === 'a');
  assert.equal(view.excluded, 'rate limited');
  assert.ok(view.rate_limited_until);
  await sleep(2100);
  const back = (await adminGet(s, '/admin/endpoints')).json.find((e) => e.id === 'a');
  assert.equal(back.usable, true, 'usable again after Retry-After');
  await adminPost(s, '/admin/endpoints/eth/b/drain');
  await sleep(150);
  assert.equal((await post(s.url('eth'), call('eth_chainId'))).headers.get('x-sluice-endpoint'), 'a');
});

test('every endpoint marked rate-limited: 429 upstream without a request sent', async () => {
  const a = await startFake({ name: 'a' });
  started.push(a);
  const s = await startSluice({ workers: 1, networks: { eth: { endpoints: [{ id: 'a', url: a.url }] } } });
  started.push(s);
  await a.setMode('http429', { retry_after: 5 });
  let r = await post(s.url('eth'), call('eth_chainId'));
  assert.equal(r.status, 429);
  await a.reset();
  r = await post(s.url('eth'), call('eth_getBalance', ['0x0000000000000000000000000000000000000000', 'latest'], 2));
  assert.equal(r.status, 429);
  assert.equal(r.json.error.code, -32005);
  assert.equal(r.json.error.data.scope, 'upstream');
  const ra = Number(r.headers.get('retry-after'));
  assert.ok(ra >= 4 && ra <= 5, `Retry-After ${ra}`);
  assert.equal((await a.stats()).requests, 0);
});
