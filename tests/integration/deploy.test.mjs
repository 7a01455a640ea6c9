// The shipped configs stay valid, and so does the compose file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { SLUICE_BIN, SRC } from '../lib/harness.mjs';

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
