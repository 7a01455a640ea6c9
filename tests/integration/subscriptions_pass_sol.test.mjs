// A passed-through Solana logsSubscribe {"mentions":[address]} backfilled
// across an upstream failover (issue 36, sub/sub_pass_sol.c): the endpoint
// whose WebSocket holds the subscription dies with transactions it never
// told; sluice subscribes at the other endpoint, polls what the address had
// since the last signature it told (getSignaturesForAddress, getTransaction)
// and tells it first, then the live stream: every transaction once, in
// order; the same when only its WebSockets are dropped, and for an address
// busier than a poll (the backfill meets the live stream). Real processes: the gateway and two fake Solana providers (their
// /_control/sol adds the same transactions to both, their /_control/ws
// pushes the live notifications).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startFake, startSluice, sleep, waitFor, events } from '../lib/harness.mjs';
import { openWs } from '../lib/wsclient.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const POLL_MS = 200;
const ADDR = 'Vote111111111111111111111111111111111111111';

async function upstream(name) {
  const f = await startFake({ name, chain: 'solana', args: ['--block', '1000', '--block-time-ms', '0'] });
  started.push(f);
  const post = async (route, body) => (await fetch(`${f.url}/_control/${route}`, { method: 'POST',
    body: body ? JSON.stringify(body) : '' })).json();
  return {
    name, f, url: f.url, wsUrl: `"${f.url.replace('http', 'ws')}/"`,
    live: async () => (await post('ws')).live.logs,
    // a node's logsNotification for a transaction of ADDR
    push: (sig) => post('ws', { push: 'logs', result: { context: { slot: 1000 },
      value: { signature: sig, err: null, logs: ['Program log: live'] } } }),
    drop: () => post('ws', { drop: true }),
    sol: async (body) => { const j = await post('sol', body); assert.ok(j.ok, JSON.stringify(j)); return j.signatures; },
  };
}

async function gateway(ups) {
  const s = await startSluice({ workers: 1, networks: { solana: { chain: 'solana',
    lines: [`ranking: { probe_interval_ms: ${POLL_MS} }`],
    endpoints: ups.map((u) => ({ id: u.name, url: u.url, ws_url: u.wsUrl })) } } });
  started.push(s);
  return s;
}

test('logsSubscribe passed through: the WebSocket holding it dies; what it never told is backfilled, then live, each once, in order', async () => {
  const a = await upstream('a'), b = await upstream('b');
  const s = await gateway([a, b]);
  const both = async (count) => { const x = await a.sol({ mention: ADDR, count }); assert.deepEqual(await b.sol({ mention: ADDR, count }), x); return x; };
  const before = await both(2); // history: never told
  const c = openWs(`ws://127.0.0.1:${s.wsPort}/solana`);
  await c.opened;
  const sub = (await c.rpc('logsSubscribe', [{ mentions: [ADDR] }, { commitment: 'confirmed' }], 1)).result;
  assert.equal(typeof sub, 'number');
  await waitFor(async () => (await a.live()) + (await b.live()) === 1, { what: 'logsSubscribe upstream' });
  const [holder, other] = (await a.live()) === 1 ? [a, b] : [b, a];
  await sleep(4 * POLL_MS); // where it starts is known (one follow of the address, then no more)

  const sigs = [];
  for (const sig of await both(3)) { await holder.push(sig); sigs.push(sig); }
  await waitFor(() => c.notes(sub).length === 3, { what: '3 live notifications' });
  // mined while the holder's socket dies: the holder never tells them
  const gap = await both(4);
  sigs.push(...gap);
  const t0 = performance.now();
  await holder.f.stop('SIGKILL');
  await waitFor(async () => (await other.live()) === 1, { what: 'subscribed at the other endpoint', timeoutMs: 20000 });
  await waitFor(() => c.notes(sub).length >= 7, { what: 'the gap backfilled', timeoutMs: 20000 });
  console.log(`# the holder killed -> the 4 transactions of the gap told: ${(performance.now() - t0).toFixed(0)} ms`);
  // the new endpoint tells a new transaction at once (held while the gap is backfilled: told after
  // it) and one of the gap again (as a node may: not told twice)
  const fresh = '5'.repeat(88);
  await other.push(fresh);
  await other.push(gap[3]);
  sigs.push(fresh);
  await waitFor(() => c.notes(sub).length >= sigs.length, { what: 'the gap, then the one held', timeoutMs: 20000 });
  // two more (told live, or found by the backfill first: either way once)
  for (const sig of await other.sol({ mention: ADDR, count: 2 })) { await other.push(sig); sigs.push(sig); }
  await waitFor(() => c.notes(sub).length >= sigs.length, { what: `${sigs.length} transactions`, timeoutMs: 20000 });
  await sleep(4 * POLL_MS); // nothing more comes
  const told = c.notes(sub).map((r) => r.value.signature);
  assert.deepEqual(told, sigs);
  assert.ok(!told.some((x) => before.includes(x)), 'nothing from before the subscription');
  // the backfilled ones carry the node's logs (getTransaction's)
  assert.match(c.notes(sub)[3].value.logs[1], /fp mention/);
  const ev = (await events(s)).filter((e) => e.kind === 'subscription_source_changed');
  assert.ok(ev.some((e) => e.endpoint === other.name && /backfilled from getSignaturesForAddress/.test(e.reason)),
    JSON.stringify(ev));
  assert.ok(!ev.some((e) => /127\.0\.0\.1|ws:/.test(e.reason)), 'no URL in the event');
  c.ws.close();
});

test('a busy address (a transaction every 50 ms, more than one per poll): the backfill meets the live stream and hands over; each once, in order', async () => {
  const a = await upstream('a'), b = await upstream('b');
  const s = await gateway([a, b]);
  const c = openWs(`ws://127.0.0.1:${s.wsPort}/solana`);
  await c.opened;
  const sub = (await c.rpc('logsSubscribe', [{ mentions: [ADDR] }, { commitment: 'confirmed' }], 1)).result;
  await waitFor(async () => (await a.live()) + (await b.live()) === 1, { what: 'logsSubscribe upstream' });
  const [holder, other] = (await a.live()) === 1 ? [a, b] : [b, a];
  await sleep(4 * POLL_MS);
  const sigs = [];
  for (let i = 0; i < 2; i++) {
    const [sig] = await holder.sol({ mention: ADDR, count: 1 });
    assert.deepEqual(await other.sol({ mention: ADDR, count: 1 }), [sig]);
    await holder.push(sig);
    sigs.push(sig);
  }
  await waitFor(() => c.notes(sub).length === 2, { what: '2 live notifications' });
  await holder.f.stop('SIGKILL');
  // the other endpoint's address keeps busy, its WebSocket telling each once subscribed (before
  // that, the pushes reach no one: only the backfill can tell those)
  const until = performance.now() + 3000;
  while (performance.now() < until) {
    const [sig] = await other.sol({ mention: ADDR, count: 1 });
    await other.push(sig);
    sigs.push(sig);
    await sleep(50);
  }
  assert.equal(await other.live(), 1, 'subscribed at the other endpoint');
  await waitFor(() => c.notes(sub).length >= sigs.length, { what: `${sigs.length} transactions`, timeoutMs: 20000 });
  await sleep(4 * POLL_MS);
  assert.deepEqual(c.notes(sub).map((r) => r.value.signature), sigs);
  assert.match(s.logs(), /logsSubscribe passthrough met the live stream: \d+ transactions backfilled/);
  c.ws.close();
});

test('the holder\'s WebSockets dropped (its HTTP side alive): subscribed again elsewhere, the gap backfilled, each once, in order', async () => {
  const a = await upstream('a'), b = await upstream('b');
  const s = await gateway([a, b]);
  const both = async (count) => { const x = await a.sol({ mention: ADDR, count }); assert.deepEqual(await b.sol({ mention: ADDR, count }), x); return x; };
  const c = openWs(`ws://127.0.0.1:${s.wsPort}/solana`);
  await c.opened;
  const sub = (await c.rpc('logsSubscribe', [{ mentions: [ADDR] }], 1)).result;
  await waitFor(async () => (await a.live()) + (await b.live()) === 1, { what: 'logsSubscribe upstream' });
  const holder = (await a.live()) === 1 ? a : b;
  await sleep(4 * POLL_MS);
  const sigs = [];
  for (const sig of await both(2)) { await holder.push(sig); sigs.push(sig); }
  await waitFor(() => c.notes(sub).length === 2, { what: '2 live notifications' });
  sigs.push(...await both(5)); // never told by the holder
  await holder.drop();
  await waitFor(async () => (await a.live()) + (await b.live()) === 1, { what: 'subscribed again', timeoutMs: 20000 });
  const now = (await a.live()) === 1 ? a : b;
  await waitFor(() => c.notes(sub).length >= sigs.length, { what: 'the gap backfilled', timeoutMs: 20000 });
  for (const sig of await both(2)) { await now.push(sig); sigs.push(sig); }
  await waitFor(() => c.notes(sub).length >= sigs.length, { what: `${sigs.length} transactions`, timeoutMs: 20000 });
  await sleep(4 * POLL_MS);
  assert.deepEqual(c.notes(sub).map((r) => r.value.signature), sigs);
  c.ws.close();
});
