// Verified TLS to upstreams: the chain AND the name are checked, also under
// TLS 1.3 where h2o 2.2.5's own name check never runs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { startFake, startSluice, post, call, tempDir, waitLog } from '../lib/harness.mjs';
import { certMaker } from '../lib/certs.mjs';

let dir, ca, good, wrongName, noIpSan, untrusted;
const fakes = [];

let certs;
const makeCert = (name, san, caName) => certs.cert(name, san, caName);
const makeCa = (name) => certs.ca(name);

before(async () => {
  dir = tempDir('sluice-tls-');
  certs = certMaker(dir);
  ca = makeCa('ca');
  makeCa('otherca');
  good = await startFake({ name: 'good', tls: makeCert('good', 'DNS:localhost,IP:127.0.0.1') });
  wrongName = await startFake({ name: 'wrong', tls: makeCert('wrong', 'DNS:other.example') });
  noIpSan = await startFake({ name: 'noip', tls: makeCert('noip', 'DNS:localhost') });
  untrusted = await startFake({ name: 'untrusted', tls: makeCert('untrusted', 'DNS:localhost', 'otherca') });
  fakes.push(good, wrongName, noIpSan, untrusted);
});

after(async () => { await Promise.all(fakes.map((f) => f.stop())); });

const https = (f, host = 'localhost') => `https://${host}:${f.port}`;

async function sluiceWith(endpoints) {
  return startSluice({
    workers: 1,
    networks: { eth: { endpoints: endpoints.map(([id, url, caFile]) => ({ id, url, ...(caFile ? { tls_ca_file: caFile } : {}) })) } },
  });
}

test('the fake providers speak TLS 1.3 (so the checks below are under TLS 1.3)', () => {
  const r = spawnSync('openssl', ['s_client', '-connect', `127.0.0.1:${wrongName.port}`, '-brief'],
    { input: '', encoding: 'utf8', timeout: 10000 });
  assert.match(r.stdout + r.stderr, /Protocol version: TLSv1\.3/);
});

test('a certificate with the right name from a trusted CA is accepted', async () => {
  const s = await sluiceWith([['good', https(good), ca]]);
  try {
    const r = await post(s.url('eth'), call('eth_chainId'));
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.result, '0x1');
  } finally { await s.stop(); }
});

test('a wrong-name certificate is refused under TLS 1.3, and the call fails over', async () => {
  const s = await sluiceWith([['wrong', https(wrongName), ca], ['good', https(good), ca]]);
  try {
    const r = await post(s.url('eth'), call('eth_chainId'));
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('x-sluice-endpoint'), 'good');
    assert.equal(r.headers.get('x-sluice-attempts'), '2');
    await waitLog(s, /TLS handshake with https:\/\/localhost:\d+ failed/);
  } finally { await s.stop(); }
});

test('a wrong-name certificate alone: 502 naming the TLS failure', async () => {
  const s = await sluiceWith([['wrong', https(wrongName), ca]]);
  try {
    const r = await post(s.url('eth'), call('eth_chainId'));
    assert.equal(r.status, 502);
    assert.equal(r.json.error.data.attempts[0].error, 'TLS handshake failed');
  } finally { await s.stop(); }
});

test('an IP-literal URL needs an IP SAN; it is accepted when present', async () => {
  const s = await sluiceWith([['noip', https(noIpSan, '127.0.0.1'), ca], ['good', https(good, '127.0.0.1'), ca]]);
  try {
    const r = await post(s.url('eth'), call('eth_chainId'));
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('x-sluice-endpoint'), 'good');
  } finally { await s.stop(); }
});

test('a certificate from an untrusted CA is refused', async () => {
  const s = await sluiceWith([['untrusted', https(untrusted), ca]]);
  try {
    const r = await post(s.url('eth'), call('eth_chainId'));
    assert.equal(r.status, 502);
  } finally { await s.stop(); }
});

test('without tls_ca_file the system store is used: our private CA is not trusted', async () => {
  const s = await sluiceWith([['good', https(good)]]);
  try {
    const r = await post(s.url('eth'), call('eth_chainId'));
    assert.equal(r.status, 502);
  } finally { await s.stop(); }
});
