// The admin listener accepts nothing foreign. Without a token: every route
// refuses a Host that is not the listener's own or localhost (DNS
// rebinding), and every write refuses a foreign Origin or a non-JSON
// content type (cross-site requests), checked in the router so routes added
// later inherit it. With a token: failed attempts are throttled per client
// address (a wrong token gets 429 with Retry-After) while the right token
// always passes, from that address too (every operator behind one proxy),
// the token must be 16+ bytes (--check says so, with the line), and
// no log line ever carries it or a near miss of it.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { startFake, startSluice, adminGet, sleep, tempDir, SLUICE_BIN, readAnswer } from '../lib/harness.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const TOKEN = 'guard-token-5f4e3d2c1b0a9f8e7d6c';

// A request with the headers a browser (or an attacker) would send: Host,
// Origin, Content-Type as given; optionally from another loopback address.
function raw(base, p, { method = 'GET', headers = {}, body, localAddress } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}${p}`, { method, headers: { connection: 'close', ...headers }, agent: false, localAddress },
      (res) => readAnswer(res, resolve));
    req.on('error', reject);
    req.end(body);
  });
}

async function gateway(admin, { workers = 2, env } = {}) {
  const a = await startFake({ name: 'a' });
  started.push(a);
  const s = await startSluice({
    workers, admin,
    networks: { eth: { lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: [{ id: 'a', url: a.url }, { id: 'b', url: a.url }] } },
    extra: 'log: { level: debug }',
  }, { env });
  started.push(s);
  return s;
}

const drained = async (s, token) => (await adminGet(s, '/admin/endpoints', token)).json.find((e) => e.id === 'a').drained;

test('no token: a Host that is not the listener or localhost is refused on every route (DNS rebinding)', async () => {
  const s = await gateway(true);
  const port = new URL(s.admin).port;
  const routes = [['GET', '/healthz'], ['GET', '/readyz'], ['GET', '/admin/endpoints'], ['GET', '/admin/events'],
    ['GET', '/metrics'], ['GET', '/admin/events/stream'], ['POST', '/admin/endpoints/eth/a/drain'],
    ['GET', '/no/such/route'], ['POST', '/admin/reload']];
  for (const host of [`evil.example:${port}`, 'evil.example', `127.0.0.1.nip.io:${port}`, `localhost.evil.example:${port}`]) {
    for (const [method, p] of routes) {
      const r = await raw(s.admin, p, { method, headers: { host } });
      assert.equal(r.status, 421, `${method} ${p} with Host ${host}: ${r.status} ${r.text}`);
    }
  }
  assert.equal(await drained(s), false, 'the refused drain did nothing');
  for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, 'localhost', `LOCALHOST:${port}`, `[::1]:${port}`, '127.0.0.1:2222']) {
    const r = await raw(s.admin, '/admin/endpoints', { headers: { host } });
    assert.equal(r.status, 200, `Host ${host}: ${r.text}`);
  }
});

test('no token: writes with a foreign Origin or a non-JSON content type are refused; same-origin JSON and curl are served', async () => {
  const s = await gateway(true);
  const own = new URL(s.admin).host;
  const drain = (headers, body) => raw(s.admin, '/admin/endpoints/eth/a/drain', { method: 'POST', headers, body });
  for (const origin of ['http://evil.example', `http://localhost:${new URL(s.admin).port}`, 'http://localhost:3000', 'null', `https://${own}`]) {
    const r = await drain({ origin, 'content-type': 'application/json' }, '{}');
    assert.equal(r.status, 403, `Origin ${origin}: ${r.text}`);
  }
  // what a page can send without a preflight: the form types and text/plain
  for (const ct of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
    const r = await drain({ 'content-type': ct }, 'x=1');
    assert.equal(r.status, 415, `Content-Type ${ct}: ${r.text}`);
  }
  // the router checks, not the route: a route that does not exist yet answers the same
  assert.equal((await raw(s.admin, '/admin/reload', { method: 'POST', headers: { origin: 'http://evil.example' } })).status, 403);
  assert.equal((await raw(s.admin, '/admin/reload', { method: 'POST', headers: { 'content-type': 'text/plain' } })).status, 415);
  await sleep(100);
  assert.equal(await drained(s), false, 'no refused write drained anything');
  // the operator page's own fetch: same origin, JSON
  let r = await drain({ origin: `http://${own}`, 'content-type': 'application/json; charset=utf-8' }, '{}');
  assert.equal(r.status, 200, r.text);
  assert.equal(await drained(s), true);
  // curl -X POST: no Origin, no body
  r = await raw(s.admin, '/admin/endpoints/eth/a/undrain', { method: 'POST' });
  assert.equal(r.status, 200, r.text);
  assert.equal(await drained(s), false);
  // reads are not writes: a foreign Origin on a GET is answered (a browser
  // does not let the page read it: no CORS headers)
  r = await raw(s.admin, '/admin/endpoints', { headers: { origin: 'http://evil.example' } });
  assert.equal(r.status, 200);
  assert.equal(r.headers['access-control-allow-origin'], undefined);
});

test('with a token: any Host is answered (the token is the guard), a wrong token is 401', async () => {
  const s = await gateway(`{ listen: "127.0.0.1:0", token: "${TOKEN}" }`);
  const auth = { authorization: `Bearer ${TOKEN}` };
  assert.equal((await raw(s.admin, '/admin/endpoints', { headers: { host: 'admin.internal:8546', ...auth } })).status, 200);
  assert.equal((await raw(s.admin, '/admin/endpoints', { headers: { host: 'admin.internal:8546' } })).status, 401);
  const r = await raw(s.admin, '/admin/endpoints/eth/a/drain', { method: 'POST', headers: { 'content-type': 'application/json', ...auth } });
  assert.equal(r.status, 200, r.text);
});

test('failed attempts are throttled per client address: 429 + Retry-After; the right token still passes from it; no log line carries the token', async () => {
  const s = await gateway(`{ listen: "127.0.0.1:0", token: "${TOKEN}" }`, { workers: 1 });
  const nearMisses = [TOKEN.slice(0, -1), TOKEN.slice(1), `${TOKEN.slice(0, -1)}X`, TOKEN.toUpperCase()];
  const bearer = (t) => ({ authorization: `Bearer ${t}` });
  const seen = [];
  for (let i = 0; i < 10; i++) {
    const r = await raw(s.admin, '/admin/endpoints', { headers: bearer(nearMisses[i % nearMisses.length]) });
    seen.push(r.status);
  }
  assert.deepEqual(seen, Array(10).fill(401), 'ten failures are answered 401');
  const locked = await raw(s.admin, '/metrics', { headers: bearer('still-guessing-000000') });
  assert.equal(locked.status, 429, locked.text);
  const retry = Number(locked.headers['retry-after']);
  assert.ok(retry >= 1 && retry <= 6, `Retry-After ${locked.headers['retry-after']}`);
  // while it is over, the right token still passes from this address (one
  // address is every operator behind a proxy) ...
  const good = await raw(s.admin, '/admin/endpoints', { headers: bearer(TOKEN) });
  assert.equal(good.status, 200, good.text);
  // ... and does not reset the count: wrong ones are still limited
  for (const t of nearMisses) assert.equal((await raw(s.admin, '/metrics', { headers: bearer(t) })).status, 429, t);
  assert.equal((await raw(s.admin, '/admin/endpoints', { headers: {} })).status, 429, 'no token is a failure too');
  assert.equal((await raw(s.admin, '/admin/endpoints', { headers: bearer(TOKEN) })).status, 200);
  // an operator on another address is not limited by it either
  const other = await raw(s.admin, '/admin/endpoints', { headers: bearer(TOKEN), localAddress: '127.0.0.2' });
  assert.equal(other.status, 200, other.text);
  // and /healthz needs no token, so it is never throttled
  assert.equal((await raw(s.admin, '/healthz')).status, 200);
  // client traffic with the token in odd places, for the log search below
  await raw(s.base, `/eth/${TOKEN}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}' });
  await sleep(200);
  const exit = await s.stop();
  assert.equal(exit.code, 0);
  const logs = s.logs();
  assert.match(logs, /admin: 10 failed authentications from 127\.0\.0\.1; wrong tokens from it get 429 for a while/);
  assert.ok(logs.split('\n').length >= 5, logs);
  const leaks = logs.split('\n').filter((l) => [TOKEN, ...nearMisses].some((t) => l.includes(t)));
  assert.deepEqual(leaks, [], 'no log line carries the token or a near miss of it');
});

test('an admin token under 16 bytes is a --check error with its line, and sluice does not start', () => {
  const dir = tempDir();
  const file = path.join(dir, 'c.yaml');
  writeFileSync(file, 'server: { listen: "127.0.0.1:0" }\nadmin:\n  listen: "127.0.0.1:0"\n  token: "change-me"\nnetworks: { eth: { endpoints: ["http://127.0.0.1:1"] } }\n');
  const check = spawnSync(SLUICE_BIN, ['--check', '-c', file], { encoding: 'utf8', timeout: 10000 });
  assert.equal(check.status, 1, check.stdout + check.stderr);
  assert.match(check.stderr, /c\.yaml:4: admin\.token: admin\.token must be at least 16 bytes \(it has 9\)/);
  assert.ok(!check.stderr.includes('change-me'), 'the token itself is not printed');
  const run = spawnSync(SLUICE_BIN, ['-c', file], { encoding: 'utf8', timeout: 10000 });
  assert.equal(run.status, 1);
  writeFileSync(file, 'server: { listen: "127.0.0.1:0" }\nadmin: { listen: "127.0.0.1:0", token: "change-me-please" }\nnetworks: { eth: { endpoints: ["http://127.0.0.1:1"] } }\n');
  const ok = spawnSync(SLUICE_BIN, ['--check', '-c', file], { encoding: 'utf8', timeout: 10000 });
  assert.equal(ok.status, 0, ok.stderr);
});
