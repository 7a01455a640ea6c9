// The shipped configs stay valid, and so does the compose file; the demo
// stops what it started.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { SLUICE_BIN, SRC, call, post, sleep, tempDir, waitFor } from '../lib/harness.mjs';

const env = { ...process.env, ALCHEMY_KEY: 'k', HELIUS_KEY: 'h', SLUICE_ADMIN_TOKEN: 'a-token-of-sixteen-bytes',
  REDIS_PASSWORD: 'a-redis-password', SLUICE_HOST: 'sluice-1' };

for (const cfg of ['deploy/config/example.yaml', 'deploy/config/compose.yaml', 'deploy/config/cluster.yaml']) {
  test(`sluice --check accepts ${cfg}`, () => {
    const r = spawnSync(SLUICE_BIN, ['--check', '-c', path.join(SRC, cfg)], { encoding: 'utf8', env });
    assert.equal(r.status, 0, r.stderr);
  });
}

test('docker-compose validates deploy/docker-compose.yml', (t) => {
  const probe = spawnSync('docker-compose', ['version'], { encoding: 'utf8' });
  if (probe.error) {
    // under tests/run-all.sh (which installs it) a missing tool fails; by hand it may skip
    assert.notEqual(process.env.SLUICE_REQUIRE_ALL, '1', 'docker-compose is not installed');
    t.skip('docker-compose is not installed (deploy/install-deps.sh installs it)');
    return;
  }
  const r = spawnSync('docker-compose', ['-f', path.join(SRC, 'deploy/docker-compose.yml'), 'config'],
    { encoding: 'utf8', env });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /fake-limited/);
});

test('the compose file\'s cluster profile: Redis and two sluice hosts, only with --profile cluster', (t) => {
  const probe = spawnSync('docker-compose', ['version'], { encoding: 'utf8' });
  if (probe.error) {
    assert.notEqual(process.env.SLUICE_REQUIRE_ALL, '1', 'docker-compose is not installed');
    t.skip('docker-compose is not installed (deploy/install-deps.sh installs it)');
    return;
  }
  const y = spawnSync('docker-compose', ['-f', path.join(SRC, 'deploy/docker-compose.yml'), '--profile', 'cluster',
    'config'], { encoding: 'utf8', env });
  assert.equal(y.status, 0, y.stderr);
  for (const s of ['redis:', 'sluice-1:', 'sluice-2:']) assert.match(y.stdout, new RegExp(`^  ${s}`, 'm'));
  // each of the three only with the profile (the default stack is as it was)
  assert.equal((y.stdout.match(/profiles:\n\s+- cluster/g) || []).length, 3);
  assert.match(y.stdout, /SLUICE_HOST: sluice-2/);
  assert.match(y.stdout, /appendonly/);
  assert.match(y.stdout, /cluster\.yaml/);
});

// deploy/demo.sh, run against the tree already built (--no-build): a
// signal to the script stops everything it started (the four fakes and
// sluice). Its fakes' PIDs used to be collected in a $( ) subshell, and
// sluice ran in the foreground, so SIGTERM left all five running.
const freePort = () => new Promise((resolve, reject) => {
  const srv = net.createServer();
  srv.once('error', reject);
  srv.listen(0, '127.0.0.1', () => { const { port } = srv.address(); srv.close(() => resolve(port)); });
});

// every process whose environment holds marker (inherited from the script,
// so the demo's children are found even if they were orphaned)
function marked(marker) {
  const out = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d) || Number(d) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${d}/environ`, 'latin1').split('\0').includes(marker)) out.push(Number(d));
    } catch { /* gone, or not ours */ }
  }
  return out;
}

const cmdline = (pid) => { try { return readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0'); } catch { return []; } };
// running: present and not a zombie (an orphan's reaper may be slow)
const alive = (pid) => { try { return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'latin1')); } catch { return false; } };

for (const sig of ['SIGTERM', 'SIGINT']) {
  test(`deploy/demo.sh stops every process it started on ${sig}`, { timeout: 90000 }, async () => {
    const [port, adminPort] = [await freePort(), await freePort()];
    const dir = tempDir('sluice-demo-');
    const marker = `SLUICE_DEMO_VAR=${dir}`;
    const child = spawn('bash', [path.join(SRC, 'deploy/demo.sh'), '--no-build'], {
      cwd: SRC, stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, SLUICE_PORT: String(port), SLUICE_ADMIN_PORT: String(adminPort),
        SLUICE_BUILD_DIR: path.dirname(path.dirname(SLUICE_BIN)), SLUICE_DEMO_VAR: dir },
    });
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { out += d; });
    const exited = new Promise((r) => child.on('exit', (code, signal) => r({ code, signal })));
    try {
      await waitFor(async () => {
        try {
          return (await post(`http://127.0.0.1:${port}/eth`, call('eth_chainId'))).status === 200;
        } catch { return false; }
      }, { timeoutMs: 30000, intervalMs: 200, what: `the demo answering (${out.slice(-500)})` });
      const pids = marked(marker).filter((p) => p !== child.pid);
      const named = (re) => pids.filter((p) => re.test(path.basename(cmdline(p)[0] ?? '')));
      assert.equal(named(/^fakeprovider$/).length, 4, `four fake providers among ${pids.join(' ')}`);
      assert.ok(named(/^sluice$/).length >= 2, `sluice's master and a worker: ${pids.join(' ')}`);
      child.kill(sig);
      const how = await Promise.race([exited, sleep(20000).then(() => 'still running')]);
      assert.notEqual(how, 'still running', `the script did not exit within 20 s of ${sig}`);
      await waitFor(() => pids.every((p) => !alive(p)), { timeoutMs: 20000, what: 'every child gone' })
        .catch(() => assert.deepEqual(pids.filter(alive).map((p) => cmdline(p).join(' ')), [], 'no process of the demo is left'));
    } finally {
      for (const p of marked(marker)) try { process.kill(p, 'SIGKILL'); } catch { /* gone */ }
    }
  });
}
