// Keys made at run time take credits: and jwt: as config keys do (issue 33):
// POST /admin/keys with credits: {per_day} makes a key refused with 429
// key_credits once its budget is spent, across two workers; with jwt:
// {public_key_pem, audience} one whose calls need a good token (a bad
// signature, another audience, a past exp refused with 401 jwt_invalid);
// a bad PEM or budget is 400 naming the field; PATCH changes or removes
// them; GET /admin/keys shows them, never the PEM. Real processes.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { sign } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFake, startSluice, post, call, adminGet, waitFor } from '../lib/harness.mjs';

const started = [];
const dir = mkdtempSync(join(tmpdir(), 'sluice-rtjwt-'));
after(async () => { await Promise.all(started.map((p) => p.stop())); rmSync(dir, { recursive: true, force: true }); });

const TOKEN = 'keys-budget-token-0a1b2c3d4e5f';
const ssl = (...args) => execFileSync('openssl', args, { stdio: ['ignore', 'pipe', 'pipe'] });
const b64 = (x) => Buffer.from(typeof x === 'string' ? x : JSON.stringify(x)).toString('base64url');

function jwt(priv, claims) {
  const data = `${b64({ alg: 'ES256', typ: 'JWT' })}.${b64(claims)}`;
  const sig = sign('sha256', Buffer.from(data), { key: priv, dsaEncoding: 'ieee-p1363' });
  return `${data}.${sig.toString('base64url')}`;
}

let a, s;
before(async () => {
  a = await startFake({ name: 'a' });
  started.push(a);
  s = await startSluice({
    workers: 2,
    admin: `{ listen: "127.0.0.1:0", token: "${TOKEN}" }`,
    networks: { eth: { lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: [{ id: 'a', url: a.url }] } },
    extra: 'tiers: { pro: { per_second: 1000 } }',
  });
  started.push(s);
});

async function admin(method, p, body) {
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

const STD = (id = 1) => call('eth_call', [{ to: '0x0000000000000000000000000000000000000001' }, 'latest'], id);
// fresh connections, so both workers answer some
const send = (key, body, headers = {}) => post(s.url('eth'), body, { 'x-api-key': key, connection: 'close', ...headers });

test('a key made at run time with credits: is refused at its budget, across two workers', async () => {
  let r = await admin('POST', '/admin/keys', { name: 'rt-small', tier: 'pro', credits: { per_day: 'lots' } });
  assert.equal(r.status, 400, r.text);
  assert.equal(r.json.field, 'credits');
  r = await admin('POST', '/admin/keys', { name: 'rt-small', tier: 'pro', credits: { per_week: 5 } });
  assert.equal(r.status, 400, r.text);
  assert.equal(r.json.field, 'credits');
  r = await admin('POST', '/admin/keys', { name: 'rt-small', tier: 'pro', credits: { per_day: 6 } });
  assert.equal(r.status, 201, r.text);
  const small = r.json.key;
  r = await admin('POST', '/admin/keys', { name: 'rt-other', tier: 'pro', credits: { per_day: 1000, per_month: 5000 } });
  assert.equal(r.status, 201, r.text);
  const other = r.json.key;
  for (let i = 0; i < 4; i++) assert.equal((await send(small, STD(i))).status, 200, `call ${i} fits`);
  assert.equal((await send(small, [STD(10), STD(11)])).status, 200, 'a batch of 2 costs 2 (6 spent)');
  r = await send(small, STD(7));
  assert.equal(r.status, 429, r.text);
  assert.equal(r.json.error.data.reason, 'key_credits');
  assert.equal(r.json.error.data.limit, 6);
  assert.equal(r.json.error.data.window_s, 86400);
  for (let i = 0; i < 6; i++) assert.equal((await send(small, STD(i))).status, 429, 'still spent, whichever worker answers');
  for (let i = 0; i < 8; i++) assert.equal((await send(other, STD(i))).status, 200, 'another key is served');
  const list = (await admin('GET', '/admin/keys')).json.keys;
  const row = list.find((k) => k.name === 'rt-other');
  assert.deepEqual(row.credits, { per_day: 1000, per_month: 5000 });
  assert.equal(row.jwt, null);
  // PATCH {} removes the budget: the spent key is served again once every worker has the change
  r = await admin('PATCH', '/admin/keys/rt-small', { credits: {} });
  assert.equal(r.status, 200, r.text);
  await waitFor(async () => {
    for (let i = 0; i < 6; i++) if ((await send(small, STD(i))).status !== 200) return false;
    return true;
  }, { timeoutMs: 5000, what: 'the budget removed on both workers' });
});

test('a key made at run time with jwt: admits a good token, refuses a bad one', async () => {
  ssl('ecparam', '-genkey', '-name', 'prime256v1', '-noout', '-out', join(dir, 'ec.pem'));
  ssl('ec', '-in', join(dir, 'ec.pem'), '-pubout', '-out', join(dir, 'ec.pub.pem'));
  ssl('ecparam', '-genkey', '-name', 'prime256v1', '-noout', '-out', join(dir, 'other.pem'));
  ssl('ecparam', '-genkey', '-name', 'secp384r1', '-noout', '-out', join(dir, 'p384.pem'));
  ssl('ec', '-in', join(dir, 'p384.pem'), '-pubout', '-out', join(dir, 'p384.pub.pem'));
  const ec = readFileSync(join(dir, 'ec.pem')), other = readFileSync(join(dir, 'other.pem'));
  const pub = readFileSync(join(dir, 'ec.pub.pem'), 'utf8');
  for (const bad of [
    { public_key_pem: 'not a key' },
    { public_key_pem: readFileSync(join(dir, 'p384.pub.pem'), 'utf8') },
    { audience: 'rpc.example' },
    { public_key_pem: pub, audience: 7 },
    { public_key_pem: pub, issuer: 'x' },
    'yes',
  ]) {
    const r = await admin('POST', '/admin/keys', { name: 'rt-jwt', tier: 'pro', jwt: bad });
    assert.equal(r.status, 400, `${JSON.stringify(bad).slice(0, 60)}: ${r.text}`);
    assert.equal(r.json.field, 'jwt');
  }
  let r = await admin('POST', '/admin/keys', { name: 'rt-jwt', tier: 'pro', jwt: { public_key_pem: pub, audience: 'rpc.example' } });
  assert.equal(r.status, 201, r.text);
  const key = r.json.key;
  const now = Math.floor(Date.now() / 1000);
  const good = { aud: 'rpc.example', exp: now + 300 };
  const withToken = (t) => send(key, call('eth_chainId'), t === undefined ? {} : { authorization: `Bearer ${t}` });
  for (let i = 0; i < 6; i++) {
    r = await withToken(jwt(ec, good));
    assert.equal(r.status, 200, `a good token, call ${i}: ${r.text}`);
  }
  for (const [t, what] of [
    [undefined, /missing/],
    [jwt(other, good), /bad signature/],
    [jwt(ec, { ...good, aud: 'other.example' }), /another audience/],
    [jwt(ec, { ...good, exp: now - 10 }), /expired/],
  ]) {
    r = await withToken(t);
    assert.equal(r.status, 401, `${what}: ${r.text}`);
    assert.equal(r.json.error.data.reason, 'jwt_invalid');
    assert.match(r.json.error.message, what);
  }
  const row = (await admin('GET', '/admin/keys')).json.keys.find((k) => k.name === 'rt-jwt');
  assert.deepEqual(row.jwt, { audience: 'rpc.example' });
  assert.ok(!JSON.stringify(row).includes('BEGIN'), 'the PEM is not listed');
  const metrics = (await adminGet(s, '/metrics')).text;
  assert.ok(!metrics.includes(key), 'no secret in /metrics');
  // PATCH jwt: {} removes the need for a token
  r = await admin('PATCH', '/admin/keys/rt-jwt', { jwt: {} });
  assert.equal(r.status, 200, r.text);
  await waitFor(async () => {
    for (let i = 0; i < 6; i++) if ((await withToken()).status !== 200) return false;
    return true;
  }, { timeoutMs: 5000, what: 'jwt removed on both workers' });
});
