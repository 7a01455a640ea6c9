// Reload: SIGHUP and POST /admin/reload re-read the config, validate it as
// --check does, start new workers on the same sockets and drain the old ones.
// Under load no request fails and no connection breaks; a broken config
// changes nothing; both outcomes are events; shared state carries over by id.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { writeFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import {
  startFake, startSluice, renderConfig, post, call, sleep, waitFor, workerPids,
  waitLog,
} from '../lib/harness.mjs';

let a, b, c;
before(async () => {
  [a, b, c] = await Promise.all([startFake({ name: 'a' }), startFake({ name: 'b' }), startFake({ name: 'c' })]);
});
after(async () => { await Promise.all([a, b, c].map((f) => f?.stop())); });

// The YAML of a config for a running sluice (same state folder).
const write = (s, cfg) => writeFileSync(s.file, renderConfig({ statePath: s.statePath, ...cfg }));

// A load loop: `keepalive` loops reuse connections (fetch keeps them alive),
// `fresh` loops open a new connection per request (the accept path).
function startLoad(url, { keepalive = 6, fresh = 2 } = {}) {
  const st = { ok: 0, failed: 0, errors: 0, details: [] };
  let stopping = false;
  const body = JSON.stringify(call('eth_blockNumber'));
  const note = (what) => { if (st.details.length < 20) st.details.push(what); };
  async function keepLoop() {
    while (!stopping) {
      try {
        // a request that hangs is a failure too, not a test that never ends
        const res = await fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json' }, signal: AbortSignal.timeout(10000) });
        const text = await res.text();
        let json;
        try { json = JSON.parse(text); } catch { /* counted below */ }
        if (res.status === 200 && typeof json?.result === 'string') st.ok++;
        else { st.failed++; note(`${res.status} ${text.slice(0, 200)}`); }
      } catch (e) { st.errors++; note(`socket: ${e.cause?.code || e.message}`); }
    }
  }
  const freshOnce = () => new Promise((resolve) => {
    const req = http.request(url, { method: 'POST', agent: false, headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { text += d; });
      res.on('end', () => {
        let json;
        try { json = JSON.parse(text); } catch { /* counted below */ }
        if (res.statusCode === 200 && typeof json?.result === 'string') st.ok++;
        else { st.failed++; note(`${res.statusCode} ${text.slice(0, 200)}`); }
        resolve();
      });
      res.on('error', (e) => { st.errors++; note(`socket: ${e.code || e.message}`); resolve(); });
    });
    req.on('error', (e) => { st.errors++; note(`socket: ${e.code || e.message}`); resolve(); });
    req.setTimeout(10000, () => req.destroy(new Error('no answer within 10 s')));
    req.end(body);
  });
  async function freshLoop() { while (!stopping) await freshOnce(); }
  const loops = [...Array.from({ length: keepalive }, keepLoop), ...Array.from({ length: fresh }, freshLoop)];
  return { st, stop: async () => { stopping = true; await Promise.all(loops); return st; } };
}

// Admin calls on a new connection each: a kept-alive one may still reach a
// draining worker of the previous configuration (it answers once more, then
// closes), or be closed by it as it exits while the client reuses it.
function adminFresh(s, method, p, token) {
  return new Promise((resolve, reject) => {
    const headers = token ? { authorization: `Bearer ${token}` } : {};
    const req = http.request(`${s.admin}${p}`, { method, agent: false, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { text += d; });
      res.on('end', () => {
        let json;
        try { json = JSON.parse(text); } catch { /* not JSON */ }
        resolve({ status: res.statusCode, json, connection: res.headers.connection });
      });
    });
    req.on('error', reject);
    req.end();
  });
}
const endpointsOf = async (s, token) => (await adminFresh(s, 'GET', '/admin/endpoints', token)).json;
const events = async (s, since, token) => (await adminFresh(s, 'GET', `/admin/events?since=${since}&limit=1000`, token)).json;
const kinds = (evs) => evs.map((e) => e.kind);
async function waitEvent(s, since, kind, token) {
  return waitFor(async () => (await events(s, since, token)).find((e) => e.kind === kind), { what: `a ${kind} event`, timeoutMs: 15000 });
}
const lastSeq = async (s, token) => { const evs = await events(s, 0, token); return evs.length ? evs[evs.length - 1].seq : 0; };
const disjoint = (x, y) => x.every((p) => !y.includes(p));

test('SIGHUP under load: an endpoint added, then a broken config refused; no request fails, state carries over', async () => {
  const two = { workers: 2, networks: { eth: { endpoints: [{ id: 'a', url: a.url }, { id: 'b', url: b.url }] } } };
  const three = { workers: 2, networks: { eth: { endpoints: [{ id: 'a', url: a.url }, { id: 'b', url: b.url }, { id: 'c', url: c.url }] } } };
  const s = await startSluice(two);
  let load;
  try {
    // an operator's drain is shared state: it must survive the reload
    assert.equal((await adminFresh(s, 'POST', '/admin/endpoints/eth/b/drain')).status, 200);
    load = startLoad(s.url('eth'));
    await sleep(800);
    const gen0 = await workerPids(s.child.pid);
    assert.equal(gen0.length, 2);
    const before = (await endpointsOf(s)).find((e) => e.id === 'a').requests;
    assert.ok(before > 0);
    const seq0 = await lastSeq(s);

    write(s, three);
    s.child.kill('SIGHUP');
    const ok = await waitEvent(s, seq0, 'config_reloaded');
    assert.match(ok.reason, /\+endpoint eth\/c/);
    assert.equal(ok.count, 1);
    // the old workers drained and left; two new ones serve
    const gen1 = await waitFor(async () => {
      const p = await workerPids(s.child.pid);
      return p.length === 2 && disjoint(p, gen0) ? p : null;
    }, { what: 'the previous workers to exit' });
    const eps = await endpointsOf(s);
    assert.deepEqual(eps.map((e) => e.id), ['a', 'b', 'c']);
    assert.equal(eps.find((e) => e.id === 'b').drained, true, 'the drain carried over');
    // counters are per worker slot: the new workers write their own, nothing is lost
    await sleep(300);
    const after1 = (await endpointsOf(s)).find((e) => e.id === 'a').requests;
    assert.ok(after1 >= before, `requests at a went from ${before} to ${after1}`);

    // the new workers route with the new config: with a drained, only c is left
    const c0 = (await c.stats()).calls;
    assert.equal((await adminFresh(s, 'POST', '/admin/endpoints/eth/a/drain')).status, 200);
    await waitFor(async () => (await c.stats()).calls > c0 + 50, { what: 'traffic at the new endpoint' });

    // a broken file: nothing changes, the errors (with lines) are an event
    const seq1 = await lastSeq(s);
    const text = renderConfig({ statePath: s.statePath, ...three }).replace(`url: "${c.url}"`, `url: "${c.url}"\n        max_inflight: lots`);
    const line = text.split('\n').findIndex((l) => l.includes('max_inflight: lots')) + 1;
    writeFileSync(s.file, text);
    s.child.kill('SIGHUP');
    const bad = await waitEvent(s, seq1, 'config_reload_failed');
    assert.match(bad.reason, new RegExp(`sluice\\.yaml:${line}: networks\\.eth\\.endpoints\\[2\\]\\.max_inflight`));
    assert.equal(bad.count, 1);
    await waitLog(s, new RegExp(`sluice\\.yaml:${line}: networks\\.eth\\.endpoints\\[2\\]\\.max_inflight`));
    await sleep(500);
    assert.deepEqual((await workerPids(s.child.pid)).sort(), gen1.sort(), 'the running workers were left alone');
    assert.deepEqual((await endpointsOf(s)).map((e) => e.id), ['a', 'b', 'c']);
    await sleep(300);

    const st = await load.stop();
    assert.equal(st.failed, 0, st.details.join('\n'));
    assert.equal(st.errors, 0, st.details.join('\n'));
    assert.ok(st.ok > 200, `only ${st.ok} requests served`);
    assert.equal(s.child.exitCode, null, 'the master is alive');
    assert.deepEqual(kinds(await events(s, seq0)).filter((k) => k.startsWith('config_')), ['config_reloaded', 'config_reload_failed']);
  } finally {
    await load?.stop();
    await s.stop();
  }
});

test('POST /admin/reload: token-protected, answers with the outcome; settings that need a restart are refused', async () => {
  const admin = (token) => `{ listen: "127.0.0.1:0", token: "${token}" }`;
  const base = { workers: 2, admin: admin('tok-one-7f3a9-0123456'), networks: { eth: { endpoints: [{ id: 'a', url: a.url }, { id: 'b', url: b.url }] } } };
  const s = await startSluice(base);
  const t1 = 'tok-one-7f3a9-0123456', t2 = 'tok-two-8e4b0-0123456';
  try {
    assert.equal((await adminFresh(s, 'POST', '/admin/reload', undefined)).status, 401);
    assert.equal((await adminFresh(s, 'POST', '/admin/reload', 'wrong')).status, 401);

    // b removed, a pointed at another provider (same id: its history stays)
    write(s, { ...base, networks: { eth: { endpoints: [{ id: 'a', url: c.url }] } } });
    let r = await adminFresh(s, 'POST', '/admin/reload', t1);
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal(r.json.status, 'reloaded');
    assert.equal(r.json.event.kind, 'config_reloaded');
    assert.equal(r.json.event.reason, '~endpoint eth/a (url); -endpoint eth/b');
    assert.equal(r.connection, 'close', 'the answer comes from a worker that drains');
    const eps = (await adminFresh(s, 'GET', '/admin/endpoints', t1)).json;
    assert.deepEqual(eps.map((e) => [e.id, e.url]), [['a', c.url]]);
    const c0 = (await c.stats()).calls;
    assert.equal((await post(s.url('eth'), call('eth_chainId'))).status, 200);
    assert.ok((await c.stats()).calls > c0);

    // broken: 422 with the line, nothing changed
    const pids = await workerPids(s.child.pid);
    writeFileSync(s.file, renderConfig({ statePath: s.statePath, ...base }).replace('workers: 2', 'workers: two'));
    r = await adminFresh(s, 'POST', '/admin/reload', t1);
    assert.equal(r.status, 422);
    assert.equal(r.json.status, 'failed');
    assert.equal(r.json.event.kind, 'config_reload_failed');
    assert.match(r.json.event.reason, /^1 error\(s\): sluice\.yaml:\d+: server\.workers: /);

    // a new worker count needs a restart: refused, the same workers stay
    write(s, { ...base, workers: 3 });
    r = await adminFresh(s, 'POST', '/admin/reload', t1);
    assert.equal(r.status, 422);
    assert.equal(r.json.event.reason, 'server.workers (2 -> 3) needs a restart');
    assert.deepEqual((await workerPids(s.child.pid)).sort(), pids.sort());
    assert.deepEqual(((await adminFresh(s, 'GET', '/admin/endpoints', t1)).json).map((e) => e.id), ['a']);

    // valid for --check, but a worker cannot load it: the new workers fail, the old ones never noticed
    const pem = path.join(s.dir, 'garbage.pem');
    writeFileSync(pem, 'not a certificate\n');
    write(s, { ...base, networks: { eth: { endpoints: [{ id: 'a', url: c.url }, { id: 'tls', url: 'https://127.0.0.1:1', tls_ca_file: `"${pem}"` }] } } });
    r = await adminFresh(s, 'POST', '/admin/reload', t1);
    assert.equal(r.status, 422, JSON.stringify(r.json));
    assert.match(r.json.event.reason, /a worker could not start with the new configuration/);
    assert.deepEqual((await workerPids(s.child.pid)).sort(), pids.sort());
    assert.deepEqual((await adminFresh(s, 'GET', '/admin/endpoints', t1)).json.map((e) => e.id), ['a']);
    assert.equal((await post(s.url('eth'), call('eth_chainId'))).status, 200);

    // a new admin token: the answer comes from a worker with the old one, the new workers want the new one
    write(s, { ...base, admin: admin(t2) });
    r = await adminFresh(s, 'POST', '/admin/reload', t1);
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.match(r.json.event.reason, /~setting admin\.token/);
    assert.doesNotMatch(JSON.stringify(r.json), /tok-/);
    await waitFor(async () => disjoint(await workerPids(s.child.pid), pids), { what: 'the previous workers to exit' });
    assert.equal((await adminFresh(s, 'GET', '/admin/endpoints', t1)).status, 401);
    assert.equal((await adminFresh(s, 'GET', '/admin/endpoints', t2)).status, 200);
    assert.doesNotMatch(s.logs(), /tok-(one|two)/);
  } finally {
    await s.stop();
  }
});

// A request on a kept-alive connection, answered slowly.
function slowRequest(url, agent, id) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode, connection: res.headers.connection, json: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end(JSON.stringify(call('eth_blockNumber', [], id)));
  });
}

test('requests in flight finish across reloads; kept-alive connections close after them; a third overlapping reload waits', async () => {
  // one worker: each generation's draining worker holds one of the counter slots
  const cfg = { workers: 1, server: { shutdown_grace_ms: 10000 }, networks: { eth: { endpoints: [{ id: 'a', url: a.url }] } } };
  const s = await startSluice(cfg);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  try {
    await a.setMode('slow', { delay_ms: 2500, method: 'eth_blockNumber' });
    const seq0 = await lastSeq(s);
    const first = slowRequest(s.url('eth'), agent, 'first');
    await sleep(300);
    s.child.kill('SIGHUP');           // the workers holding `first` drain
    await waitEvent(s, seq0, 'config_reloaded');
    const seq1 = await lastSeq(s);
    const second = slowRequest(s.url('eth'), agent, 'second');
    await sleep(300);
    s.child.kill('SIGHUP');           // and the ones holding `second`
    await waitFor(async () => (await events(s, seq1)).some((e) => e.kind === 'config_reloaded'), { what: 'the second reload' });
    const seq2 = await lastSeq(s);
    s.child.kill('SIGHUP');           // two generations still drain: refused
    const busy = await waitEvent(s, seq2, 'config_reload_failed');
    assert.match(busy.reason, /two earlier reloads are still draining/);
    // meanwhile new requests are served
    assert.equal((await post(s.url('eth'), call('eth_chainId'))).status, 200);
    for (const [p, id] of [[first, 'first'], [second, 'second']]) {
      const r = await p;
      assert.equal(r.status, 200);
      assert.equal(r.json.id, id);
      assert.equal(r.connection, 'close', 'a draining worker closes the connection after its answer');
    }
    // once they are gone a reload goes through again
    await waitFor(async () => (await workerPids(s.child.pid)).length === 1, { what: 'the draining workers to exit' });
    const seq3 = await lastSeq(s);
    s.child.kill('SIGHUP');
    await waitEvent(s, seq3, 'config_reloaded');
  } finally {
    agent.destroy();
    await a.setMode('ok');
    await s.stop();
  }
});

test('the master keeps supervising while a reload\'s new workers come up: a worker killed meanwhile is respawned at once', async () => {
  // every worker takes 3 s to be ready (a test hook): the reload's too
  const cfg = { workers: 2, networks: { eth: { endpoints: [{ id: 'a', url: a.url }] } } };
  const s = await startSluice(cfg, { env: { ...process.env, SLUICE_TEST_READY_DELAY_MS: '3000' } });
  try {
    const old = await workerPids(s.child.pid);
    assert.equal(old.length, 2);
    const seq0 = await lastSeq(s);
    s.child.kill('SIGHUP');
    await waitFor(async () => (await workerPids(s.child.pid)).length === 4, { what: 'the new workers started' });
    const before = new Set(await workerPids(s.child.pid));
    await sleep(300);
    const t0 = Date.now();
    process.kill(old[0], 'SIGKILL');
    // reaped: its zombie is gone (the master called waitpid)
    await waitFor(() => !existsSync(`/proc/${old[0]}`), { timeoutMs: 8000, intervalMs: 10, what: 'the killed worker reaped' });
    const reaped = Date.now() - t0;
    let took = -1;
    await waitFor(async () => (await workerPids(s.child.pid)).some((p) => !before.has(p)),
      { timeoutMs: 3000, intervalMs: 10, what: 'the killed worker respawned' }).then(() => { took = Date.now() - t0; }, () => {});
    console.log(`a worker killed 300 ms into a reload whose workers need 3 s: reaped after ${reaped} ms, respawned after ${took} ms`);
    assert.ok(reaped < 1000, `the master was not blocked by the reload: reaped after ${reaped} ms`);
    assert.ok(took >= 0 && took < 1000, `respawned within the backoff, not after the reload: ${took} ms`);
    const ok = await waitEvent(s, seq0, 'config_reloaded');
    assert.ok(ok.duration_ms >= 3000, `the reload waited for its workers (${ok.duration_ms} ms)`);
    assert.equal((await post(s.url('eth'), call('eth_chainId'))).status, 200);
    // the respawned worker was of the old generation: it drains with the others
    await waitFor(async () => (await workerPids(s.child.pid)).length === 2, { timeoutMs: 15000, what: 'two workers left' });
  } finally {
    await s.stop();
  }
});
