// A state that comes back again and again is one episode in the event feed:
// an endpoint answering 429 with a short Retry-After is marked, the mark runs
// out, the next call or probe marks it again. Before, each mark was an
// endpoint_rate_limited event (one every 2 s in the demo: the operator page
// showed nothing else); now the episode begins once and ends once, with the
// marks counted and its length.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startFake, startSluice, post, call, sleep, waitFor, events } from '../lib/harness.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

test('a provider refusing with Retry-After: 1 for 6 s: one endpoint_rate_limited, then one endpoint_rate_limit_ended with the count', async () => {
  const a = await startFake({ name: 'a' }), b = await startFake({ name: 'b' });
  started.push(a, b);
  const s = await startSluice({
    workers: 2,
    networks: { eth: { lines: ['ranking: { probe_interval_ms: 300 }'], endpoints: [{ id: 'a', url: a.url }, { id: 'b', url: b.url }] } },
  });
  started.push(s);
  await a.setMode('http429', { retry_after: 1 });
  const t0 = Date.now();
  while (Date.now() - t0 < 6000) {
    const r = await post(s.url('eth'), call('eth_blockNumber'));
    assert.equal(r.status, 200, r.text); // b answers for a
    await sleep(100);
  }
  await a.setMode('ok');
  const refused = (await a.stats()).methods.eth_blockNumber ?? 0;
  const rl = () => events(s).then((evs) => evs.filter((e) => e.endpoint === 'a' && e.kind.startsWith('endpoint_rate_limit')));
  const during = await rl();
  assert.deepEqual(during.map((e) => e.kind), ['endpoint_rate_limited'],
    `one event for the episode, not one per mark (a was asked ${refused} times): ${JSON.stringify(during)}`);
  // 10 s of quiet after the last mark ran out, then the master reports the end (it looks every second)
  const ended = await waitFor(async () => (await rl()).find((e) => e.kind === 'endpoint_rate_limit_ended'),
    { timeoutMs: 16000, intervalMs: 250, what: 'endpoint_rate_limit_ended' });
  assert.ok(ended.count >= 3, `marks counted: ${JSON.stringify(ended)}`);
  assert.ok(ended.duration_ms >= 4000 && ended.duration_ms <= 9000, `duration ${ended.duration_ms}`);
  assert.match(ended.reason, /no longer rate limited: \d+ refusal mark\(s\) over \d+ ms, none since/);
  assert.ok(ended.ts_ms - Date.now() < 1000);
  assert.deepEqual((await rl()).map((e) => e.kind), ['endpoint_rate_limited', 'endpoint_rate_limit_ended']);

  // a new refusal after that is a new episode
  // (three refusals, not one: a single one may go to a call that marks nothing, such as the
  // chain probe's, and a busy machine may take seconds to send the next probe)
  await a.setMode('http429', { retry_after: 1, count: 3 });
  await waitFor(async () => (await rl()).length >= 3, { timeoutMs: 15000, what: 'the next episode begins' });
  assert.equal((await rl())[2].kind, 'endpoint_rate_limited');
});
