// Consensus per method (issue 21): eth_getTransactionCount is compared
// across three fake providers. One lies (the fake's lie mode): the client
// gets the honest answer, the liar its endpoint_disagreed event and a
// worse score. Two liars that disagree with each other and one honest:
// no quorum, -32603 no_consensus with the endpoints behind each answer. A
// method not listed goes to one provider only.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startFake, startSluice, post, call, waitFor, adminGet, events, metricValue } from '../lib/harness.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const ADDR = '0x000000000000000000000000000000000000dead';
const RAW_TX = '0x02f86b827a6980843b9aca00847735940082520894000000000000000000000000000000000000dead80c080a0aa';
const nonce = (id = 1) => call('eth_getTransactionCount', [ADDR, 'latest'], id);

async function threeCompared() {
  const a = await startFake({ name: 'a' }), b = await startFake({ name: 'b' }), c = await startFake({ name: 'c' });
  started.push(a, b, c);
  // one worker: the score a disagreement costs is the worker's own (as its error ratio is)
  const s = await startSluice({ workers: 1, networks: { eth: {
    lines: ['consensus: { methods: [eth_getTransactionCount], quorum: 2, of: 3 }', 'ranking: { probe_interval_ms: 200 }'],
    endpoints: [{ id: 'a', url: a.url }, { id: 'b', url: b.url }, { id: 'c', url: c.url }] } } });
  started.push(s);
  return { a, b, c, s };
}

const requestsOf = async (f, method) => (await f.stats()).methods?.[method] ?? 0;

test('one lying endpoint is outvoted, reported and scored down', async () => {
  const { a, b, c, s } = await threeCompared();
  await b.setMode('lie', { method: 'eth_getTransactionCount' });
  // the honest two answer a little later, so the liar's answer is always in
  // before the quorum (a liar still out at quorum is cancelled, not judged)
  await a.setMode('slow', { method: 'eth_getTransactionCount', delay_ms: 30 });
  await c.setMode('slow', { method: 'eth_getTransactionCount', delay_ms: 30 });
  const r = await post(s.url('eth'), nonce(7));
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json, { jsonrpc: '2.0', id: 7, result: '0x0' }, 'the honest answer');
  assert.notEqual(r.headers.get('x-sluice-endpoint'), 'b');
  // all three were asked: one request each
  assert.deepEqual(await Promise.all([a, b, c].map((f) => requestsOf(f, 'eth_getTransactionCount'))), [1, 1, 1]);

  const ev = await waitFor(async () => (await events(s)).find((e) => e.kind === 'endpoint_disagreed'),
    { timeoutMs: 5000, what: 'an endpoint_disagreed event' });
  assert.equal(ev.network, 'eth');
  assert.equal(ev.endpoint, 'b');
  assert.match(ev.reason, /eth_getTransactionCount/);
  assert.doesNotMatch(JSON.stringify(ev), /127\.0\.0\.1|http:/, 'no URL in the event');

  // the liar lies again: outvoted again, but one event per interval
  for (let i = 0; i < 5; i++) {
    const again = await post(s.url('eth'), nonce(10 + i));
    assert.equal(again.json.result, '0x0', again.text);
  }
  const all = (await events(s)).filter((e) => e.kind === 'endpoint_disagreed');
  assert.equal(all.length, 1, 'a lying endpoint does not flood the feed');

  // the score's parts: cost = (latency + 1) x (1 + penalties); only b carries one
  const factor = (e) => e.score.cost / (e.score.latency_ms + 1);
  const view = await waitFor(async () => {
    const eps = Object.fromEntries((await adminGet(s, '/admin/endpoints')).json.map((e) => [e.id, e]));
    return eps.b.score && factor(eps.b) > 3 ? eps : null;
  }, { timeoutMs: 5000, what: 'the liar scored down' });
  console.log('score factors after six lies:', JSON.stringify(Object.fromEntries(['a', 'b', 'c'].map((id) => [id, factor(view[id]).toFixed(2)]))));
  assert.ok(Math.abs(factor(view.a) - 1) < 0.05 && Math.abs(factor(view.c) - 1) < 0.05, 'the honest ones pay nothing');
  assert.ok(view.b.score.cost > view.b.score.latency_ms * 3, 'b costs more than its latency says');

  const disagreements = await waitFor(async () => {
    const v = await metricValue(s, 'sluice_consensus_disagreements_total{network="eth",endpoint="b"}');
    return v === 6 ? v : null;
  }, { timeoutMs: 3000, what: 'six disagreements in /metrics' });
  assert.equal(disagreements, 6);
  assert.equal(await metricValue(s, 'sluice_consensus_calls_total{network="eth",outcome="agreed"}'), 6);
  assert.equal(await metricValue(s, 'sluice_consensus_disagreements_total{network="eth",endpoint="a"}'), 0);
});

test('two liars that disagree with each other: no_consensus with the endpoints of each answer', async () => {
  const { a, b, c, s } = await threeCompared();
  // b has seen one transaction: its true count is 0x1, a lie makes it 0x2;
  // c lies about 0x0 (0x1); a tells the truth (0x0)
  const sent = await post(b.url, call('eth_sendRawTransaction', [RAW_TX]));
  assert.equal(sent.status, 200, sent.text);
  await b.setMode('lie', { method: 'eth_getTransactionCount' });
  await c.setMode('lie', { method: 'eth_getTransactionCount' });
  const r = await post(s.url('eth'), nonce(3));
  assert.equal(r.status, 502, r.text);
  assert.equal(r.json?.id, 3, r.text);
  assert.equal(r.json.error?.code, -32603, r.text);
  assert.equal(r.json.error.data.outcome, 'no_consensus');
  const groups = r.json.error.data.groups.map((g) => [...g].sort()).sort((x, y) => x[0].localeCompare(y[0]));
  assert.deepEqual(groups, [['a'], ['b'], ['c']], r.text);
  assert.doesNotMatch(r.text, /127\.0\.0\.1|http:/, 'ids only');
  const none = await waitFor(async () => metricValue(s, 'sluice_consensus_calls_total{network="eth",outcome="no_consensus"}'),
    { timeoutMs: 3000, what: 'the no_consensus count' });
  assert.equal(none, 1);
  const ev = (await events(s)).filter((e) => e.kind === 'endpoint_disagreed');
  assert.equal(ev.length, 0, 'without a quorum nobody is outvoted');
});

test('a method not listed goes to one provider', async () => {
  const { a, b, c, s } = await threeCompared();
  const r = await post(s.url('eth'), call('eth_getBalance', [ADDR, 'latest'], 4));
  assert.equal(r.status, 200, r.text);
  assert.ok(r.json.result, r.text);
  const n = await Promise.all([a, b, c].map((f) => requestsOf(f, 'eth_getBalance')));
  assert.equal(n.reduce((x, y) => x + y, 0), 1, `one request in all: ${n}`);
});

test('a compared method inside a batch goes with its batch, not compared', async () => {
  const { a, b, c, s } = await threeCompared();
  const r = await post(s.url('eth'), [nonce(1), call('eth_chainId', [], 2)]);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.length, 2, r.text);
  const n = await Promise.all([a, b, c].map((f) => requestsOf(f, 'eth_getTransactionCount')));
  assert.equal(n.reduce((x, y) => x + y, 0), 1, `the batch went to one provider: ${n}`);
});
