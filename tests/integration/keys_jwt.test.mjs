// A key's jwt: (issue 33): its calls must carry Authorization: Bearer <JWT>
// signed by its public key (ES256 or RS256), not expired, for its audience;
// otherwise 401 data.reason jwt_invalid with a message saying what.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, sign } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFake, startSluice, post, call, adminGet, waitFor } from '../lib/harness.mjs';

const started = [];
const dir = mkdtempSync(join(tmpdir(), 'sluice-jwt-'));
after(async () => { await Promise.all(started.map((p) => p.stop())); rmSync(dir, { recursive: true, force: true }); });

const sha = (k) => createHash('sha256').update(k).digest('hex');
const ECKEY = 'sl_jwteckey0123456789abcdefgh', RSAKEY = 'sl_jwtrsakey0123456789abcdefg', PLAIN = 'sl_plainkey0123456789abcdefgh';
const ssl = (...args) => execFileSync('openssl', args, { stdio: ['ignore', 'pipe', 'pipe'] });
const b64 = (x) => Buffer.from(typeof x === 'string' ? x : JSON.stringify(x)).toString('base64url');

function jwt(alg, priv, claims) {
  const data = `${b64({ alg, typ: 'JWT' })}.${b64(claims)}`;
  const sig = sign('sha256', Buffer.from(data), alg === 'ES256' ? { key: priv, dsaEncoding: 'ieee-p1363' } : priv);
  return `${data}.${sig.toString('base64url')}`;
}

test('jwt: a good token admitted; missing, bad signature, another audience, past exp refused', async () => {
  ssl('ecparam', '-genkey', '-name', 'prime256v1', '-noout', '-out', join(dir, 'ec.pem'));
  ssl('ec', '-in', join(dir, 'ec.pem'), '-pubout', '-out', join(dir, 'ec.pub.pem'));
  ssl('ecparam', '-genkey', '-name', 'prime256v1', '-noout', '-out', join(dir, 'other.pem'));
  ssl('genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', join(dir, 'rsa.pem'));
  ssl('pkey', '-in', join(dir, 'rsa.pem'), '-pubout', '-out', join(dir, 'rsa.pub.pem'));
  const ec = readFileSync(join(dir, 'ec.pem')), other = readFileSync(join(dir, 'other.pem'));
  const rsa = readFileSync(join(dir, 'rsa.pem'));
  const a = await startFake({ name: 'a' });
  started.push(a);
  const s = await startSluice({
    workers: 2,
    networks: { eth: { lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: [{ id: 'a', url: a.url }] } },
    extra: [
      'tiers: { pro: {} }',
      'keys:',
      `  - { sha256: "${sha(ECKEY)}", tier: pro, name: ec, jwt: { public_key_file: "${join(dir, 'ec.pub.pem')}", audience: "rpc.example" } }`,
      `  - { sha256: "${sha(RSAKEY)}", tier: pro, name: rsa, jwt: { public_key_file: "${join(dir, 'rsa.pub.pem')}" } }`,
      `  - { sha256: "${sha(PLAIN)}", tier: pro, name: plain }`,
    ].join('\n'),
  });
  started.push(s);
  const now = Math.floor(Date.now() / 1000);
  const good = { aud: 'rpc.example', exp: now + 300, sub: 'user-1' };
  const send = (key, token) => post(s.url('eth'), call('eth_chainId'),
    token === undefined ? { 'x-api-key': key } : { 'x-api-key': key, authorization: `Bearer ${token}` });
  const refused = async (key, token, what) => {
    const r = await send(key, token);
    assert.equal(r.status, 401, `${what}: ${r.text}`);
    assert.equal(r.json.error.code, -32600);
    assert.equal(r.json.error.data.reason, 'jwt_invalid');
    assert.match(r.json.error.message, what);
  };
  let r = await send(ECKEY, jwt('ES256', ec, good));
  assert.equal(r.status, 200, r.text);
  r = await send(ECKEY, jwt('ES256', ec, { ...good, aud: ['other', 'rpc.example'] }));
  assert.equal(r.status, 200, `aud as an array: ${r.text}`);
  await refused(ECKEY, undefined, /missing/);
  await refused(ECKEY, jwt('ES256', other, good), /bad signature/);
  const t = jwt('ES256', ec, good);
  await refused(ECKEY, `${t.slice(0, t.indexOf('.') + 1)}${b64({ ...good, sub: 'admin' })}${t.slice(t.lastIndexOf('.'))}`, /bad signature/);
  await refused(ECKEY, jwt('ES256', ec, { ...good, aud: 'other.example' }), /another audience/);
  await refused(ECKEY, jwt('ES256', ec, { ...good, exp: now - 10 }), /expired/);
  await refused(ECKEY, jwt('ES256', ec, { aud: 'rpc.example' }), /no exp/);
  await refused(ECKEY, jwt('RS256', rsa, good), /alg/);
  await refused(ECKEY, 'not-a-jwt', /not a JWT/);
  r = await send(RSAKEY, jwt('RS256', rsa, { exp: now + 60 }));
  assert.equal(r.status, 200, `RS256, no audience configured: ${r.text}`);
  await refused(RSAKEY, jwt('RS256', rsa, { exp: now - 1 }), /expired/);
  assert.equal((await send(PLAIN)).status, 200, 'a key without jwt: needs none');
  // 9 refusals: 8 of ec, 1 of rsa, counted as every other access refusal is
  const value = (text, series) => Number(text.match(new RegExp(`^${series.replace(/[{}"]/g, (c) => `\\${c}`)} (\\d+)$`, 'm'))?.[1]);
  let text = '';
  await waitFor(async () => {
    text = (await adminGet(s, '/metrics')).text;
    return value(text, 'sluice_access_refusals_total{reason="jwt_invalid"}') === 9;
  }, { timeoutMs: 5000, what: 'jwt_invalid in sluice_access_refusals_total' });
  assert.equal(value(text, 'sluice_key_refusals_total{key="ec",reason="jwt_invalid"}'), 8);
  assert.equal(value(text, 'sluice_key_refusals_total{key="rsa",reason="jwt_invalid"}'), 1);
});
