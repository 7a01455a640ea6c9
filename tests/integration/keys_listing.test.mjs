// GET /admin/keys (issue 33): each key's last use (the last call answered
// under it, folded over the workers), pages of ?limit= keys with a "next"
// cursor for ?after=; and past a worker's per-key table (256 keys) the calls
// are counted in sluice_key_uncounted_total, not lost. Real processes.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { startFake, startSluice, post, call, adminGet, waitFor } from '../lib/harness.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const TOKEN = 'keys-listing-token-9f8e7d6c5b4a3210';
const CONFIGKEY = 'sl_listingconfigkey0123456789ab';
const sha = (k) => createHash('sha256').update(k).digest('hex');

async function start(workers) {
  const a = await startFake({ name: `a${workers}` });
  started.push(a);
  const s = await startSluice({
    workers,
    admin: `{ listen: "127.0.0.1:0", token: "${TOKEN}" }`,
    networks: { eth: { endpoints: [{ id: 'a', url: a.url }] } },
    extra: ['tiers: { pro: {} }', 'keys:', `  - { sha256: "${sha(CONFIGKEY)}", tier: pro, name: from-config }`].join('\n'),
  });
  started.push(s);
  return s;
}

function admin(s, method, p, body) {
  return fetch(`${s.admin}${p}`, {
    method,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
    body: body === undefined ? undefined : JSON.stringify(body),
  }).then(async (r) => ({ status: r.status, json: await r.json().catch(() => undefined) }));
}

test('last use per key, and pages that list every key once', async () => {
  const s = await start(2);
  const secrets = {};
  for (const name of ['k-e', 'k-a', 'k-d', 'k-c', 'k-b']) {
    const r = await admin(s, 'POST', '/admin/keys', { name, tier: 'pro' });
    assert.equal(r.status, 201);
    secrets[name] = r.json.key;
  }
  const before = (await admin(s, 'GET', '/admin/keys')).json;
  assert.equal(before.next, null, 'one page holds them all by default');
  assert.deepEqual(before.keys.map((k) => k.name), ['from-config', 'k-a', 'k-b', 'k-c', 'k-d', 'k-e'],
    'the config file\'s keys, then the others by name');
  assert.ok(before.keys.every((k) => k.last_used_ms === null), 'never used: null');

  const t0 = Date.now();
  for (let i = 0; i < 6; i++) { // fresh connections: both workers answer some
    assert.equal((await post(`${s.url('eth')}/${secrets['k-c']}`, call('eth_chainId'), { connection: 'close' })).status, 200);
    assert.equal((await post(`${s.url('eth')}/${CONFIGKEY}`, call('eth_chainId'), { connection: 'close' })).status, 200);
  }
  let listed;
  await waitFor(async () => {
    listed = Object.fromEntries((await admin(s, 'GET', '/admin/keys')).json.keys.map((k) => [k.name, k]));
    return listed['k-c'].calls === 6 && listed['from-config'].calls === 6;
  }, { timeoutMs: 5000, what: 'the calls counted' });
  for (const name of ['k-c', 'from-config']) {
    const used = listed[name].last_used_ms;
    assert.ok(used >= Math.floor(t0 / 1000) * 1000 && used <= Date.now(), `${name}: last use ${used}, calls from ${t0}`);
  }
  assert.equal(listed['k-a'].last_used_ms, null, 'a key not used stays null');

  const seen = [];
  let next;
  for (let page = 0; page < 10; page++) {
    const r = await admin(s, 'GET', `/admin/keys?limit=2${next ? `&after=${next}` : ''}`);
    assert.equal(r.status, 200);
    assert.ok(r.json.keys.length <= 2);
    seen.push(...r.json.keys.map((k) => k.name));
    next = r.json.next;
    if (next === null) break;
    assert.equal(next, r.json.keys[r.json.keys.length - 1].name, 'next names the page\'s last key');
  }
  assert.deepEqual(seen, ['from-config', 'k-a', 'k-b', 'k-c', 'k-d', 'k-e'], 'three pages, each key once');
  // a cursor whose key was revoked meanwhile still finds its place
  assert.equal((await admin(s, 'DELETE', '/admin/keys/k-b')).status, 200);
  const rest = (await admin(s, 'GET', '/admin/keys?limit=2&after=k-b')).json;
  assert.deepEqual(rest.keys.map((k) => k.name), ['k-c', 'k-d']);
  assert.equal(rest.next, 'k-d');
  for (const bad of ['limit=0', 'limit=1001'])
    assert.equal((await admin(s, 'GET', `/admin/keys?${bad}`)).status, 400, bad);
});

test('calls under keys past a worker\'s per-key table are counted as uncounted', async () => {
  const s = await start(1);
  const keys = [];
  for (let i = 0; i < 260; i++) {
    const r = await admin(s, 'POST', '/admin/keys', { name: `bulk-${String(i).padStart(3, '0')}`, tier: 'pro' });
    assert.equal(r.status, 201);
    keys.push(r.json.key);
  }
  for (const key of keys)
    assert.equal((await post(`${s.url('eth')}/${key}`, call('eth_chainId'))).status, 200);
  const value = (text, series) => Number(text.match(new RegExp(`^${series} (\\d+)$`, 'm'))?.[1]);
  let text = '';
  await waitFor(async () => {
    text = (await adminGet(s, '/metrics', TOKEN)).text;
    return value(text, 'sluice_key_uncounted_total') === 4;
  }, { timeoutMs: 5000, what: `4 calls past 256 keys counted (${value(text, 'sluice_key_uncounted_total')})` });
  const counted = [...text.matchAll(/^sluice_key_calls_total\{key="bulk-\d+"\} (\d+)$/gm)].map((m) => Number(m[1]));
  assert.equal(counted.reduce((x, y) => x + y, 0), 256, 'the first 256 keys counted by name');
});
