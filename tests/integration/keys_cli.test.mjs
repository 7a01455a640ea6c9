// `sluice key list|revoke|new --api` (issue 33): the binary asks a running
// sluice's admin API, at the config's admin.listen (or --admin), with
// SLUICE_ADMIN_TOKEN or the config's admin.token. Real processes.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startFake, startSluice, post, call, waitFor, SLUICE_BIN } from '../lib/harness.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const TOKEN = 'keycli-token-9e8d7c6b5a4f3e2d1c';
const WEB = 'sl_clikey0123456789abcdefghijk';
const sha = (k) => createHash('sha256').update(k).digest('hex');

const run = (args, env = {}) => new Promise((resolve) => {
  const e = { ...process.env, ...env };
  if (!('SLUICE_ADMIN_TOKEN' in env)) delete e.SLUICE_ADMIN_TOKEN;
  execFile(SLUICE_BIN, args, { env: e, timeout: 15000 }, (err, stdout, stderr) =>
    resolve({ code: err ? (err.code ?? 1) : 0, stdout, stderr }));
});

test('key new --api, list and revoke against a running sluice', async () => {
  const a = await startFake({ name: 'a' });
  started.push(a);
  const s = await startSluice({
    workers: 2,
    admin: `{ listen: "127.0.0.1:0", token: "${TOKEN}" }`,
    networks: { eth: { lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: [{ id: 'a', url: a.url }] } },
    extra: ['tiers: { pro: {} }', 'keys:', `  - { sha256: "${sha(WEB)}", tier: pro, name: web-app }`].join('\n'),
  });
  started.push(s);
  // the config as an operator has it: admin.listen names the port sluice listens on
  const conf = path.join(s.dir, 'cli.yaml');
  writeFileSync(conf, readFileSync(s.file, 'utf8').replace('listen: "127.0.0.1:0", token', `listen: "127.0.0.1:${new URL(s.admin).port}", token`));
  assert.notEqual(readFileSync(conf, 'utf8'), readFileSync(s.file, 'utf8'));

  const made = await run(['key', 'new', '--api', '-c', conf, '--name', 'ci-bot', '--tier', 'pro']);
  assert.equal(made.code, 0, made.stderr);
  const secret = made.stdout.match(/^key:\s+(sl_\S+)/m)?.[1];
  assert.ok(secret, made.stdout);
  assert.equal((await post(`${s.url('eth')}/${secret}`, call('eth_chainId'))).status, 200, 'the key made works');

  const listed = await run(['key', 'list', '-c', conf]);
  assert.equal(listed.code, 0, listed.stderr);
  const rows = listed.stdout.trim().split('\n');
  assert.match(rows[0], /^NAME\s+SOURCE\s+TIER\s+CALLS\s+REFUSALS\s+CREDITS_SPENT\s+SCOPES$/);
  assert.ok(rows.some((r) => /^web-app\s+config\s+pro\s/.test(r)), listed.stdout);
  assert.ok(rows.some((r) => /^ci-bot\s+api\s+pro\s/.test(r)), listed.stdout);
  assert.ok(!listed.stdout.includes(secret) && !listed.stdout.includes(sha(WEB)), 'never a secret or hash');

  // the token from the environment wins over the config's; a wrong one is refused
  const wrong = await run(['key', 'list', '-c', conf], { SLUICE_ADMIN_TOKEN: 'not-the-token-0123456789' });
  assert.equal(wrong.code, 1);
  assert.match(wrong.stderr, /401/);
  // --admin names the listener instead of admin.listen (the harness's config says port 0)
  const there = await run(['key', 'list', '-c', s.file, '--admin', s.admin], { SLUICE_ADMIN_TOKEN: TOKEN });
  assert.equal(there.code, 0, there.stderr);
  assert.match(there.stdout, /^ci-bot\s/m);

  const config = await run(['key', 'revoke', 'web-app', '-c', conf]);
  assert.equal(config.code, 1, 'a config key is changed in the file');
  assert.match(config.stderr, /409/);
  const gone = await run(['key', 'revoke', 'ci-bot', '-c', conf]);
  assert.equal(gone.code, 0, gone.stderr);
  assert.match(gone.stdout, /revoked: ci-bot/);
  // every worker within one state.refresh_ms tick
  await waitFor(async () => (await post(`${s.url('eth')}/${secret}`, call('eth_chainId'), { connection: 'close' })).status === 401,
    { what: 'the revoked key refused' });
  const again = await run(['key', 'revoke', 'ci-bot', '-c', conf]);
  assert.equal(again.code, 1);
  assert.match(again.stderr, /404/);
  assert.equal((await run(['key', 'list'])).code, 2, 'no -c: usage');
});
