// eth_getLogs range splitting (issue 21): fake providers that model one
// chain (same block hashes, 2 logs per block) and refuse a range of more
// than 1,000 blocks in Infura's words. A wider eth_getLogs through sluice is
// split into sub-calls, merged, and answered byte for byte as the same
// query sent straight to an unlimited fake on that chain; one needing more
// than max_logs_split sub-calls is refused with -32005 before any provider
// sees it; a tag range is resolved from the chain view; a batch mixes a
// split member and a plain one; each sub-call is charged its credits; an
// endpoint whose real limit is below its configured one is worked around by
// halving.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { startFake, startSluice, post, call, waitFor, adminGet, events, metricValue } from '../lib/harness.mjs';
import { HEAD, hex, chainArgs, limited, filter } from '../lib/logchain.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const logsCalls = async (f) => (await f.stats()).methods.eth_getLogs ?? 0;

let a, b, q, u, liar, h, s;

before(async () => {
  a = await limited('a');
  b = await limited('b');
  q = await limited('q', 'quicknode');
  u = await startFake({ name: 'u', args: chainArgs });
  // answers the head block's logs whatever the filter: an endpoint ignoring the range
  liar = await startFake({ name: 'liar', args: ['--block', String(HEAD), '--block-time-ms', '0'] });
  h = await limited('h');
  started.push(a, b, q, u, liar, h);
  await h.setMode('slow', { delay_ms: 40 }); // the liar ranks first
  const ep = (f, blocks) => ({ id: f.name, url: f.url, cost_profile: 'flat', max_logs_blocks: blocks,
    credits: '{ per_minute: 1000000 }' });
  const lines = ['ranking: { probe_interval_ms: 200 }', 'hedge: { enabled: false }'];
  s = await startSluice({ workers: 2, networks: {
    eth: { lines, endpoints: [ep(a, 1000), ep(b, 1000)] },
    // configured wider than the providers really take (Infura's and QuickNode's words): refusals, then halves
    eth2: { lines, endpoints: [ep(a, 2000), ep(q, 2000)] },
    eth3: { lines, endpoints: [ep(liar, 1000), ep(h, 1000)] } } });
  started.push(s);
  await waitFor(async () => (await adminGet(s, '/admin/endpoints')).json.every((e) => e.head === HEAD || e.head === hex(HEAD)),
    { timeoutMs: 8000, what: 'the probes saw every head' });
});

async function direct(body) {
  return post(u.url, body);
}

async function spent() {
  const v = (await adminGet(s, '/admin/endpoints')).json.filter((e) => e.network === 'eth');
  return v.reduce((n, e) => n + (e.credits?.spent_total ?? 0), 0);
}

test('a 10,000-block eth_getLogs over endpoints limited to 1,000 is answered whole, in order, byte for byte', async () => {
  const body = call('eth_getLogs', [filter(hex(10001), hex(20000))], 7);
  const want = await direct(body);
  assert.equal(want.json.result.length, 20000, 'the unlimited fake answers 2 logs a block');
  await Promise.all([a.reset(), b.reset()]);
  const before = await spent();
  const got = await post(s.url('eth'), body);
  assert.equal(got.status, 200, got.text.slice(0, 300));
  assert.equal(got.text, want.text, 'byte-identical to one unlimited node');
  assert.equal((await logsCalls(a)) + (await logsCalls(b)), 10, 'ten sub-calls of 1,000 blocks');
  await waitFor(async () => (await spent()) - before >= 10, { timeoutMs: 3000, what: 'credits counted' });
  assert.equal((await spent()) - before, 10, 'one credit charged per sub-call (flat profile)');

  // the time: through sluice vs straight to one unlimited endpoint (median of 5)
  const median = (xs) => xs.sort((x, y) => x - y)[Math.floor(xs.length / 2)];
  const time = async (fn) => { const t = process.hrtime.bigint(); await fn(); return Number(process.hrtime.bigint() - t) / 1e6; };
  const via = [], straight = [];
  for (let i = 0; i < 5; i++) {
    via.push(await time(() => post(s.url('eth'), body)));
    straight.push(await time(() => direct(body)));
  }
  console.log(`10,000-block eth_getLogs (${want.text.length} bytes): via sluice median ${median(via).toFixed(1)} ms, ` +
    `straight to one unlimited endpoint ${median(straight).toFixed(1)} ms`);
  // 6 split calls of 10 sub-calls each, counted per network in /metrics (flushed every ~100 ms)
  await waitFor(async () => (await metricValue(s, 'sluice_logs_split_subcalls_total{network="eth"}')) === 60 &&
    (await metricValue(s, 'sluice_logs_splits_total{network="eth"}')) === 6, { timeoutMs: 3000, what: 'the split metrics' });
});

test('at most 4 sub-calls of a request are in flight at once', async () => {
  // each sub-call takes 300 ms: 10 of them, 4 at a time, are three waves (all at once would be one)
  await Promise.all([a.setMode('slow', { delay_ms: 300 }), b.setMode('slow', { delay_ms: 300 })]);
  try {
    const t = Date.now();
    const r = await post(s.url('eth'), call('eth_getLogs', [filter(hex(1), hex(10000))], 4));
    const ms = Date.now() - t;
    assert.equal(r.json.result.length, 20000, r.text.slice(0, 300));
    assert.ok(ms >= 850, `three waves of 300 ms, not one (${ms} ms)`);
  } finally {
    await Promise.all([a.setMode('ok'), b.setMode('ok')]);
  }
});

test('a range needing more than max_logs_split sub-calls gets -32005 and reaches no provider', async () => {
  await Promise.all([a.reset(), b.reset()]);
  const since = (await events(s)).at(-1)?.seq ?? 0;
  const r = await post(s.url('eth'), call('eth_getLogs', [filter(hex(1), hex(25000))], 'x'));
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.id, 'x');
  assert.equal(r.json.error?.code, -32005, r.text);
  assert.match(r.json.error.message, /max_logs_split/);
  assert.match(r.json.error.message, /allows 20/);
  assert.equal((await logsCalls(a)) + (await logsCalls(b)), 0, 'no provider was asked');
  await waitFor(async () => (await events(s, since)).some((e) => e.kind === 'logs_split_refused' && e.network === 'eth'),
    { timeoutMs: 3000, what: 'a logs_split_refused event' });
  const ev = (await events(s, since)).find((e) => e.kind === 'logs_split_refused');
  assert.match(ev.reason, /0x1 to 0x61a8 needs more than max_logs_split 20 calls of at most 1000 blocks/);
  // a burst of refusals makes no burst of events
  await Promise.all(Array.from({ length: 20 }, (_, i) => post(s.url('eth'), call('eth_getLogs', [filter(hex(1), hex(25000))], i))));
  const evs = (await events(s, since)).filter((e) => e.kind === 'logs_split_refused');
  assert.ok(evs.length <= 2, `one event per worker per 10 s, not per refusal (${evs.length})`);
  await waitFor(async () => (await metricValue(s, 'sluice_logs_split_refused_total{network="eth"}')) === 21,
    { timeoutMs: 3000, what: 'every refusal counted' });
});

test('a tag range is resolved from the chain view', async () => {
  const got = await post(s.url('eth'), call('eth_getLogs', [filter(hex(HEAD - 2999), 'latest')], 3));
  const want = await direct(call('eth_getLogs', [filter(hex(HEAD - 2999), hex(HEAD))], 3));
  assert.equal(got.status, 200, got.text.slice(0, 300));
  assert.equal(got.json.result.length, 6000);
  assert.equal(got.text, want.text);
});

test('a batch with split members and a plain member', async () => {
  const batch = [call('eth_getLogs', [filter(hex(1), hex(3500))], 1), call('eth_blockNumber', [], 2),
    call('eth_getLogs', [filter(hex(5001), hex(7000))], 3)];
  const got = await post(s.url('eth'), batch);
  assert.equal(got.status, 200, got.text.slice(0, 300));
  assert.equal(got.json.length, 3);
  const want1 = await direct(batch[0]), want3 = await direct(batch[2]);
  assert.ok(got.text.startsWith('[' + want1.text + ','), 'the first split member byte for byte');
  assert.ok(got.text.endsWith(',' + want3.text + ']'), 'the second split member byte for byte');
  assert.equal(got.json[1].id, 2);
  assert.equal(got.json[1].result, hex(HEAD));
});

test('endpoints that refuse the configured span as too wide: the range is halved', async () => {
  await Promise.all([a.reset(), q.reset()]);
  const body = call('eth_getLogs', [filter(hex(1), hex(10000))], 9);
  const want = await direct(body);
  const got = await post(s.url('eth2'), body);
  assert.equal(got.status, 200, got.text.slice(0, 300));
  assert.equal(got.text, want.text);
  // 5 parts of 2,000 refused by both, then 10 halves: 15 sub-calls, 20 requests upstream
  assert.equal((await logsCalls(a)) + (await logsCalls(q)), 20);
});

test('a call within the configured span that every endpoint refuses is answered in halves', async () => {
  await Promise.all([a.reset(), q.reset()]);
  const body = call('eth_getLogs', [filter(hex(2001), hex(3500))], 'h');
  const want = await direct(body);
  const got = await post(s.url('eth2'), [body, call('eth_blockNumber', [], 'n')]);
  assert.equal(got.status, 200, got.text.slice(0, 300));
  assert.ok(got.text.startsWith('[' + want.text + ','), got.text.slice(0, 300));
  assert.equal(got.json[1].result, hex(HEAD));
  // whole at both (refused), then two halves of 750
  assert.equal((await logsCalls(a)) + (await logsCalls(q)), 4);
});

test('a sub-answer with logs outside its range is never merged: the next endpoint answers', async () => {
  const body = call('eth_getLogs', [filter(hex(1001), hex(5000))], 'r');
  const want = await direct(body);
  const got = await post(s.url('eth3'), body);
  assert.equal(got.status, 200, got.text.slice(0, 300));
  assert.equal(got.text, want.text);
  assert.ok((await logsCalls(liar)) >= 1, 'the liar was asked (and its answer refused)');
  assert.equal(await logsCalls(h), 4);
});
