// A config key with the name of an API key made at run time (issue 33):
// --check says so and fails, a reload is refused (the running config keeps
// serving), and sluice does not start with it.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { startFake, startSluice, renderConfig, post, call, waitLog, SLUICE_BIN } from '../lib/harness.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const TOKEN = 'clash-token-0123456789abcdef01';
const sha = (k) => createHash('sha256').update(k).digest('hex');
const K1 = 'sl_clashone0123456789abcdefgh', K2 = 'sl_clashtwo0123456789abcdefgh';

test('a config key named as an API key: --check error, reload refused, no start', async () => {
  const a = await startFake({ name: 'a' });
  started.push(a);
  const cfg = (statePath, keys) => renderConfig({
    workers: 1,
    statePath,
    admin: `{ listen: "127.0.0.1:0", token: "${TOKEN}" }`,
    networks: { eth: { lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: [{ id: 'a', url: a.url }] } },
    extra: `tiers: { pro: {} }\nkeys:\n${keys}`,
  });
  const s = await startSluice({
    workers: 1,
    admin: `{ listen: "127.0.0.1:0", token: "${TOKEN}" }`,
    networks: { eth: { lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: [{ id: 'a', url: a.url }] } },
    extra: `tiers: { pro: {} }\nkeys:\n  - { sha256: "${sha(K1)}", tier: pro, name: one }`,
  });
  started.push(s);
  const res = await fetch(`${s.admin}/admin/keys`, {
    method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify({ name: 'made', tier: 'pro' }),
  });
  assert.equal(res.status, 201, await res.text());
  const clashing = cfg(s.statePath, `  - { sha256: "${sha(K1)}", tier: pro, name: one }\n  - { sha256: "${sha(K2)}", tier: pro, name: made }`);
  writeFileSync(s.file, clashing);
  const check = spawnSync(SLUICE_BIN, ['--check', '-c', s.file], { encoding: 'utf8', timeout: 10000 });
  assert.equal(check.status, 1, check.stdout + check.stderr);
  assert.match(check.stderr, /keys\[1\]: the name 'made' is an API key's made at run time/);
  s.child.kill('SIGHUP');
  await waitLog(s, /reload failed: keys\[1\]: the name 'made'/);
  assert.equal((await post(s.url('eth'), call('eth_chainId'), { 'x-api-key': K1 })).status, 200, 'still serving');
  assert.equal((await post(s.url('eth'), call('eth_chainId'), { 'x-api-key': K2 })).status, 401, 'the new config not taken');
  await s.stop();
  const start = spawnSync(SLUICE_BIN, ['-c', s.file], { encoding: 'utf8', timeout: 20000 });
  assert.notEqual(start.status, 0, start.stderr);
  assert.match(start.stderr, /the name 'made' is an API key's made at run time/);
});
