// Retry timing, observed where it lands: the arrival times the fake
// provider records (stats.arrivals_ms).
//  - Rounds over the endpoints are spaced by full-jitter backoff: a wait
//    drawn from [0, base * 2^(round-1)], capped at backoff_max_ms.
//  - A rate limit without Retry-After (or a body hint) marks the endpoint
//    for sluice's own backoff: 1 s, then 2 s, 4 s... The doubling lives in
//    the shared record, so it goes on whichever worker meets the next 429
//    (before, each worker doubled its own: 1 s, 1 s, 2 s, ...).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startFake, startSluice, post, postFresh, call, sleep } from '../lib/harness.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

// Arrivals closer than `ms` to the previous one belong to the same burst
// (a worker whose snapshot of the mark is up to ~50 ms old may send one more).
function bursts(arrivals, ms = 250) {
  const starts = [];
  for (const t of arrivals) if (!starts.length || t - starts[starts.length - 1] > ms) starts.push(t);
  return starts;
}

test('rate limited without Retry-After: marks of 1 s, 2 s, 4 s, 8 s across four workers', async () => {
  const a = await startFake({ name: 'a' });
  started.push(a);
  await a.setMode('http429');
  const s = await startSluice({ workers: 4, networks: { eth: { lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: [{ id: 'a', url: a.url }] } } });
  started.push(s);
  await a.reset();
  // fresh connections: the kernel spreads them over the four workers
  const end = Date.now() + 15800;
  while (Date.now() < end) {
    const r = await postFresh(s.url(), call('eth_chainId'));
    assert.equal(r.status, 429);
    await sleep(25);
  }
  const at = bursts((await a.stats()).arrivals_ms);
  const gaps = at.slice(1).map((t, i) => t - at[i]);
  assert.ok(gaps.length >= 4, `arrivals ${JSON.stringify(at)}`);
  const want = [1000, 2000, 4000, 8000];
  for (let i = 0; i < 4; i++) {
    assert.ok(gaps[i] >= want[i] - 50 && gaps[i] < want[i] + 450, `gap ${i + 1} is ${gaps[i]} ms, want ~${want[i]} (gaps ${gaps})`);
  }
});

test('rounds: full-jitter waits within base * 2^(round-1), doubling up to backoff_max_ms', async () => {
  const a = await startFake({ name: 'a' });
  started.push(a);
  await a.setMode('http503');
  const s = await startSluice({
    workers: 1,
    networks: {
      eth: {
        lines: ['ranking: { probe_interval_ms: 0 }', 'max_attempts: 6', 'retry: { backoff_base_ms: 200, backoff_max_ms: 1600 }',
          'breaker: { consecutive: 0, failure_count: 100000 }', 'timeouts: { request_ms: 15000 }'],
        endpoints: [{ id: 'a', url: a.url }],
      },
    },
  });
  started.push(s);
  const caps = [200, 400, 800, 1600, 1600];
  const SLACK = 150; // the 503 answered and the next attempt sent, on a loaded machine
  const byRound = caps.map(() => []);
  for (let n = 0; n < 8; n++) {
    await a.reset();
    const r = await post(s.url(), call('eth_chainId', [], n));
    assert.equal(r.status, 502, r.text);
    assert.equal(r.headers.get('x-sluice-attempts'), '6');
    const at = (await a.stats()).arrivals_ms;
    assert.equal(at.length, 6, 'one attempt per round');
    for (let k = 1; k < 6; k++) {
      const gap = at[k] - at[k - 1];
      assert.ok(gap <= caps[k - 1] + SLACK, `call ${n}, round ${k}: waited ${gap} ms, cap ${caps[k - 1]}`);
      byRound[k - 1].push(gap);
    }
  }
  // jitter: the waits spread over [0, cap], not a fixed delay
  const late = [...byRound[2], ...byRound[3], ...byRound[4]];
  const caps3 = [...byRound[2].map(() => 800), ...byRound[3].map(() => 1600), ...byRound[4].map(() => 1600)];
  assert.ok(late.some((g, i) => g < caps3[i] / 2) && late.some((g, i) => g > caps3[i] / 2), `waits ${late}`);
  // doubling: later rounds wait longer than an earlier round's cap allows
  assert.ok([...byRound[3], ...byRound[4]].some((g) => g > 800 + SLACK), `rounds 4-5 waits ${byRound[3]} ${byRound[4]}`);
});
