// Probes are calls. A health probe that times out, resets or gets a 5xx
// counts toward the breaker (breaker.consecutive probes failed in a row open
// it, whichever workers sent them: one shared claim per interval); a probe
// refused with a 429 marks the endpoint rate-limited, and the probes back
// off with the mark. Before, a failing probe only bumped failures_in_a_row
// (the demo's rate-limiting endpoint showed 43 of them and usable: true).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startFake, startSluice, sleep, waitFor, adminGet, events } from '../lib/harness.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

async function endpoint(s, id) {
  return (await adminGet(s, '/admin/endpoints')).json.find((e) => e.id === id);
}

test('a probe answered 429 marks the endpoint rate-limited; probes back off with the mark', async () => {
  const a = await startFake({ name: 'a' }), b = await startFake({ name: 'b' });
  started.push(a, b);
  await a.setMode('http429');
  const s = await startSluice({
    workers: 2,
    networks: { eth: { lines: ['ranking: { probe_interval_ms: 100 }'], endpoints: [{ id: 'a', url: a.url }, { id: 'b', url: b.url }] } },
  });
  started.push(s);
  const v = await waitFor(async () => { const e = await endpoint(s, 'a'); return !e.usable && e.rate_limited_until ? e : null; },
    { timeoutMs: 3000, what: 'a marked rate-limited by its probes' });
  assert.equal(v.probe.failures_in_a_row, 0, 'a rate limit is not a failure');
  assert.equal(v.breaker.state, 'closed');
  await a.reset();
  await sleep(3500);
  const sent = (await a.stats()).requests;
  // marks of 1 s, 2 s, 4 s: one or two probes in 3.5 s, not one per 100 ms
  assert.ok(sent >= 1 && sent <= 3, `${sent} probes reached the rate-limited endpoint in 3.5 s`);
  assert.ok((await events(s)).some((e) => e.kind === 'endpoint_rate_limited' && e.endpoint === 'a'));
  assert.equal((await endpoint(s, 'b')).usable, true);
});

for (const [mode, opts] of [['http503', {}], ['reset', {}], ['hang', {}]]) {
  test(`probes failing with "${mode}" open the breaker without any client traffic`, async () => {
    const a = await startFake({ name: 'a' }), b = await startFake({ name: 'b' });
    started.push(a, b);
    await a.setMode(mode, { method: 'eth_blockNumber', ...opts });
    const s = await startSluice({
      workers: 2,
      networks: {
        eth: {
          lines: ['ranking: { probe_interval_ms: 100 }', 'breaker: { consecutive: 3, cooldown_ms: 60000 }',
            'timeouts: { connect_ms: 300, first_byte_ms: 300, attempt_ms: 400, request_ms: 2000 }'],
          endpoints: [{ id: 'a', url: a.url }, { id: 'b', url: b.url }],
        },
      },
    });
    started.push(s);
    const opened = await waitFor(async () => (await events(s)).find((e) => e.kind === 'breaker_opened' && e.endpoint === 'a'),
      { timeoutMs: 8000, what: 'breaker_opened from probes' });
    assert.match(opened.reason, /probes failed in a row|failures in a row/);
    await sleep(300);
    const v = await endpoint(s, 'a');
    assert.equal(v.breaker.state, 'open');
    assert.equal(v.usable, false);
    // only probes: the head's (eth_blockNumber) and the chain identity's (eth_chainId)
    const methods = Object.keys((await a.stats()).methods);
    assert.deepEqual(methods.filter((m) => m !== 'eth_blockNumber' && m !== 'eth_chainId'), [], 'no client call was involved');
    const evs = await events(s);
    assert.equal(evs.filter((e) => e.kind === 'breaker_opened' && e.endpoint === 'a').length, 1, 'one transition, one event');
    assert.equal(evs.filter((e) => e.kind === 'breaker_opened' && e.endpoint === 'b').length, 0);
  });
}
