// API keys made at run time, shared through Redis (cluster:): a key made by
// POST /admin/keys on one host works on the other within a second, a PATCH
// there narrows it there, a DELETE is refused there within a second
// (including closing its open WebSocket with 1008); a host that starts later
// loads the keys Redis has, and one that made a key while Redis was away
// hands it over when Redis is back. Redis never holds a secret. Real
// processes: one redis-server, two or three sluice hosts, one fake provider.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { startFake, startSluice, post, call, adminGet, waitFor } from '../lib/harness.mjs';
import { startRedis, redisAvailable } from '../lib/redis.mjs';

const skip = redisAvailable() ? false : 'redis-server is not installed';
const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const TOKEN = 'keys-cluster-token-0a1b2c3d4e5f6a7b';

const hostConfig = (fake, url, host) => ({
  workers: 2,
  admin: `{ listen: "127.0.0.1:0", token: "${TOKEN}" }`,
  networks: { eth: { endpoints: [{ id: 'a', url: fake.url }] } },
  extra: [
    `cluster: { redis: "${url}", host: "${host}" }`,
    'access: { anonymous: deny }',
    'tiers: { pro: {} }',
  ].join('\n'),
});

async function admin(s, method, p, body) {
  const res = await fetch(`${s.admin}${p}`, {
    method,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let json;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: res.status, text, json };
}

async function waitShared(s) {
  await waitFor(async () => ((await adminGet(s, '/readyz', TOKEN)).json?.cluster || {}).mode === 'shared',
    { timeoutMs: 15000, what: 'mode shared' });
}

// 1 if 8 calls, each on a fresh connection (both workers answer some), all get want
async function allStatus(s, key, method, want) {
  for (let i = 0; i < 8; i++)
    if ((await post(`${s.url('eth')}/${key}`, call(method), { connection: 'close' })).status !== want) return false;
  return true;
}

// Waits until every call on s with key gets want; answers how long it took (ms).
async function within(s, key, method, want, what) {
  const t0 = Date.now();
  await waitFor(async () => allStatus(s, key, method, want), { timeoutMs: 5000, intervalMs: 20, what });
  return Date.now() - t0;
}

function openWs(url) {
  const ws = new WebSocket(url);
  const opened = new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject); });
  const closed = new Promise((resolve) => ws.once('close', (code) => resolve({ code, at: Date.now() })));
  return { ws, opened, closed };
}

test('a key made, changed and revoked on one host is so on the other within a second', { skip }, async (t) => {
  const fake = await startFake({ name: 'f' });
  started.push(fake);
  const redis = await startRedis();
  started.push(redis);
  const h1 = await startSluice(hostConfig(fake, redis.url(), 'h1'));
  started.push(h1);
  const h2 = await startSluice(hostConfig(fake, redis.url(), 'h2'));
  started.push(h2);
  for (const s of [h1, h2]) await waitShared(s);

  const made = await admin(h1, 'POST', '/admin/keys', { name: 'shared-bot', tier: 'pro', methods: { allow: ['eth_*'] } });
  assert.equal(made.status, 201, made.text);
  const secret = made.json.key;
  assert.ok(await allStatus(h2, 'sl_notakey000000000000000000', 'eth_chainId', 401), 'an unknown key is 401 on h2');
  const createdMs = await within(h2, secret, 'eth_blockNumber', 200, 'the key admitted on h2');
  assert.ok(createdMs < 1000, `the key worked on h2 after ${createdMs} ms`);
  const listed = await admin(h2, 'GET', '/admin/keys');
  assert.ok(listed.json.keys.some((k) => k.name === 'shared-bot' && k.source === 'api'), listed.text);
  const held = redis.cli('HGETALL', 'sluice:apikeys');
  assert.match(held, /shared-bot/);
  assert.ok(!held.includes(secret), 'Redis holds the key\'s hash, never its secret');

  const patched = await admin(h1, 'PATCH', '/admin/keys/shared-bot',
    { methods: { allow: ['eth_chainId'] }, credits: { per_day: 123456 } });
  assert.equal(patched.status, 200, patched.text);
  const changedMs = await within(h2, secret, 'eth_blockNumber', 403, 'the change applied on h2');
  assert.ok(changedMs < 1000, `the change applied on h2 after ${changedMs} ms`);
  const refused = await post(`${h2.url('eth')}/${secret}`, call('eth_blockNumber'));
  assert.equal(refused.json.error.data.reason, 'method_not_allowed');
  assert.ok(await allStatus(h2, secret, 'eth_chainId', 200), 'still admitted inside its new scope');
  const row = (await admin(h2, 'GET', '/admin/keys')).json.keys.find((k) => k.name === 'shared-bot');
  assert.deepEqual(row.credits, { per_day: 123456 }, 'a budget set on h1 is the key\'s on h2 (through Redis)');

  const c = openWs(`ws://127.0.0.1:${h2.port}/eth/${secret}`);
  await c.opened;
  const t0 = Date.now();
  const r = await admin(h1, 'DELETE', '/admin/keys/shared-bot');
  assert.equal(r.status, 200, r.text);
  const closed = await c.closed;
  assert.equal(closed.code, 1008, 'h2 closes the revoked key\'s WebSocket with 1008');
  assert.ok(closed.at - t0 < 1000, `closed on h2 after ${closed.at - t0} ms`);
  t.diagnostic(`on h2 after: made ${createdMs} ms, changed ${changedMs} ms, WebSocket closed ${closed.at - t0} ms`);
  await within(h2, secret, 'eth_chainId', 401, 'the key refused on h2');
  assert.ok(!(await admin(h2, 'GET', '/admin/keys')).json.keys.some((k) => k.name === 'shared-bot'));
  assert.equal((await admin(h2, 'DELETE', '/admin/keys/shared-bot')).status, 404, 'gone on h2 too');

  // a host that starts later loads the keys that exist
  const made2 = await admin(h2, 'POST', '/admin/keys', { name: 'late-bot', tier: 'pro' });
  assert.equal(made2.status, 201, made2.text);
  const h3 = await startSluice(hostConfig(fake, redis.url(), 'h3'));
  started.push(h3);
  await waitShared(h3);
  await within(h3, made2.json.key, 'eth_chainId', 200, 'the key admitted on a host started later');
  assert.ok(await allStatus(h3, secret, 'eth_chainId', 401), 'the revoked key stays revoked there');
});

test('a key made on a host while Redis is away reaches the other once Redis is back; a revocation made away holds', { skip }, async () => {
  const fake = await startFake({ name: 'g' });
  started.push(fake);
  const redis = await startRedis();
  started.push(redis);
  const h1 = await startSluice(hostConfig(fake, redis.url(), 'h1'));
  started.push(h1);
  const h2 = await startSluice(hostConfig(fake, redis.url(), 'h2'));
  started.push(h2);
  for (const s of [h1, h2]) await waitShared(s);
  const old = await admin(h1, 'POST', '/admin/keys', { name: 'old-bot', tier: 'pro' });
  assert.equal(old.status, 201, old.text);
  await within(h2, old.json.key, 'eth_chainId', 200, 'old-bot on h2');

  await redis.kill();
  await waitFor(async () => ((await adminGet(h1, '/readyz', TOKEN)).json?.cluster || {}).mode === 'degraded',
    { timeoutMs: 15000, what: 'h1 degraded' });
  const away = await admin(h1, 'POST', '/admin/keys', { name: 'away-bot', tier: 'pro' });
  assert.equal(away.status, 201, away.text);
  assert.equal((await admin(h1, 'DELETE', '/admin/keys/old-bot')).status, 200);
  await within(h1, away.json.key, 'eth_chainId', 200, 'away-bot on h1 alone');
  assert.ok(await allStatus(h2, away.json.key, 'eth_chainId', 401), 'h2 cannot know it yet');

  await redis.restart();
  for (const s of [h1, h2]) await waitShared(s);
  await within(h2, away.json.key, 'eth_chainId', 200, 'away-bot on h2 once Redis is back');
  await within(h2, old.json.key, 'eth_chainId', 401, 'old-bot revoked on h2 once Redis is back');
  assert.ok(await allStatus(h1, old.json.key, 'eth_chainId', 401), 'old-bot not brought back on h1');
});
