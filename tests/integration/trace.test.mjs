// X-Sluice-Trace (issue 35): the attempts of a hedge and of an eth_getLogs
// split, a cache hit, the credits spent; server.trace_header: all puts it on
// every answer; browsers may read it (Access-Control-Expose-Headers).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startFake, startSluice, post, call, waitFor, adminGet } from '../lib/harness.mjs';
import { HEAD, hex, limited, filter } from '../lib/logchain.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const ADDR = '0x' + '44'.repeat(20);

function parts(r) {
  return (r.headers.get('x-sluice-trace') ?? '').split(', ').filter(Boolean).map((x) => x.split(';'));
}

test('a hedged read: the first attempt cancelled, the hedge answered; credits spent', async () => {
  const [a, b] = await Promise.all(['a', 'b'].map((name) => startFake({ name })));
  started.push(a, b);
  const s = await startSluice({
    cache: false, // each read must go upstream: its attempts are the test
    workers: 1,
    networks: { eth: {
      lines: ['ranking: { probe_interval_ms: 0 }', 'hedge: { min_ms: 50, max_ms: 50 }'],
      endpoints: [{ id: 'a', url: a.url, cost_profile: 'flat' }, { id: 'b', url: b.url, cost_profile: 'flat' }] } },
  });
  started.push(s);
  // both slow: whichever goes first is hedged after 50 ms, and answers first
  for (const f of [a, b]) await f.setMode('slow', { delay_ms: 600, method: 'eth_getBalance' });
  const r = await post(s.url('eth'), call('eth_getBalance', [ADDR, 'latest'], 1), { 'x-sluice-trace': '1' });
  assert.equal(r.status, 200, r.text);
  const t = parts(r);
  const attempts = t.filter((x) => x.length === 4);
  assert.deepEqual(attempts.map((x) => x[1]), ['first', 'hedge'], r.headers.get('x-sluice-trace'));
  assert.deepEqual(attempts.map((x) => x[2]).sort(), ['answered', 'cancelled'], r.headers.get('x-sluice-trace'));
  assert.deepEqual(attempts.map((x) => x[0]).sort(), ['a', 'b']);
  const credits = t.find((x) => x[0] === 'credits');
  assert.ok(credits && Number(credits[1]) >= 1, r.headers.get('x-sluice-trace'));
  // without the header: no trace
  const plain = await post(s.url('eth'), call('eth_getBalance', [ADDR, 'latest'], 2));
  assert.equal(plain.headers.get('x-sluice-trace'), null);
});

test('an eth_getLogs split: every sub-call is a split attempt', async () => {
  const [a, b] = await Promise.all(['a', 'b'].map((name) => limited(name)));
  started.push(a, b);
  const s = await startSluice({
    workers: 1,
    networks: { eth: {
      lines: ['ranking: { probe_interval_ms: 200 }', 'hedge: { enabled: false }'],
      endpoints: [a, b].map((f) => ({ id: f.name, url: f.url, max_logs_blocks: 1000 })) } },
  });
  started.push(s);
  await waitFor(async () => (await adminGet(s, '/admin/endpoints')).json.every((e) => e.head === HEAD || e.head === hex(HEAD)),
    { timeoutMs: 8000, what: 'the probes saw every head' });
  const r = await post(s.url('eth'), call('eth_getLogs', [filter(hex(20001), hex(23000))], 3), { 'x-sluice-trace': '1' });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.result.length, 6000, 'two logs a block');
  const attempts = parts(r).filter((x) => x.length === 4);
  assert.equal(attempts.length, 3, r.headers.get('x-sluice-trace'));
  assert.ok(attempts.every((x) => x[1] === 'split' && x[2] === 'answered'), r.headers.get('x-sluice-trace'));
});

test('server.trace_header: all: every answer carries it; a cache hit says so; CORS exposes it', async () => {
  const a = await startFake({ name: 'a' });
  started.push(a);
  const s = await startSluice({ workers: 1, server: { trace_header: 'all' },
    networks: { eth: { lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: [{ id: 'a', url: a.url }] } } });
  started.push(s);
  const first = await post(s.url('eth'), call('eth_chainId', [], 1), { origin: 'https://app.example' });
  assert.equal(first.status, 200, first.text);
  assert.ok(first.headers.get('x-sluice-trace'), 'no X-Sluice-Trace without being asked');
  assert.match(first.headers.get('access-control-expose-headers') ?? '', /X-Sluice-Trace/);
  await waitFor(async () => {
    const r = await post(s.url('eth'), call('eth_chainId', [], 2));
    return r.headers.get('x-sluice-cache') === 'hit' && parts(r).some((x) => x[0] === 'cache' && x[1] === 'hit');
  }, { what: 'a cache hit named in the trace' });
});

test('a W3C traceparent goes to the upstream with the call, its trace id into the access line; a malformed one does not', async () => {
  const a = await startFake({ name: 'a' });
  started.push(a);
  const s = await startSluice({ cache: false, // the read must reach the fake: what it received is the test
    workers: 1, networks: { eth: { lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: [{ id: 'a', url: a.url }] } } });
  started.push(s);
  const tp = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
  const r = await post(s.url('eth'), call('eth_getBalance', [ADDR, 'latest'], 1), { traceparent: tp });
  assert.equal(r.status, 200, r.text);
  assert.equal((await a.stats()).last_traceparent, tp);
  await waitFor(async () => s.logs().split('\n').some((l) => l.includes('"type":"access"') &&
    l.includes('"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736"')), { what: 'the access line with the trace id' });
  const bad = await post(s.url('eth'), call('eth_getBalance', [ADDR, 'latest'], 2),
    { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 x' });
  assert.equal(bad.status, 200, bad.text);
  assert.equal((await a.stats()).last_traceparent, '', 'a malformed traceparent is not forwarded');
});
