// Client connections under pressure, with real sockets from several
// loopback addresses (127.0.0.x: a client socket binds localAddress, which
// Linux's loopback accepts): one address cannot take every seat
// (server.max_connections_per_address), a full worker closes the oldest
// connection waiting on its client for a new one, and near full a new
// connection has server.first_request_timeout_ms to send its request.
// The admin listener under the same pressure: a descriptor kept for it at
// EMFILE, admin.max_connections, admin.max_streams, the heartbeat's floor.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startFake, startSluice, call, sleep, waitFor, workerPids, adminGet, tempDir, SLUICE_BIN, renderConfig, metricValue as metric } from '../lib/harness.mjs';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';

const started = [];
const sockets = new Set();
after(async () => {
  for (const so of sockets) so.destroy();
  await Promise.all(started.map((p) => p.stop()));
});

async function oneWorker(server = {}, { wrap, admin } = {}) {
  const a = await startFake({ name: 'a' });
  started.push(a);
  const s = await startSluice({
    workers: 1, server, admin,
    networks: { eth: { lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: [{ id: 'a', url: a.url }] } },
  }, { wrap });
  started.push(s);
  const [pid] = await workerPids(s.child.pid);
  return { a, s, pid };
}

const BODY = JSON.stringify(call('eth_chainId'));
const REQUEST = `POST /eth HTTP/1.1\r\nHost: sluice\r\nContent-Type: application/json\r\nContent-Length: ${BODY.length}\r\n\r\n${BODY}`;
const HALF_HEAD = 'POST /eth HTTP/1.1\r\nHost: sluice\r\nX-Slow: ';

// A raw connection from `from` (a 127.0.0.x address). `connected` resolves
// once the handshake is done (the kernel's, not yet sluice's accept).
function open(port, from) {
  const so = net.connect({ port, host: '127.0.0.1', localAddress: from });
  sockets.add(so);
  const c = { so, data: '', closed: false };
  c.connected = new Promise((r) => { so.once('connect', r); so.once('error', r); });
  c.gone = new Promise((r) => so.once('close', () => { c.closed = true; sockets.delete(so); r(); }));
  so.on('error', () => {});
  so.on('data', (d) => { c.data += d.toString('latin1'); });
  return c;
}

// One request on a fresh connection from `from`: the status, or 0 when
// nothing came within ms.
async function ask(port, from, ms) {
  const c = open(port, from);
  await c.connected;
  c.so.write(REQUEST.replace('HTTP/1.1\r\n', 'HTTP/1.1\r\nConnection: close\r\n'));
  const end = Date.now() + ms;
  while (!/\r\n\r\n/.test(c.data) && !c.closed && Date.now() < end) await sleep(20);
  c.so.destroy();
  const m = c.data.match(/^HTTP\/1\.1 (\d+)/);
  return m ? Number(m[1]) : 0;
}

// Slowloris from one address: n connections holding half a request head,
// each reopened (after 50 ms) when sluice closes it, until stop().
function slowloris(port, from, n) {
  let running = true;
  const live = new Set();
  const one = () => {
    if (!running) return;
    const c = open(port, from);
    live.add(c);
    c.connected.then(() => { if (!c.closed) c.so.write(HALF_HEAD); });
    c.gone.then(() => { live.delete(c); if (running) setTimeout(one, 50); });
  };
  for (let i = 0; i < n; i++) one();
  return { live, stop: () => { running = false; for (const c of live) c.so.destroy(); } };
}

test('one address holding max_connections half-sent heads: clients from another address are still answered', async () => {
  // 32 seats: 8 per address by default
  const { s } = await oneWorker({ max_connections: 32 });
  const attack = slowloris(s.port, '127.0.0.1', 32);
  await sleep(800);
  const answers = [];
  for (let i = 0; i < 6; i++) answers.push(ask(s.port, '127.0.0.2', 3000));
  const statuses = await Promise.all(answers);
  attack.stop();
  const ok = statuses.filter((x) => x === 200).length;
  console.log(`other clients answered: ${ok} of 6`);
  assert.equal(ok, 6, `answers: ${statuses.join(', ')}`);
  await waitFor(async () => (await metric(s, 'sluice_client_connections_closed_total{reason="per_address"}')) >= 1,
    { what: 'per_address refusals in /metrics' });
});

test('a full worker closes the oldest connection waiting on its client, and the new client is answered', async () => {
  // first_request_timeout_ms long: this test is about eviction alone
  const { s } = await oneWorker({ max_connections: 8, first_request_timeout_ms: 60000, idle_timeout_ms: 60000 });
  // the oldest: kept alive after one answer, from 127.0.0.1
  const idle = open(s.port, '127.0.0.1');
  await idle.connected;
  idle.so.write(REQUEST);
  await waitFor(() => /\r\n\r\n/.test(idle.data), { what: 'the first answer' });
  await sleep(100);
  // seven more from four addresses, half a head each (two per address at most)
  const held = [];
  for (let i = 0; i < 7; i++) {
    const c = open(s.port, `127.0.0.${2 + (i % 4)}`);
    await c.connected;
    c.so.write(HALF_HEAD);
    held.push(c);
    await sleep(30);
  }
  await sleep(300);
  assert.equal(idle.closed, false);
  const status = await ask(s.port, '127.0.0.9', 4000);
  assert.equal(status, 200, 'the new client was not answered while the worker was full');
  await idle.gone;
  await sleep(200);
  assert.equal(held.filter((c) => c.closed).length, 0, 'a newer connection was closed instead of the oldest');
  assert.ok((await metric(s, 'sluice_client_connections_closed_total{reason="evicted_idle"}')) >= 1);
  // a connection whose request is being answered is not closed for another
  for (const c of held) c.so.destroy();
});

test('a connection whose call is in flight is never closed for a new one', async () => {
  const { a, s } = await oneWorker({ max_connections: 2, max_connections_per_address: 2, first_request_timeout_ms: 60000 });
  await a.setMode('slow', { delay_ms: 1500 });
  const busy = [open(s.port, '127.0.0.1'), open(s.port, '127.0.0.2')];
  for (const c of busy) { await c.connected; c.so.write(REQUEST); }
  await sleep(300);
  const status = await ask(s.port, '127.0.0.3', 500);
  assert.equal(status, 0, 'a third client was served while both seats had calls in flight');
  await waitFor(() => busy.every((c) => /^HTTP\/1\.1 200/.test(c.data)), { what: 'both slow answers' });
  assert.equal(await metric(s, 'sluice_client_connections_closed_total{reason="evicted_idle"}'), 0);
  for (const c of busy) c.so.destroy();
});

test('near max_connections a new connection that sends no request within first_request_timeout_ms is closed', async () => {
  const { s } = await oneWorker({ max_connections: 8, idle_timeout_ms: 60000 });
  const conns = [];
  for (let i = 0; i < 8; i++) {
    const c = open(s.port, `127.0.0.${1 + (i % 4)}`);
    await c.connected;
    c.so.write(HALF_HEAD);
    conns.push(c);
    await sleep(30);
  }
  const t0 = Date.now();
  // the 7th and 8th came over 3/4 of the seats: 1 s; the first six have the idle timeout
  await Promise.all([conns[6].gone, conns[7].gone]);
  const took = Date.now() - t0;
  assert.ok(took < 4000, `closed after ${took} ms`);
  assert.equal(conns.slice(0, 6).filter((c) => c.closed).length, 0);
  await waitFor(async () => (await metric(s, 'sluice_client_connections_closed_total{reason="first_request_timeout"}')) === 2,
    { what: 'two first_request_timeout closes in /metrics' });
  for (const c of conns) c.so.destroy();
});

test('an address in server.trusted_proxies is not limited per address (it speaks for many clients)', async () => {
  const { s } = await oneWorker({ max_connections: 32, trusted_proxies: '["127.0.0.1/32"]', idle_timeout_ms: 60000 });
  const conns = [];
  for (let i = 0; i < 12; i++) {
    const c = open(s.port, '127.0.0.1');
    await c.connected;
    c.so.write(HALF_HEAD);
    conns.push(c);
  }
  const other = [];
  for (let i = 0; i < 9; i++) {
    const c = open(s.port, '127.0.0.2');
    await c.connected;
    other.push(c);
  }
  await sleep(500);
  assert.equal(conns.filter((c) => c.closed).length, 0, 'the proxy\'s connections were closed');
  assert.equal(other.filter((c) => c.closed).length, 1, 'an untrusted address keeps its cap of 8');
  await waitFor(async () => (await metric(s, 'sluice_client_connections_closed_total{reason="per_address"}')) === 1,
    { what: 'one per_address refusal in /metrics' });
  for (const c of [...conns, ...other]) c.so.destroy();
});

test('server.max_connections_per_address above max_connections is a config error', () => {
  const dir = tempDir();
  const file = path.join(dir, 'sluice.yaml');
  writeFileSync(file, renderConfig({ workers: 1, server: { max_connections: 8, max_connections_per_address: 9 },
    networks: { eth: { endpoints: [{ id: 'a', url: 'http://127.0.0.1:1' }] } } }));
  const r = spawnSync(SLUICE_BIN, ['--check', '-c', file], { encoding: 'utf8' });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr + r.stdout, /max_connections_per_address: 9 is above server\.max_connections \(8\)/);
});

// A GET on its own connection (closed after): the status, or 0 when no
// answer came within ms.
async function getFresh(url, ms) {
  const http = await import('node:http');
  return new Promise((resolve) => {
    const req = http.get(url, { agent: false, timeout: ms }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode, text, headers: res.headers }));
    });
    req.on('timeout', () => { req.destroy(); resolve({ status: 0 }); });
    req.on('error', () => resolve({ status: 0 }));
  });
}

test('at EMFILE the admin listener still answers /healthz and /metrics (a descriptor kept for it)', async () => {
  const { s, pid } = await oneWorker({ idle_timeout_ms: 60000 }, { wrap: ['prlimit', '--nofile=64:64', '--'] });
  const { readdirSync } = await import('node:fs');
  const flood = [];
  for (let i = 0; i < 120; i++) flood.push(open(s.port, `127.0.0.${1 + (i % 4)}`));
  await Promise.all(flood.map((c) => c.connected));
  await waitFor(() => readdirSync(`/proc/${pid}/fd`).length >= 64, { what: 'the worker at its 64 descriptors' });
  await waitFor(() => /accept: Too many open files/.test(s.logs()), { what: 'EMFILE in the log' });
  const health = await getFresh(`${s.admin}/healthz`, 3000);
  await sleep(300);
  const metrics = await getFresh(`${s.admin}/metrics`, 3000);
  console.log(`admin answers at EMFILE: /healthz ${health.status}, /metrics ${metrics.status}`);
  assert.equal(health.status, 200, '/healthz at EMFILE');
  assert.equal(metrics.status, 200, '/metrics at EMFILE');
  assert.match(metrics.text, /^sluice_admin_reserve_accepts_total [1-9]/m);
  for (const c of flood) c.so.destroy();
});

test('admin.max_connections: past it the admin listener waits; a waiting connection is served when one closes', async () => {
  const { s } = await oneWorker({}, { admin: '{ listen: "127.0.0.1:0", max_connections: 2 }' });
  const port = Number(new URL(s.admin).port);
  const idle = [open(port, '127.0.0.1'), open(port, '127.0.0.1')];
  await Promise.all(idle.map((c) => c.connected));
  await sleep(200);
  const waiting = getFresh(`${s.admin}/healthz`, 5000);
  await sleep(800);
  idle[0].so.destroy();
  const t0 = Date.now();
  const r = await waiting;
  assert.equal(r.status, 200);
  assert.ok(Date.now() - t0 < 3000);
  idle[1].so.destroy();
  await waitFor(async () => (await metric(s, 'sluice_accept_pauses_total{reason="admin_max_connections"}')) >= 1,
    { what: 'the admin pause in /metrics' });
});

test('admin.max_streams: event streams past it get 503 with a JSON error and Retry-After; one closing makes room', async () => {
  const { s } = await oneWorker({}, { admin: '{ listen: "127.0.0.1:0", max_streams: 3 }' });
  const http = await import('node:http');
  const streams = [];
  const openStream = () => new Promise((resolve) => {
    const req = http.get(`${s.admin}/admin/events/stream`, { agent: false }, (res) => {
      if (res.statusCode !== 200) {
        let text = '';
        res.on('data', (d) => { text += d; });
        res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text }));
        return;
      }
      streams.push(req);
      resolve({ status: 200 });
    });
    req.on('error', () => resolve({ status: 0 }));
  });
  const got = [];
  for (let i = 0; i < 6; i++) got.push(await openStream());
  console.log(`event streams accepted: ${got.filter((g) => g.status === 200).length} of 6 (max_streams 3)`);
  assert.deepEqual(got.map((g) => g.status), [200, 200, 200, 503, 503, 503]);
  assert.equal(got[3].headers['retry-after'], '5');
  assert.match(got[3].headers['content-type'], /application\/json/);
  assert.match(JSON.parse(got[3].text).error, /admin\.max_streams 3/);
  streams[0].destroy();
  // sluice notices the close at its next write (a heartbeat): ask until room
  await waitFor(async () => (await openStream()).status === 200, { timeoutMs: 20000, intervalMs: 500, what: 'room after a close' });
  for (const r of streams) r.destroy();
});

test('the event stream heartbeat has a 1000 ms floor: ?heartbeat_ms=100 is refused, admin.heartbeat_ms 100 is a config error', async () => {
  const { s } = await oneWorker({});
  const r = await getFresh(`${s.admin}/admin/events/stream?heartbeat_ms=100`, 3000);
  assert.equal(r.status, 400);
  assert.match(r.text, /heartbeat_ms must be at least 1000/);
  const dir = tempDir();
  const file = path.join(dir, 'sluice.yaml');
  writeFileSync(file, renderConfig({ workers: 1, admin: '{ listen: "127.0.0.1:0", heartbeat_ms: 100 }',
    networks: { eth: { endpoints: [{ id: 'a', url: 'http://127.0.0.1:1' }] } } }));
  const c = spawnSync(SLUICE_BIN, ['--check', '-c', file], { encoding: 'utf8' });
  assert.notEqual(c.status, 0);
  assert.match(c.stderr + c.stdout, /admin\.heartbeat_ms/);
});
