// Processes: SIGTERM drains a slow request in flight; a killed worker is
// respawned and service continues; --check and --version.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { startFake, startSluice, post, call, sleep, waitFor, workerPids, tempDir, SLUICE_BIN, waitLog } from '../lib/harness.mjs';

let a;

before(async () => { a = await startFake({ name: 'a' }); });
after(async () => { await a?.stop(); });

test('SIGTERM: stop accepting, finish the slow request in flight, exit 0', async () => {
  const s = await startSluice({ workers: 2, networks: { eth: { endpoints: [{ id: 'a', url: a.url }] } } });
  await a.setMode('slow', { delay_ms: 1500 });
  const inflight = post(s.url('eth'), call('eth_blockNumber', [], 'slow'));
  await sleep(300);
  s.child.kill('SIGTERM');
  await sleep(200);
  // the port is closed for new connections while the old request finishes
  await assert.rejects(post(s.url('eth'), call('eth_chainId')));
  const r = await inflight;
  assert.equal(r.status, 200);
  assert.equal(r.json.id, 'slow');
  const { code, signal } = await s.exited;
  assert.equal(signal, null);
  assert.equal(code, 0);
  await waitLog(s, /draining 1 request/);
  await a.setMode('ok');
});

test('kill -9 of a worker: it is respawned, logged, and service continues', async () => {
  const s = await startSluice({ workers: 2, networks: { eth: { endpoints: [{ id: 'a', url: a.url }] } } });
  try {
    const pids = await workerPids(s.child.pid);
    assert.equal(pids.length, 2);
    process.kill(pids[0], 'SIGKILL');
    // a kept-alive client connection to the killed worker dies with it: give the
    // client a moment to see that close, so the test measures sluice, not the race
    await sleep(200);
    for (let i = 0; i < 50; i++) {
      const r = await post(s.url('eth'), call('eth_chainId', [], i));
      assert.equal(r.status, 200);
    }
    await waitFor(async () => (await workerPids(s.child.pid)).length === 2 && !(await workerPids(s.child.pid)).includes(pids[0]),
      { what: 'respawned worker' });
    await waitLog(s, new RegExp(`worker \\d \\(pid ${pids[0]}\\) killed by signal 9`));
    await waitLog(s, /respawned as pid \d+/);
    const r = await post(s.url('eth'), call('eth_chainId'));
    assert.equal(r.status, 200);
  } finally {
    await s.stop();
  }
});

test('a second sluice on a port in use refuses to start, with a clear error', async () => {
  const s = await startSluice({ workers: 1, networks: { eth: { endpoints: [{ id: 'a', url: a.url }] } } });
  try {
    const dir = tempDir();
    const file = path.join(dir, 'c.yaml');
    writeFileSync(file, `server: { listen: "127.0.0.1:${s.port}" }\nadmin: { listen: off }\nnetworks: { eth: { endpoints: ["${a.url}"] } }\n`);
    const r = spawnSync(SLUICE_BIN, ['-c', file], { encoding: 'utf8', timeout: 10000 });
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, new RegExp(`cannot bind 127\\.0\\.0\\.1:${s.port}: Address already in use`));
    const ok = await post(s.url('eth'), call('eth_chainId'));
    assert.equal(ok.status, 200);
  } finally {
    await s.stop();
  }
});

test('--check prints every error with its line and exits non-zero; --version', async () => {
  const dir = tempDir();
  const file = path.join(dir, 'bad.yaml');
  writeFileSync(file, [
    'server:',
    '  workers: lots',
    'networks:',
    '  eth:',
    '    endpoints:',
    '      - url: "ftp://example.com"',
    '      - url: "http://ok.example"',
    '        max_inflight: -1',
  ].join('\n') + '\n');
  const r = spawnSync(SLUICE_BIN, ['--check', '-c', file], { encoding: 'utf8' });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /bad\.yaml:2: server\.workers/);
  assert.match(r.stderr, /bad\.yaml:6: networks\.eth\.endpoints\[0\]\.url/);
  assert.match(r.stderr, /bad\.yaml:8: networks\.eth\.endpoints\[1\]\.max_inflight/);
  const v = execFileSync(SLUICE_BIN, ['--version'], { encoding: 'utf8' });
  assert.match(v, /^sluice \d+\.\d+\.\d+/);
});

test('a config with only endpoint URLs works, ${ENV} expands', async () => {
  const s = await startSluice(
    `server: { listen: "127.0.0.1:0", workers: 1 }\nadmin: { listen: off }\nnetworks:\n  eth:\n    endpoints:\n      - "\${UPSTREAM_URL}"\n`,
    { env: { UPSTREAM_URL: a.url } });
  try {
    const r = await post(s.url('eth'), call('eth_chainId'));
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('x-sluice-endpoint'), 'e0');
  } finally {
    await s.stop();
  }
});

test('admin: /healthz and /readyz on the admin listener', async () => {
  const s = await startSluice({ workers: 1, networks: { eth: { endpoints: [{ id: 'a', url: a.url }] } } });
  try {
    let r = await fetch(`${s.admin}/healthz`);
    assert.equal(r.status, 200);
    r = await fetch(`${s.admin}/readyz`);
    assert.equal(r.status, 200);
    r = await fetch(`${s.admin}/nope`);
    assert.equal(r.status, 404);
  } finally {
    await s.stop();
  }
});
