// The admin API: endpoints view, drain/undrain, event feed, SSE stream with
// resume, Prometheus metrics, auth; persistence across kill -9; corrupt
// records in LMDB are reported, not crashed on.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync, execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  startFake, startSluice, post, call, sleep, waitFor, events, adminGet, adminPost, sseConnect, workerPids,
  renderConfig, tempDir, SLUICE_BIN, postFresh,
  waitLog,
} from '../lib/harness.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const TOKEN = 'admin-token-0123456789';

async function twoEndpoints({ probes = true, ...extra } = {}) {
  const a = await startFake({ name: 'a' }), b = await startFake({ name: 'b' });
  started.push(a, b);
  const s = await startSluice({
    workers: 2,
    networks: {
      eth: {
        lines: probes ? [] : ['ranking: { probe_interval_ms: 0 }'],
        endpoints: [{ id: 'a', url: `${a.url}/v3/keykeykey0123456789abcdef` }, { id: 'b', url: b.url }],
      },
    },
    ...extra,
  });
  started.push(s);
  return { a, b, s };
}

test('GET /admin/endpoints: one object per endpoint, merged across workers, URLs redacted', async () => {
  const { s } = await twoEndpoints({ cache: false }); // counts eth_chainId's upstream requests: a cache hit reaches none
  for (let i = 0; i < 40; i++) await post(s.url('eth'), call('eth_chainId', [], i));
  await sleep(300); // counters are flushed every ~100 ms
  const r = await adminGet(s, '/admin/endpoints');
  assert.equal(r.status, 200);
  assert.equal(r.json.length, 2);
  const [a, b] = r.json;
  assert.equal(a.network, 'eth');
  assert.equal(a.id, 'a');
  assert.equal(a.url.includes('keykeykey'), false);
  assert.match(a.url, /\/v3\/\*\*\*$/);
  assert.equal(a.position, 1);
  assert.equal(b.position, 2);
  assert.equal(a.requests, 40, 'both workers\' counters are merged');
  assert.equal(a.outcomes.ok, 40);
  assert.equal(a.success_ratio, 1);
  assert.equal(a.breaker.state, 'closed');
  assert.equal(a.drained, false);
  assert.equal(a.max_inflight, 256);
  assert.ok(a.latency_ms.ewma > 0 && a.latency_ms.p90 > 0);
  assert.equal(b.requests, 0);
});

test('more than 256 endpoints: the last ones\' counters reach the admin view too', async () => {
  const a = await startFake({ name: 'a' });
  started.push(a);
  const networks = {};
  const many = (prefix, n) => Array.from({ length: n }, (_, i) => ({ id: `${prefix}${i}`, url: a.url }));
  for (const net of ['n1', 'n2', 'n3', 'n4']) networks[net] = { lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: many('e', 64) };
  networks.last = { lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: many('z', 2) }; // the 257th and 258th
  const s = await startSluice({ workers: 1, networks, cache: false }); // counts upstream requests: a cache hit reaches none
  started.push(s);
  for (let i = 0; i < 5; i++) assert.equal((await post(s.url('last'), call('eth_chainId', [], i))).status, 200);
  await sleep(300); // counters are flushed every ~100 ms
  const view = (await adminGet(s, '/admin/endpoints')).json;
  assert.equal(view.length, 4 * 64 + 2);
  const last = view.filter((e) => e.network === 'last');
  assert.equal(last.reduce((n, e) => n + e.requests, 0), 5, JSON.stringify(last.map((e) => [e.id, e.requests])));
});

test('drain and undrain: no traffic while drained, events, survives in shared state', async () => {
  const { a, b, s } = await twoEndpoints({ cache: false }); // eth_chainId's route is watched: a cache hit has none
  let r = await adminPost(s, '/admin/endpoints/eth/a/drain');
  assert.equal(r.status, 200);
  assert.equal(r.json.changed, true);
  r = await adminPost(s, '/admin/endpoints/eth/a/drain');
  assert.equal(r.json.changed, false, 'draining twice changes nothing');
  await sleep(150);
  await a.reset();
  for (let i = 0; i < 20; i++) assert.equal((await post(s.url('eth'), call('eth_chainId'))).headers.get('x-sluice-endpoint'), 'b');
  assert.equal((await a.stats()).requests, 0);
  const view = (await adminGet(s, '/admin/endpoints')).json;
  assert.equal(view[0].drained, true);
  assert.equal(view[0].excluded, 'drained');
  assert.equal(view[1].position, 1);
  r = await adminPost(s, '/admin/endpoints/eth/a/undrain');
  assert.equal(r.json.changed, true);
  await sleep(150);
  const back = (await adminGet(s, '/admin/endpoints')).json[0];
  assert.equal(back.usable, true, 'back in the plan (b stays first: no flapping)');
  assert.equal(back.drained, false);
  // the workers notice the drain in their next snapshot (~50 ms) and record
  // the network's level: redundancy_low once, then network_up
  const k = await waitFor(async () => {
    const kinds = (await events(s)).map((e) => e.kind);
    return kinds.includes('network_up') ? kinds : null;
  }, { what: 'redundancy_low and network_up after drain and undrain' });
  assert.deepEqual(k.filter((x) => x.startsWith('endpoint_')), ['endpoint_drained', 'endpoint_undrained']);
  assert.deepEqual(k.filter((x) => x === 'redundancy_low' || x === 'network_up'), ['redundancy_low', 'network_up'],
    'one event per level change, however many workers saw it');
  assert.equal((await adminPost(s, '/admin/endpoints/eth/zzz/drain')).status, 404);
  assert.equal((await adminPost(s, '/admin/endpoints/nope/a/drain')).status, 404);
  void b;
});

test('GET /admin/events: since and limit, oldest first', async () => {
  const { s } = await twoEndpoints();
  for (let i = 0; i < 3; i++) {
    await adminPost(s, '/admin/endpoints/eth/b/drain');
    await adminPost(s, '/admin/endpoints/eth/b/undrain');
  }
  const all = await events(s);
  const mine = all.filter((e) => e.endpoint === 'b');
  assert.equal(mine.length, 6);
  const seqs = all.map((e) => e.seq);
  assert.deepEqual(seqs, [...seqs].sort((x, y) => x - y));
  const page = (await adminGet(s, `/admin/events?since=${seqs[1]}&limit=2`)).json;
  assert.deepEqual(page.map((e) => e.seq), [seqs[2], seqs[3]]);
  assert.equal(typeof page[0].time, 'string');
});

test('SSE: live events, then resume from Last-Event-ID without missing one', async () => {
  const { s } = await twoEndpoints();
  const sub = await sseConnect(`${s.admin}/admin/events/stream`);
  assert.equal(sub.status, 200);
  assert.match(sub.headers['content-type'], /text\/event-stream/);
  await adminPost(s, '/admin/endpoints/eth/b/drain');
  await waitFor(() => sub.events.length >= 1, { what: 'a live event' });
  const first = sub.events[0];
  assert.equal(first.event, 'endpoint_drained');
  assert.equal(first.data.endpoint, 'b');
  assert.equal(first.id, first.data.seq);
  sub.close();
  // while nobody listens
  await adminPost(s, '/admin/endpoints/eth/b/undrain');
  await adminPost(s, '/admin/endpoints/eth/b/drain');
  const again = await sseConnect(`${s.admin}/admin/events/stream`, { lastEventId: first.id });
  await waitFor(() => again.events.length >= 3, { what: 'the missed events' });
  const ids = again.events.map((e) => e.id);
  assert.deepEqual(ids, [...ids].sort((x, y) => x - y));
  assert.equal(ids[0], first.id + 1, 'resumes right after the last event seen');
  assert.deepEqual(again.events.map((e) => e.event).filter((k) => k.startsWith('endpoint_')),
    ['endpoint_undrained', 'endpoint_drained']);
  again.close();
  // a Last-Event-ID that is not a sequence number starts from now: no
  // replay of the whole history, and not a stream stuck past the end
  for (const junk of ['-1', 'abc', '18446744073709551616']) {
    const j = await sseConnect(`${s.admin}/admin/events/stream`, { lastEventId: junk });
    await adminPost(s, '/admin/endpoints/eth/b/undrain');
    // the workers' level events (redundancy_low, network_up) follow a drain
    // within a snapshot and may interleave: look at the operator's events
    const mine = () => j.events.filter((e) => e.event.startsWith('endpoint_'));
    await waitFor(() => mine().length >= 1, { what: `a live event after Last-Event-ID ${junk}` });
    assert.equal(mine()[0].event, 'endpoint_undrained', junk);
    j.close();
    await adminPost(s, '/admin/endpoints/eth/b/drain');
  }
});

test('SSE: many concurrent subscribers all get the event, and heartbeats flow', async () => {
  const { s } = await twoEndpoints();
  // 1000: the floor (a shorter heartbeat is refused with 400)
  const subs = await Promise.all(Array.from({ length: 20 }, () => sseConnect(`${s.admin}/admin/events/stream?heartbeat_ms=1000`)));
  await adminPost(s, '/admin/endpoints/eth/a/drain');
  await waitFor(() => subs.every((x) => x.events.some((e) => e.event === 'endpoint_drained')), { what: 'every subscriber' });
  await sleep(1300);
  assert.ok(subs.every((x) => x.comments.includes('heartbeat')));
  subs.forEach((x) => x.close());
});

test('GET /metrics: Prometheus text with requests, attempts, breaker and in-flight series', async () => {
  // probes off: a health probe could take the one 500 meant for a client call
  const { a, s } = await twoEndpoints({ probes: false, cache: false }); // the 500 must meet an eth_chainId: a cache hit steps around it
  await a.setMode('http500', { count: 1 });
  for (let i = 0; i < 5; i++) await post(s.url('eth'), call('eth_chainId', [], i));
  await post(s.url('eth'), call('debug_traceTransaction', ['0x00'], 9));
  await sleep(300);
  const r = await adminGet(s, '/metrics');
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
  const m = r.text;
  assert.match(m, /^# TYPE sluice_requests_total counter$/m);
  assert.match(m, /^sluice_requests_total\{network="eth",method="eth_chainId",outcome="ok"\} 5$/m);
  assert.match(m, /^sluice_requests_total\{network="eth",method="other",outcome="blocked"\} 1$/m);
  assert.match(m, /^sluice_upstream_attempts_total\{network="eth",endpoint="a",outcome="http_error"\} 1$/m);
  assert.match(m, /^sluice_upstream_attempts_total\{network="eth",endpoint="a",outcome="ok"\} 4$/m);
  assert.match(m, /^sluice_failovers_total\{network="eth",endpoint="a"\} 1$/m);
  assert.match(m, /^sluice_upstream_attempt_duration_seconds_bucket\{network="eth",endpoint="a",le="\+Inf"\} 5$/m);
  assert.match(m, /^sluice_breaker_state\{network="eth",endpoint="a",state="closed"\} 1$/m);
  assert.match(m, /^sluice_upstream_inflight\{network="eth",endpoint="b"\} 0$/m);
  assert.match(m, /^sluice_endpoint_drained\{network="eth",endpoint="a"\} 0$/m);
  assert.ok(!m.includes('keykeykey'));
});

test('admin auth: bearer token required (constant-time compare), /healthz stays open', async () => {
  const { s } = await twoEndpoints({ admin: `{ listen: "127.0.0.1:0", token: "${TOKEN}" }` });
  for (const p of ['/admin/endpoints', '/admin/events', '/metrics', '/readyz']) {
    assert.equal((await adminGet(s, p)).status, 401, p);
    assert.equal((await adminGet(s, p, 'wrong')).status, 401, p);
    assert.equal((await adminGet(s, p, TOKEN)).status, 200, p);
  }
  assert.equal((await adminPost(s, '/admin/endpoints/eth/a/drain')).status, 401);
  assert.equal((await adminGet(s, '/healthz')).status, 200);
  const all = await adminGet(s, '/admin/endpoints', TOKEN);
  assert.ok(!all.text.includes(TOKEN));
  assert.ok(!s.logs().includes(TOKEN));
});

test('refuses to start with a non-loopback admin listener and no token', () => {
  const dir = tempDir();
  const file = path.join(dir, 'c.yaml');
  writeFileSync(file, 'admin: { listen: "0.0.0.0:0" }\nnetworks: { eth: { endpoints: ["http://127.0.0.1:1"] } }\n');
  const r = spawnSync(SLUICE_BIN, ['-c', file], { encoding: 'utf8', timeout: 10000 });
  assert.equal(r.status, 1);
  assert.match(r.stderr, /admin listener on a non-loopback address needs admin\.token/);
});

test('kill -9 of the whole gateway: events, breaker state and drains survive; stale readers cleared', async () => {
  const a = await startFake({ name: 'a' }), b = await startFake({ name: 'b' });
  started.push(a, b);
  const dir = tempDir();
  const config = renderConfig({
    workers: 2,
    statePath: path.join(dir, 'state'),
    networks: {
      eth: {
        lines: ['breaker: { consecutive: 2, cooldown_ms: 600000 }'],
        endpoints: [{ id: 'a', url: a.url }, { id: 'b', url: b.url }],
      },
    },
  });
  let s = await startSluice(config);
  await adminPost(s, '/admin/endpoints/eth/b/drain');
  await a.setMode('http500');
  // breaker windows are per worker: enough calls that one worker sees two in a row
  // (eth_blockNumber: the cache never answers it, so each call meets a)
  for (let i = 0; i < 8 && !(await events(s)).some((e) => e.kind === 'breaker_opened'); i++)
    await post(s.url('eth'), call('eth_blockNumber'));
  // one worker dies: the master clears the reader slot it left behind
  const first = await workerPids(s.child.pid);
  process.kill(first[0], 'SIGKILL');
  await waitFor(() => /cleared \d+ reader slot\(s\) of worker/.test(s.logs()), { what: 'reader slot cleared' });
  await waitFor(async () => (await workerPids(s.child.pid)).length === 2, { what: 'respawn' });
  const before = await events(s);
  assert.ok(before.some((e) => e.kind === 'breaker_opened'));
  assert.ok(before.some((e) => e.kind === 'worker_restarted'));
  // kill -9 the master and its workers at once: no chance to clean up
  const pids = [s.child.pid, ...(await workerPids(s.child.pid))];
  for (const p of pids) process.kill(p, 'SIGKILL');
  await s.exited;
  await sleep(100);
  s = await startSluice(config);
  started.push(s);
  const after = await events(s);
  assert.deepEqual(after.slice(0, before.length).map((e) => e.seq), before.map((e) => e.seq));
  const view = (await adminGet(s, '/admin/endpoints')).json;
  assert.equal(view.find((e) => e.id === 'a').breaker.state, 'open');
  assert.equal(view.find((e) => e.id === 'b').drained, true);
  // the dead processes hold no reader slot any more (LMDB resets the table
  // when the first process opens it again; mdb_reader_check covers the rest)
  const table = spawnSync('mdb_stat', ['-r', '-a', path.join(dir, 'state')], { encoding: 'utf8' }).stdout;
  assert.match(table, /Reader Table Status/);
  for (const p of pids) assert.ok(!new RegExp(`^\\s*${p}\\s`, 'm').test(table), `pid ${p} still in:\n${table}`);
  await adminPost(s, '/admin/endpoints/eth/b/undrain');
  const next = await events(s);
  assert.ok(next[next.length - 1].seq > before[before.length - 1].seq, 'sequence numbers keep growing');
});

test('a breaker value that is no state is repaired to closed with an event, not a permanent outage', async () => {
  const a = await startFake({ name: 'a' }), b = await startFake({ name: 'b' });
  started.push(a, b);
  // no probes and no failures: nothing but the repair ever writes a's record
  const s = await startSluice({
    workers: 2,
    cache: false, // eth_chainId's route is watched: a cache hit has none
    networks: { eth: { lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: [{ id: 'a', url: a.url }, { id: 'b', url: b.url }] } },
  });
  started.push(s);
  assert.equal((await post(s.url('eth'), call('eth_chainId'))).headers.get('x-sluice-endpoint'), 'a');
  // a record that decodes, with breaker = 7 (closed, open and half-open are 0..2)
  const rec = '\\dc\\00\\10\\01\\07' + '\\00'.repeat(8) + '\\93\\00\\00\\00' + '\\00'.repeat(5);
  const r = spawnSync('mdb_load', ['-T', '-s', 'endpoints', s.statePath], { input: `eth/a\n${rec}\n`, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const ev = await waitFor(async () => (await events(s)).find((e) => e.kind === 'state_error' && e.endpoint === 'a'),
    { timeoutMs: 5000, what: 'the state_error event of the repair' });
  assert.equal(ev.network, 'eth');
  assert.match(ev.reason, /breaker value 7 .*repaired to closed/);
  assert.equal((await events(s)).filter((e) => e.kind === 'state_error').length, 1, 'one event, whoever repaired it');
  const view = (await adminGet(s, '/admin/endpoints')).json.find((e) => e.id === 'a');
  assert.equal(view.breaker.state, 'closed');
  assert.equal(view.usable, true);
  await sleep(150); // every worker's snapshot
  for (let i = 0; i < 6; i++) assert.equal((await postFresh(s.url('eth'), call('eth_chainId'))).headers.get('x-sluice-endpoint'), 'a');
  await waitLog(s, /endpoint record "eth\/a" had breaker value 7, which is no state; repaired to closed/);
});

test('a corrupt record in LMDB is reported, not crashed on', async () => {
  const { s } = await twoEndpoints();
  assert.equal((await post(s.url('eth'), call('eth_chainId'))).status, 200);
  // write garbage where endpoint a's record lives, with LMDB's own tool
  const r = spawnSync('mdb_load', ['-T', '-s', 'endpoints', s.statePath], { input: 'eth/a\n\\de\\ad\\be\\ef\\dc\\ff\\ff\\ff\\ff\n', encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  await sleep(200);
  const view = await adminGet(s, '/admin/endpoints');
  assert.equal(view.status, 200);
  assert.equal(view.json[0].breaker.state, 'closed', 'treated as absent');
  assert.equal((await post(s.url('eth'), call('eth_chainId'))).status, 200);
  await waitLog(s, /endpoint record "eth\/a" does not decode \(corrupt record\)/);
  void execFileSync;
});
