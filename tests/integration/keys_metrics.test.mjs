// Per-key metrics (issue 33): /metrics counts each key's calls, refusals by
// data.reason and credits spent, by the key's name (never its secret), for a
// config key and a key made at run time; keyless calls are in no series.
// Real processes, 2 workers (the counters are summed over the workers).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { startFake, startSluice, post, call, adminGet, waitFor } from '../lib/harness.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const TOKEN = 'keymetrics-token-0a1b2c3d4e5f6a7b8c';
const WEB = 'sl_webkey0123456789abcdefghijk';
const sha = (k) => createHash('sha256').update(k).digest('hex');

test('calls, refusals and credits spent under a key show in /metrics by its name', async () => {
  const a = await startFake({ name: 'a' });
  started.push(a);
  const s = await startSluice({
    workers: 2,
    // (on its defaults: the cache on)
    admin: `{ listen: "127.0.0.1:0", token: "${TOKEN}" }`,
    networks: { eth: { lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: [{ id: 'a', url: a.url }] } },
    extra: [
      'tiers: { pro: {} }',
      'keys:',
      `  - { sha256: "${sha(WEB)}", tier: pro, name: web-app, methods: { deny: ["eth_sendRawTransaction"] }, credits: { per_day: 5 } }`,
    ].join('\n'),
  });
  started.push(s);
  const made = await fetch(`${s.admin}/admin/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'ci-bot', tier: 'pro', origins: ['https://app.example'] }),
  });
  assert.equal(made.status, 201);
  const bot = (await made.json()).key;

  const send = (key, body, more = {}) =>
    post(s.url('eth'), body, key ? { 'x-api-key': key, connection: 'close', ...more } : { connection: 'close' });
  for (let i = 0; i < 3; i++) assert.equal((await send(WEB, call('eth_blockNumber', [], i))).status, 200);
  // a batch: one member refused by the scope, one answered (flat: 1 a call)
  assert.equal((await send(WEB, [call('eth_chainId', [], 7), call('eth_sendRawTransaction', ['0x00'], 8)])).status, 200);
  // 4 credits spent of 5: a batch of 2 is over
  const over = await send(WEB, [call('eth_chainId', [], 9), call('eth_chainId', [], 10)]);
  assert.equal(over.status, 429, over.text);
  assert.equal(over.json.error.data.reason, 'key_credits');
  const wrong = await send(bot, call('eth_blockNumber'), { origin: 'https://elsewhere.example' });
  assert.equal(wrong.status, 403, wrong.text);
  assert.equal((await send(undefined, call('eth_blockNumber'))).status, 200, 'keyless');

  const value = (text, series) => Number(text.match(new RegExp(`^${series.replace(/[{}"]/g, (c) => `\\${c}`)} (\\d+)$`, 'm'))?.[1]);
  let text = '';
  await waitFor(async () => {
    text = (await adminGet(s, '/metrics', TOKEN)).text;
    return value(text, 'sluice_key_calls_total{key="web-app"}') === 5 &&
      value(text, 'sluice_key_refusals_total{key="web-app",reason="key_credits"}') === 1 &&
      value(text, 'sluice_key_refusals_total{key="ci-bot",reason="origin_not_allowed"}') === 1;
  }, { what: `per-key metrics:\n${text}` });
  assert.equal(value(text, 'sluice_key_refusals_total{key="web-app",reason="method_not_allowed"}'), 1);
  assert.equal(value(text, 'sluice_key_credits_spent_total{key="web-app"}'), 4);
  assert.equal(value(text, 'sluice_key_calls_total{key="ci-bot"}'), 0, 'refused whole: only its refusal');
  assert.equal(value(text, 'sluice_key_credits_spent_total{key="ci-bot"}'), 0);
  assert.ok(!text.includes(WEB) && !text.includes(bot) && !text.includes(sha(WEB)), 'never a secret or its hash');
  assert.equal(value(text, 'sluice_key_uncounted_total'), 0, 'two keys: every call counted by its key');
  const keyed = text.split('\n').filter((l) => l.startsWith('sluice_key_') && !l.startsWith('sluice_key_uncounted_total'));
  assert.ok(keyed.every((l) => /\{key="(web-app|ci-bot)"/.test(l)), `only the keys there are:\n${keyed.join('\n')}`);

  // revoked: its series go with it
  const del = await fetch(`${s.admin}/admin/keys/ci-bot`, { method: 'DELETE', headers: { authorization: `Bearer ${TOKEN}` } });
  assert.equal(del.status, 200);
  // (the worker answering /metrics may learn of the revoke on its next refresh)
  await waitFor(async () => !(await adminGet(s, '/metrics', TOKEN)).text.includes('key="ci-bot"'),
    { timeoutMs: 5000, what: 'a revoked key has no series' });
});
