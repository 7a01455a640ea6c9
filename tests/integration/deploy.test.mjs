// The shipped configs stay valid, and so does the compose file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { SLUICE_BIN, SRC } from '../lib/harness.mjs';

const env = { ...process.env, ALCHEMY_KEY: 'k', HELIUS_KEY: 'h', SLUICE_ADMIN_TOKEN: 'a-token-of-sixteen-bytes' };

for (const cfg of ['deploy/config/example.yaml', 'deploy/config/compose.yaml']) {
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
