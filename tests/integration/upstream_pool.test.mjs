// The upstream connection pool: keep-alive reuse, the per-endpoint concurrency
// cap across workers, and connections the upstream closed while idle.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { startFake, startSluice, post, call, sleep, waitFor, FAKE_BIN } from '../lib/harness.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

test('keep-alive: many requests reuse a few upstream connections', async () => {
  const a = await startFake({ name: 'a' });
  started.push(a);
  const s = await startSluice({ workers: 2, networks: { eth: { lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: [{ id: 'a', url: a.url }] } } });
  started.push(s);
  // eth_blockNumber: the cache never answers it, so every call goes upstream
  for (let i = 0; i < 200; i++) {
    const r = await post(s.url('eth'), call('eth_blockNumber', [], i));
    assert.equal(r.status, 200);
  }
  const st = await a.stats();
  assert.equal(st.requests, 200);
  assert.ok(st.connections_total <= 4, `connections opened: ${st.connections_total}`);
});

test('max_inflight caps concurrency at the endpoint across workers; the rest go elsewhere', async () => {
  const a = await startFake({ name: 'a' }), b = await startFake({ name: 'b' });
  started.push(a, b);
  const s = await startSluice({
    workers: 2,
    // each call on its own, once: no coalescing of the identical reads, no hedges to b
    networks: { eth: { lines: ['ranking: { probe_interval_ms: 0 }', 'coalesce: { max_waiters: 0 }', 'hedge: { enabled: false }'],
      endpoints: [{ id: 'a', url: a.url, max_inflight: 2 }, { id: 'b', url: b.url }] } },
  });
  started.push(s);
  await a.setMode('slow', { delay_ms: 400 });
  const results = await Promise.all(Array.from({ length: 12 }, (_, i) => post(s.url('eth'), call('eth_blockNumber', [], i))));
  assert.ok(results.every((r) => r.status === 200));
  const sa = await a.stats();
  assert.ok(sa.max_concurrent <= 2, `a saw ${sa.max_concurrent} concurrent requests`);
  assert.ok(sa.max_concurrent >= 1);
  const fromB = results.filter((r) => r.headers.get('x-sluice-endpoint') === 'b').length;
  assert.equal(fromB, 12 - sa.requests, 'what a did not take went to b');
  assert.ok(sa.requests <= 4, `a took ${sa.requests} while capped at 2 for 400 ms`);
  assert.equal(sa.requests + (await b.stats()).requests, 12);
});

test('every endpoint at its cap: 503 with Retry-After', async () => {
  const a = await startFake({ name: 'a' });
  started.push(a);
  // probes off: a probe would take the only slot; the second call must not ride the first (coalescing)
  const s = await startSluice({ workers: 1, networks: { eth: {
    lines: ['ranking: { probe_interval_ms: 0 }', 'coalesce: { max_waiters: 0 }'], endpoints: [{ id: 'a', url: a.url, max_inflight: 1 }] } } });
  started.push(s);
  await a.setMode('slow', { delay_ms: 1000 });
  await a.reset();
  const first = post(s.url('eth'), call('eth_blockNumber', [], 1));
  await waitFor(async () => (await a.stats()).requests === 1, { what: 'the first call at a' });
  const r2 = await post(s.url('eth'), call('eth_blockNumber', [], 2));
  const r1 = await first;
  assert.equal(r1.status, 200);
  assert.equal(r2.status, 503);
  assert.equal(r2.headers.get('retry-after'), '1');
  assert.equal(r2.json.error.data.outcome, 'unavailable');
});

test('an upstream restarted while its connections sat idle: no failure, no failover', async () => {
  const a = await startFake({ name: 'a' }), b = await startFake({ name: 'b' });
  started.push(b);
  const s = await startSluice({ workers: 1, networks: { eth: { endpoints: [{ id: 'a', url: a.url }, { id: 'b', url: b.url }] } } });
  started.push(s);
  // eth_blockNumber: the cache never answers it, so every call goes upstream
  assert.equal((await post(s.url('eth'), call('eth_blockNumber'))).headers.get('x-sluice-endpoint'), 'a');
  await a.stop();
  await sleep(100); // sluice sees the idle connection close
  const a2 = await startFakeOnPort(a.port); // the same port, a new process

  started.push(a2);
  const r = await post(s.url('eth'), call('eth_blockNumber'));
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('x-sluice-endpoint'), 'a');
  assert.equal(r.headers.get('x-sluice-attempts'), '1');
});

async function startFakeOnPort(port) {
  const child = spawn(FAKE_BIN, ['--listen', `127.0.0.1:${port}`, '--name', 'a2', '--quiet'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise((r) => child.once('exit', r));
  await new Promise((resolve, reject) => {
    child.stdout.on('data', (d) => { if (/listening/.test(String(d))) resolve(); });
    exited.then(() => reject(new Error('fake exited')));
  });
  return { stop: () => { child.kill(); return exited; } };
}
