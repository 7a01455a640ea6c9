// The operator page's Keys table (issue 33) in a real headless Chromium: it
// lists GET /admin/keys (a config key and one made at run time) with source,
// tier, scopes and the spend /metrics counts, and never shows a secret.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { startFake, startSluice, post, call } from '../lib/harness.mjs';
import { launch, needChromium } from '../lib/cdp.mjs';

const started = [];
const browsers = [];
after(async () => {
  await Promise.all(browsers.map((b) => b.close()));
  await Promise.all(started.map((p) => p.stop()));
});

const TOKEN = 'opKeys-2b7c9e-Tok3n-8a41';
const WEB = 'sl_pagekey0123456789abcdefghij';
const sha = (k) => createHash('sha256').update(k).digest('hex');

test('the Keys table lists every key with its scopes and spend', async (t) => {
  if (!needChromium(t)) return;
  const a = await startFake({ name: 'a' });
  started.push(a);
  const s = await startSluice({
    workers: 2,
    admin: `{ listen: "127.0.0.1:0", token: "${TOKEN}" }`,
    networks: { eth: { lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: [{ id: 'a', url: a.url }] } },
    extra: ['tiers: { pro: {} }', 'keys:',
      `  - { sha256: "${sha(WEB)}", tier: pro, name: web-app, methods: { allow: ["eth_*"] }, origins: ["https://app.example"] }`,
    ].join('\n'),
  });
  started.push(s);
  const made = await fetch(`${s.admin}/admin/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'ci-bot', tier: 'pro', networks: ['eth'] }),
  });
  assert.equal(made.status, 201);
  const bot = (await made.json()).key;
  for (let i = 0; i < 3; i++)
    assert.equal((await post(s.url('eth'), call('eth_blockNumber', [], i), { 'x-api-key': WEB, connection: 'close' })).status, 200);
  assert.equal((await post(s.url('eth'), call('net_version'), { 'x-api-key': WEB })).status, 403, 'method_not_allowed');

  const br = await launch();
  browsers.push(br);
  await br.goto(`${s.admin}/`);
  await br.waitFor(`!document.getElementById('login').hidden`, { what: 'the token form' });
  await br.evaluate(`(() => { document.getElementById('token').value = ${JSON.stringify(TOKEN)};
    document.getElementById('login-form').requestSubmit(); })()`);
  await br.waitFor(`document.querySelectorAll('tr[data-key]').length === 2`, { what: 'both keys' });
  // the workers flush their counters every ~100 ms; the page refreshes every second
  await br.waitFor(`document.querySelector('tr[data-key="web-app"] td[data-calls]').dataset.calls === '4'`,
    { what: 'the calls of web-app', timeoutMs: 8000 });
  const rows = await br.evaluate(`[...document.querySelectorAll('tr[data-key]')].map((tr) =>
    [...tr.cells].map((c) => c.textContent))`);
  assert.deepEqual(rows[0].slice(0, 3), ['web-app', 'config', 'pro']);
  assert.match(rows[0][3], /methods eth_\*.*origins https:\/\/app\.example/);
  assert.deepEqual(rows[0].slice(4, 7), ['4', '1', '3'], 'calls, refusals, credits spent (flat: 1 a call admitted)');
  assert.match(rows[0][7], /^\d+ s ago$/, 'last used: seconds ago');
  assert.deepEqual(rows[1].slice(0, 4), ['ci-bot', 'api', 'pro', 'networks eth']);
  assert.deepEqual(rows[1].slice(4), ['0', '0', '0', 'never']);
  const text = await br.evaluate('document.body.textContent');
  assert.ok(!text.includes(WEB) && !text.includes(bot) && !text.includes(sha(WEB)), 'never a secret or its hash');
  assert.deepEqual(br.console.filter((m) => m.level === 'exception' || /Content Security Policy/i.test(m.text)), []);
});
