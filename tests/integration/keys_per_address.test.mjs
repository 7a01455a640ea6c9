// A key's per_address limit (issue 33): each client address under the key
// held to it, on top of the key's tier; past it 429 data.reason per_address.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { startFake, startSluice, post, call } from '../lib/harness.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const sha = (k) => createHash('sha256').update(k).digest('hex');
const KEY = 'sl_visitkey0123456789abcdefgh';
const STD = (id = 1) => call('eth_call', [{ to: '0x0000000000000000000000000000000000000001' }, 'latest'], id);

test('per_address: one address under the key is limited, another under the same key is served', async () => {
  const a = await startFake({ name: 'a' });
  started.push(a);
  const s = await startSluice(`server: { listen: "127.0.0.1:0", workers: 2, trusted_proxies: ["127.0.0.1/32"] }
admin: { listen: off }
tiers: { anonymous: { per_minute: 100 }, pro: { per_minute: 100 } }
keys:
  - { sha256: "${sha(KEY)}", tier: pro, name: app, per_address: { per_minute: 3 } }
networks: { eth: { ranking: { probe_interval_ms: 0 }, endpoints: ["${a.url}"] } }
`);
  started.push(s);
  const as = (ip) => ({ 'x-api-key': KEY, 'x-forwarded-for': ip });
  for (let i = 0; i < 3; i++)
    assert.equal((await post(s.url('eth'), STD(i), as('10.0.0.1'))).status, 200, `call ${i} fits`);
  const r = await post(s.url('eth'), STD(9), as('10.0.0.1'));
  assert.equal(r.status, 429, r.text);
  assert.equal(r.json.error.code, -32005);
  assert.equal(r.json.error.data.scope, 'client');
  assert.equal(r.json.error.data.reason, 'per_address');
  assert.equal(r.json.error.data.limit, 3);
  assert.equal(r.json.error.data.window_s, 60);
  assert.ok(Number(r.headers.get('retry-after')) > 0);
  assert.match(r.json.error.message, /address under this key/);
  for (let i = 0; i < 3; i++)
    assert.equal((await post(s.url('eth'), STD(i), as('10.0.0.2'))).status, 200, 'another address is served');
  assert.equal((await post(s.url('eth'), STD(), as('10.0.0.3'))).status, 200);
  // anonymous callers at that address are not held to the key's per_address
  for (let i = 0; i < 4; i++)
    assert.equal((await post(s.url('eth'), STD(i), { 'x-forwarded-for': '10.0.0.1' })).status, 200);
});

test('per_address on a key made at run time: POST takes it, GET shows it, PATCH changes it', async () => {
  const TOKEN = 'pa-token-0123456789abcdef0123';
  const a = await startFake({ name: 'a' });
  started.push(a);
  const s = await startSluice({
    workers: 2,
    server: { trusted_proxies: '["127.0.0.1/32"]' },
    admin: `{ listen: "127.0.0.1:0", token: "${TOKEN}" }`,
    networks: { eth: { lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: [{ id: 'a', url: a.url }] } },
    extra: `tiers: { pro: { per_minute: 100 } }\nkeys:\n  - { sha256: "${sha(KEY)}", tier: pro, name: cfg, per_address: { per_day: 9 } }`,
  });
  started.push(s);
  const admin = async (method, p, body) => {
    const res = await fetch(`${s.admin}${p}`, {
      method, headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, text, json: text ? JSON.parse(text) : undefined };
  };
  let r = await admin('POST', '/admin/keys', { name: 'rt', tier: 'pro', per_address: { per_second: 1.5 } });
  assert.equal(r.status, 400, r.text);
  r = await admin('POST', '/admin/keys', { name: 'rt', tier: 'pro', per_address: { per_hour: 1 } });
  assert.equal(r.status, 400, r.text);
  r = await admin('POST', '/admin/keys', { name: 'rt', tier: 'pro', per_address: { per_minute: 2 } });
  assert.equal(r.status, 201, r.text);
  const key = r.json.key;
  const list = (await admin('GET', '/admin/keys')).json.keys;
  assert.deepEqual(list.find((k) => k.name === 'rt').per_address, { per_minute: 2 });
  assert.deepEqual(list.find((k) => k.name === 'cfg').per_address, { per_day: 9 });
  const as = (ip) => ({ 'x-api-key': key, 'x-forwarded-for': ip });
  for (let i = 0; i < 2; i++) assert.equal((await post(s.url('eth'), STD(i), as('10.0.1.1'))).status, 200);
  r = await post(s.url('eth'), STD(), as('10.0.1.1'));
  assert.equal(r.status, 429, r.text);
  assert.equal(r.json.error.data.reason, 'per_address');
  assert.equal((await post(s.url('eth'), STD(), as('10.0.1.2'))).status, 200, 'another address is served');
  // PATCH {} lifts it (within a state.refresh_ms tick on every worker)
  assert.equal((await admin('PATCH', '/admin/keys/rt', { per_address: {} })).status, 200);
  const t0 = Date.now();
  for (;;) {
    r = await post(s.url('eth'), STD(), { ...as('10.0.1.1'), connection: 'close' });
    if (r.status === 200 || Date.now() - t0 > 5000) break;
    await new Promise((res) => setTimeout(res, 100));
  }
  assert.equal(r.status, 200, r.text);
  assert.equal((await admin('GET', '/admin/keys')).json.keys.find((k) => k.name === 'rt').per_address.per_minute, undefined);
});
