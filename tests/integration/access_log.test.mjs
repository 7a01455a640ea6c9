// The access log's buffer: whole lines under concurrent load from 2 workers, a
// line of an idle worker out within the housekeeping timer, no line lost at
// SIGTERM, a full stderr pipe never stalls the workers (lines are dropped and
// counted instead, diagnostic lines too), and write(2) calls far fewer than
// requests.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { startFake, startSluice, renderConfig, tempDir, post, call, waitFor, workerPids, sleep, SLUICE_BIN } from '../lib/harness.mjs';

let fake;

before(async () => {
  fake = await startFake({ name: 'a' });
});

after(async () => {
  await fake?.stop();
});

const net = () => ({ eth: { lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: [{ id: 'a', url: fake.url }] } });

// n calls over `conc` concurrent loops; a long method name and a batch now and
// then make the lines differ in length. Returns the statuses.
async function load(url, n, conc = 32) {
  let next = 0;
  const statuses = [];
  await Promise.all(Array.from({ length: conc }, async () => {
    while (next < n) {
      const i = next++;
      let body = call('eth_blockNumber', [], i);
      if (i % 7 === 0) body = call('x_' + 'long'.repeat(30), [], i); // unknown read, 122 bytes of name
      if (i % 11 === 0) body = [call('eth_chainId', [], i), call('eth_blockNumber', [], i + 1)];
      const r = await post(url, body);
      statuses.push(r.status);
    }
  }));
  return statuses;
}

const accessLines = (text) => text.split('\n').filter((l) => l.includes('"type":"access"'));

test('under concurrent load from 2 workers every access line is whole and parses', async () => {
  const s = await startSluice({ workers: 2, admin: false, networks: net() });
  try {
    const n = 3000;
    const statuses = await load(s.url(), n);
    assert.equal(statuses.length, n);
    const lines = await waitFor(() => { const l = accessLines(s.logs()); return l.length >= n && l; },
      { timeoutMs: 5000, what: `${n} access lines` });
    assert.equal(lines.length, n);
    for (const l of lines) {
      const j = JSON.parse(l); // throws on a line cut or spliced with another
      assert.equal(j.type, 'access');
      assert.equal(j.network, 'eth');
    }
    // nothing but whole lines on stderr: no fragment of an access line elsewhere
    const fragments = s.logs().split('\n').filter((l) => l.includes('"access"') && !l.startsWith('{"ts":'));
    assert.deepEqual(fragments, []);
  } finally {
    await s.stop();
  }
});

test('a line that would exceed PIPE_BUF is written compact and whole', async () => {
  const s = await startSluice({ workers: 1, admin: false, networks: net() });
  try {
    // 8 method names of 121 characters, 120 of them control bytes escaped as \u0001 in the line
    const name = 'x' + '\\u0001'.repeat(120);
    const body = '[' + Array.from({ length: 8 }, (_, i) => `{"jsonrpc":"2.0","id":${i},"method":"${name}","params":[]}`).join(',') + ']';
    assert.equal((await post(s.url(), body)).status, 200);
    const [line] = await waitFor(() => { const l = accessLines(s.logs()); return l.length && l; }, { what: 'the access line' });
    assert.ok(line.length + 1 <= 4096, `${line.length + 1} bytes`);
    const j = JSON.parse(line);
    assert.equal(j.truncated, true);
    assert.equal(j.calls, 8);
    assert.equal(j.methods.length, 1);
    assert.equal(j.methods[0], 'x' + '\u0001'.repeat(120));
    assert.ok(j.upstream.every((u) => u.url === undefined && u.endpoint === 'a'));
  } finally {
    await s.stop();
  }
});

test('an idle worker writes its line within the housekeeping timer', async () => {
  const s = await startSluice({ workers: 1, admin: false, networks: net() });
  try {
    await sleep(300); // idle first: the loop waits in epoll
    const t0 = Date.now();
    const r = await post(s.url(), call('eth_blockNumber', [], 'idle-1'));
    assert.equal(r.status, 200);
    await waitFor(() => accessLines(s.logs()).length === 1, { timeoutMs: 1000, intervalMs: 10, what: 'the access line' });
    assert.ok(Date.now() - t0 < 1000);
  } finally {
    await s.stop();
  }
});

test('SIGTERM loses no access line: lines = requests answered', async () => {
  const s = await startSluice({ workers: 2, admin: false, networks: net() });
  const n = 1500;
  const statuses = await load(s.url(), n);
  assert.equal(statuses.filter((x) => x === 200).length, n);
  // at once: most lines are still in the workers' buffers (below a quarter of 256 KiB)
  const exit = await s.stop('SIGTERM');
  assert.equal(exit.code, 0, s.logs().slice(-2000));
  const lines = accessLines(s.logs());
  assert.equal(lines.length, n);
  for (const l of lines) JSON.parse(l);
});

// sluice with its stderr on a pipe this test reads, and can stop reading:
// { url, admin, err() (what was read), pause(), resume(), stop() }.
async function startPiped(conf) {
  const dir = tempDir();
  const file = path.join(dir, 'sluice.yaml');
  writeFileSync(file, renderConfig({ statePath: path.join(dir, 'state'), ...conf }));
  const child = spawn(SLUICE_BIN, ['-c', file], { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
  const exited = new Promise((r) => child.once('exit', (code, signal) => r({ code, signal })));
  let err = '';
  const onData = (d) => { err += d; };
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', onData);
  const stop = async () => {
    child.kill('SIGTERM');
    // a worker stuck in write(2) (the old behaviour) never exits: end the group
    let t2;
    const done = await Promise.race([exited, new Promise((r) => { t2 = setTimeout(() => r(null), 10000); })]);
    clearTimeout(t2);
    if (!done) { try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ } await exited; }
  };
  try {
    await waitFor(() => /admin API on http:\/\/[\d.]+:\d+/.test(err), { timeoutMs: 15000, what: 'sluice to start' });
  } catch (e) {
    await stop();
    throw e;
  }
  return {
    url: `http://127.0.0.1:${Number(err.match(/listening on http:\/\/[\d.]+:(\d+)/)[1])}/eth`,
    admin: 'http://' + err.match(/admin API on http:\/\/([\d.]+:\d+)/)[1],
    err: () => err,
    // stop reading: the pipe (64 KiB) fills, then every write to it would block
    pause: () => { child.stderr.off('data', onData); child.stderr.pause(); },
    resume: () => { child.stderr.on('data', onData); child.stderr.resume(); },
    stop,
  };
}

async function accessDropped(admin) {
  const m = (await (await fetch(admin + '/metrics')).text()).match(/^sluice_access_log_dropped_total (\d+)$/m);
  return m ? Number(m[1]) : 0;
}

test('a full stderr pipe does not stall the workers: lines are dropped, counted and reported', async () => {
  const sl = await startPiped({ workers: 2, networks: net(), server: { access_log_buffer_bytes: 16384 } });
  try {
    sl.pause();
    const n = 4000; // ~1 MB of lines, far over the pipe and both buffers
    const started = Date.now();
    let timer;
    const statuses = await Promise.race([
      load(sl.url, n, 16),
      new Promise((_, reject) => { timer = setTimeout(() => reject(new Error('requests stalled behind a full stderr pipe')), 60000); }),
    ]).finally(() => clearTimeout(timer));
    assert.equal(statuses.filter((x) => x === 200).length, n, `took ${Date.now() - started} ms`);
    const metric = await waitFor(async () => { const d = await accessDropped(sl.admin); return d > 0 && d; },
      { timeoutMs: 5000, what: 'sluice_access_log_dropped_total > 0' });
    // read again: the lines kept come out whole, then the warning with the count
    sl.resume();
    await waitFor(() => /access log: \d+ line\(s\) dropped/.test(sl.err()), { timeoutMs: 5000, what: 'the dropped-lines warning' });
    const lines = accessLines(sl.err());
    for (const l of lines) if (l.startsWith('{')) JSON.parse(l);
    const said = [...sl.err().matchAll(/access log: (\d+) line\(s\) dropped/g)].reduce((a, m) => a + Number(m[1]), 0);
    assert.ok(said > 0 && said <= metric + n, `warned ${said}, metric ${metric}`);
    assert.ok(lines.length < n, `${lines.length} lines of ${n}: some must have been dropped`);
  } finally {
    await sl.stop();
  }
});

// The same pipe full, and the worker has diagnostic lines to write (breaker
// changes and demotions of an endpoint that resets every connection): each
// waits at most 20 ms for room and is dropped, where a blocking write(2)
// stopped the worker until the reader came back. The next line that goes
// out says how many were dropped.
test('a full stderr pipe does not stall diagnostic lines either: a worker logging breaker changes keeps answering', async () => {
  const bad = await startFake({ name: 'bad' });
  const sl = await startPiped({
    workers: 1, server: { access_log_buffer_bytes: 16384 },
    networks: { eth: {
      lines: ['ranking: { probe_interval_ms: 0 }', 'breaker: { consecutive: 2, cooldown_ms: 300 }',
        'coalesce: { max_waiters: 0 }', 'hedge: { enabled: false }'],
      endpoints: [{ id: 'bad', url: bad.url }, { id: 'a', url: fake.url }] } },
  });
  try {
    sl.pause();
    // access lines fill the pipe: the access log says so by dropping some
    assert.ok((await load(sl.url, 3000, 16)).every((x) => x === 200));
    await waitFor(async () => (await accessDropped(sl.admin)) > 0,
      { timeoutMs: 5000, what: 'the pipe full (sluice_access_log_dropped_total > 0)' });
    await bad.setMode('reset');
    let timer;
    const answered = await Promise.race([
      (async () => {
        const st = [];
        for (let i = 0; i < 24; i++) {
          st.push((await post(sl.url, call('eth_blockNumber', [], i))).status);
          if (i % 6 === 5) await sleep(350); // past the cooldown: a half-open trial, another change
        }
        return st;
      })(),
      new Promise((_, reject) => { timer = setTimeout(() => reject(new Error('the worker stalled on a diagnostic line')), 30000); }),
    ]).finally(() => clearTimeout(timer));
    assert.deepEqual(answered.filter((x) => x !== 200), [], 'every call answered (by a)');
    sl.resume();
    const report = /log: (\d+) line\(s\) dropped before the one above/;
    await waitFor(() => report.test(sl.err()), { timeoutMs: 5000, what: 'the dropped-lines report' });
    assert.ok(Number(sl.err().match(report)[1]) >= 1);
    for (const l of sl.err().split('\n')) if (l.startsWith('{')) JSON.parse(l); // whole lines only
  } finally {
    await sl.stop();
    await bad.stop();
  }
});

// strace counts the worker's write(2) calls to stderr while it serves a fixed
// number of requests: whole buffers, not one call per line.
test('a worker makes far fewer write(2) calls to stderr than it serves requests', async () => {
  const s = await startSluice({ workers: 1, admin: false, networks: net() });
  const out = path.join(s.dir, 'strace.txt');
  try {
    const [worker] = await workerPids(s.child.pid);
    const tracer = spawn('strace', ['-f', '-qq', '-e', 'trace=write,writev,sendto,sendmsg', '-e', 'signal=none', '-o', out, '-p', String(worker)],
      { stdio: ['ignore', 'ignore', 'pipe'] });
    let terr = '';
    tracer.stderr.on('data', (d) => { terr += d; });
    const tracerExit = new Promise((r) => tracer.once('exit', r));
    await waitFor(() => { try { return readFileSync(`/proc/${worker}/status`, 'utf8').match(/^TracerPid:\s+([1-9]\d*)/m); } catch { return false; } },
      { timeoutMs: 5000, what: `strace to attach (${terr})` });
    const n = 2000;
    const statuses = await load(s.url(), n, 8);
    assert.equal(statuses.filter((x) => x === 200).length, n);
    await waitFor(() => accessLines(s.logs()).length >= n, { timeoutMs: 5000, what: 'every line' });
    tracer.kill('SIGINT');
    await tracerExit;
    const stderrWrites = readFileSync(out, 'utf8').split('\n').filter((l) => /\b(write|writev|sendto|sendmsg)\(2,/.test(l)).length;
    assert.ok(stderrWrites > 0, 'strace saw the access lines written');
    assert.ok(stderrWrites * 10 <= n, `${stderrWrites} write calls to stderr for ${n} requests`);
  } finally {
    await s.stop();
  }
});

