// API keys made at run time (issue 33, phase 2): POST /admin/keys answers a
// secret once, the key works at once on both workers, GET never shows a
// secret or hash, PATCH narrows its methods, DELETE refuses its next call
// with 401 and closes its WebSocket with 1008 within a second; a restart
// keeps it; a name clash is 409 and no token is 401. Real processes.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import WebSocket from 'ws';
import { startFake, startSluice, post, call, events, waitFor } from '../lib/harness.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const TOKEN = 'keys-token-5f4e3d2c1b0a9f8e7d6c';
const CONFIGKEY = 'sl_configkey0123456789abcdefg';
const sha = (k) => createHash('sha256').update(k).digest('hex');

let a, s;
const config = (statePath) => ({
  workers: 2,
  statePath,
  // (on its defaults: the cache on)
  admin: `{ listen: "127.0.0.1:0", token: "${TOKEN}" }`,
  networks: {
    eth: { lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: [{ id: 'a', url: a.url }] },
    base: { lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: [{ id: 'b', url: a.url }] },
  },
  extra: [
    'access: { anonymous: deny }',
    'tiers: { pro: {} }',
    'keys:',
    `  - { sha256: "${sha(CONFIGKEY)}", tier: pro, name: from-config }`,
  ].join('\n'),
});

before(async () => {
  a = await startFake({ name: 'a' });
  started.push(a);
  s = await startSluice(config());
  started.push(s);
});

async function admin(method, p, body, token = TOKEN) {
  const headers = { 'content-type': 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  const res = await fetch(`${s.admin}${p}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  let json;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: res.status, text, json };
}

const keyed = (net, key) => `${s.url(net)}/${key}`;
// enough calls, each on a fresh connection, that both workers answer some
// (SO_REUSEPORT spreads connections, as integration/cache and breaker rely on)
async function everyCall(net, key, method, want) {
  for (let i = 0; i < 12; i++) {
    const r = await post(keyed(net, key), call(method), { connection: 'close' });
    assert.equal(r.status, want, `call ${i}: ${r.text}`);
  }
}

// 1 if 8 calls, each on a fresh connection (both workers answer some), all get want
async function allStatus(net, key, method, want) {
  for (let i = 0; i < 8; i++)
    if ((await post(keyed(net, key), call(method), { connection: 'close' })).status !== want) return false;
  return true;
}

function openWs(url) {
  const ws = new WebSocket(url);
  const opened = new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject); });
  const closed = new Promise((resolve) => ws.once('close', (code) => resolve({ code, at: Date.now() })));
  return { ws, opened, closed };
}

let secret;

test('no admin token is 401', async () => {
  assert.equal((await admin('GET', '/admin/keys', undefined, null)).status, 401);
  assert.equal((await admin('POST', '/admin/keys', { name: 'x' }, null)).status, 401);
});

test('POST makes a key whose secret works at once on both workers', async () => {
  const r = await admin('POST', '/admin/keys', { name: 'ci-bot', tier: 'pro', networks: ['eth'], methods: { allow: ['eth_*'] } });
  assert.equal(r.status, 201, r.text);
  assert.equal(r.json.name, 'ci-bot');
  assert.match(r.json.key, /^sl_[A-Za-z0-9]{24}$/);
  secret = r.json.key;
  await everyCall('eth', secret, 'eth_blockNumber', 200);
  const scoped = await post(keyed('base', secret), call('eth_blockNumber'));
  assert.equal(scoped.status, 403);
  assert.equal(scoped.json.error.data.reason, 'network_not_allowed');
  const ev = (await events(s, 0, TOKEN)).filter((e) => e.kind === 'key_created');
  assert.equal(ev.length, 1);
  assert.ok(!JSON.stringify(ev).includes(secret), 'the event never holds the secret');
});

test('bad fields are 400 naming the field; a clash is 409', async () => {
  const bad = [
    [{ name: 'n1', tier: 'pro', networks: ['nowhere'] }, 'networks'],
    [{ name: 'n2', tier: 'gold' }, 'tier'],
    [{ name: 'n3', tier: 'pro', methods: { deny: ['eth_*x'] } }, 'methods.deny'],
    [{ name: 'n4', tier: 'pro', contracts: ['0x12'] }, 'contracts'],
    [{ name: 'n5', tier: 'pro', origins: ['https://app.example/path'] }, 'origins'],
    [{ name: 'a/b' }, 'name'],
    [{ name: 'n6' }, 'tier'],
  ];
  for (const [body, field] of bad) {
    const r = await admin('POST', '/admin/keys', body);
    assert.equal(r.status, 400, r.text);
    assert.equal(r.json.field, field, r.text);
  }
  assert.equal((await admin('POST', '/admin/keys', { name: 'ci-bot', tier: 'pro' })).status, 409);
  assert.equal((await admin('POST', '/admin/keys', { name: 'from-config' })).status, 409);
});

test('GET lists config and API keys, never a secret or hash', async () => {
  const r = await admin('GET', '/admin/keys');
  assert.equal(r.status, 200, r.text);
  const byName = Object.fromEntries(r.json.keys.map((k) => [k.name, k]));
  assert.equal(byName['from-config'].source, 'config');
  assert.equal(byName['ci-bot'].source, 'api');
  assert.deepEqual(byName['ci-bot'].networks, ['eth']);
  assert.deepEqual(byName['ci-bot'].methods.allow, ['eth_*']);
  assert.ok(!r.text.includes(secret) && !r.text.includes(sha(secret)) && !r.text.includes(sha(CONFIGKEY)));
});

test('PATCH narrows its methods: a call now refused with method_not_allowed', async () => {
  const r = await admin('PATCH', '/admin/keys/ci-bot', { methods: { allow: ['eth_chainId'] } });
  assert.equal(r.status, 200, r.text);
  // every worker applies it on its next refresh (state.refresh_ms, 50): wait until calls on
  // fresh connections (both workers) are all refused, not only the first worker's
  await waitFor(async () => allStatus('eth', secret, 'eth_blockNumber', 403),
    { timeoutMs: 3000, what: 'the change applied on both workers' });
  for (let i = 0; i < 8; i++) {
    const refused = await post(keyed('eth', secret), call('eth_blockNumber'), { connection: 'close' });
    assert.equal(refused.status, 403, refused.text);
    assert.equal(refused.json.error.data.reason, 'method_not_allowed');
  }
  await everyCall('eth', secret, 'eth_chainId', 200);
  assert.equal((await admin('PATCH', '/admin/keys/from-config', { tier: 'pro' })).status, 409);
  assert.equal((await admin('PATCH', '/admin/keys/nobody', { tier: 'pro' })).status, 404);
});

test('a restart keeps an API key', async () => {
  await s.stop();
  s = await startSluice(config(s.statePath));
  started.push(s);
  await everyCall('eth', secret, 'eth_chainId', 200);
});

test('DELETE: the next call is 401 and its WebSocket is closed 1008, within a second', async () => {
  const c = openWs(`ws://127.0.0.1:${s.port}/eth/${secret}`);
  await c.opened;
  const t0 = Date.now();
  const r = await admin('DELETE', '/admin/keys/ci-bot');
  assert.equal(r.status, 200, r.text);
  const closed = await c.closed;
  assert.equal(closed.code, 1008);
  assert.ok(closed.at - t0 < 1000, `closed after ${closed.at - t0} ms`);
  await waitFor(async () => allStatus('eth', secret, 'eth_chainId', 401),
    { timeoutMs: 3000, what: 'the key refused on both workers' });
  await everyCall('eth', secret, 'eth_chainId', 401);
  const kinds = (await events(s, 0, TOKEN)).map((e) => e.kind);
  assert.ok(kinds.includes('key_scope_changed') && kinds.includes('key_revoked'), kinds.join());
  assert.equal((await admin('DELETE', '/admin/keys/ci-bot')).status, 404);
  assert.equal((await admin('DELETE', '/admin/keys/from-config')).status, 409);
});
