// Local resource failures are sluice's own, never an upstream's: socket()
// failing with EMFILE, or no temp space for a large answer's buffer, is
// logged and counted (outcome local_error), answers 503 with Retry-After,
// and never feeds a breaker or a score. Before, each counted as a connect
// error or a reset of the endpoint: a short descriptor shortage opened
// every breaker of the network, and the network stayed down after it ended.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { startFake, startSluice, post, postFresh, call, sleep, adminGet, events, workerPids, waitFor, waitLog } from '../lib/harness.mjs';

let a, b;
const started = [];
before(async () => { [a, b] = await Promise.all(['a', 'b'].map((name) => startFake({ name }))); });
after(async () => { await Promise.all([...started, a, b].map((p) => p.stop())); });

const LINES = ['ranking: { probe_interval_ms: 0 }', 'breaker: { consecutive: 3, cooldown_ms: 60000 }'];

async function assertNobodyBlamed(s, n) {
  assert.deepEqual((await events(s)).filter((e) => e.kind === 'breaker_opened'), [], 'no breaker opened');
  const r = await post(s.url(), call('eth_chainId', [], 77));
  assert.equal(r.status, 200, r.text);
  await sleep(250);
  const v = (await adminGet(s, '/admin/endpoints')).json;
  for (const e of v) {
    assert.equal(e.breaker.state, 'closed', e.id);
    assert.equal(e.outcomes.connect_error, 0, e.id);
    assert.equal(e.outcomes.reset, 0, e.id);
    assert.equal(e.score.error_ratio, 0, `${e.id}: no score penalty`);
  }
  const local = v.reduce((x, e) => x + e.outcomes.local_error, 0);
  assert.ok(local >= n, `local_error counted (${local})`);
}

// The lowest descriptor numbers the process does not use.
function freeFds(pid, n) {
  const used = new Set(readdirSync(`/proc/${pid}/fd`).map(Number));
  const free = [];
  for (let fd = 0; free.length < n; fd++) if (!used.has(fd)) free.push(fd);
  return free;
}

// POSTs on one kept-alive connection (the agent's only socket).
function keptAlive() {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const send = (url, body) => new Promise((resolve, reject) => {
    const data = JSON.stringify(body);
    const req = http.request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text, json: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end(data);
  });
  return { send, close: () => agent.destroy() };
}

test('EMFILE on socket(): 503 local_error, no endpoint blamed, all well once descriptors are back', async () => {
  const s = await startSluice({ workers: 1, networks: { eth: { lines: LINES, endpoints: [{ id: 'a', url: a.url }, { id: 'b', url: b.url }] } } });
  started.push(s);
  const [pid] = await waitFor(async () => { const p = await workerPids(s.child.pid); return p.length ? p : null; }, { what: 'worker' });
  // Two descriptors left below the limit (soft and hard, so nothing raises
  // it back): an idle client connection takes one, the connection that
  // carries the calls the other, and no upstream socket can be opened.
  // the lowest third free descriptor over a few looks: one sampled while the
  // worker briefly held another (a file it reads now and then) would leave
  // room for an upstream socket
  let third = Infinity;
  for (let i = 0; i < 5; i++, await sleep(20)) third = Math.min(third, freeFds(pid, 3)[2]);
  execFileSync('prlimit', ['--pid', String(pid), `--nofile=${third}:${third}`]);
  const idle = net.connect(s.port, '127.0.0.1');
  await new Promise((r) => idle.once('connect', r));
  await sleep(100);
  const conn = keptAlive();
  try {
    for (let i = 0; i < 6; i++) {
      const r = await conn.send(s.url(), call('eth_getBalance', ['0x0000000000000000000000000000000000000000', 'latest'], i));
      assert.equal(r.status, 503, r.text);
      assert.equal(r.json.error.data.outcome, 'local_error');
      assert.ok(Number(r.headers['retry-after']) >= 1);
    }
    assert.equal((await a.stats()).requests + (await b.stats()).requests, 0, 'nothing reached an upstream');
    // a descriptor comes back: the very next call goes through
    idle.destroy();
    await sleep(200);
    const r = await conn.send(s.url(), call('eth_getBalance', ['0x0000000000000000000000000000000000000000', 'latest'], 9));
    assert.equal(r.status, 200, r.text);
  } finally {
    conn.close();
    idle.destroy();
  }
  await assertNobodyBlamed(s, 6);
  await waitLog(s, /sluice's own resources/);
});

// A Content-Length answer over 4 MiB is moved as it arrives into one buffer of
// its size (smaller ones stay in h2o's socket buffer, which moves to a temp
// file only past 32 MiB), so a missing temp folder does not fail it; the
// local_error class for temp space stays for answers h2o still buffers
// (chunked).
test('no temp space: a 40 MB answer still arrives, and no endpoint is blamed', async () => {
  const s = await startSluice({
    workers: 1,
    server: { max_response_bytes: 67108864 },
    networks: { eth: { lines: LINES, endpoints: [{ id: 'a', url: a.url }, { id: 'b', url: b.url }] } },
  }, { env: { TMPDIR: '/nonexistent-sluice-tmp' } });
  started.push(s);
  try {
    // 40 MB: past h2o's 32 MiB threshold, where the buffer moves to a temp file
    for (const f of [a, b]) await f.setMode('huge', { size: 40 * 1000 * 1000, method: 'eth_getLogs' });
    for (let i = 0; i < 4; i++) {
      const r = await post(s.url(), call('eth_getLogs', [{}], i));
      assert.equal(r.status, 200, r.text.slice(0, 300));
      assert.ok(r.text.length > 40 * 1000 * 1000, `the whole answer (${r.text.length} bytes)`);
    }
  } finally {
    for (const f of [a, b]) await f.setMode('ok');
  }
  await assertNobodyBlamed(s, 0);
});
