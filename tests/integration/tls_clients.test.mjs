// TLS and HTTP/2 for clients (server.tls): curl over h2 by ALPN, Node's
// https (HTTP/1.1), node:http2 (several streams on one connection), wss://
// on both listeners (the ws package, ethers' WebSocketProvider); --check
// naming a bad file and never its content; SIGHUP serving a certificate
// replaced in place; a handshake that never starts closed within
// first_request_timeout_ms; max_connections_per_address counting TLS
// connections; requests by protocol in /metrics.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import tls from 'node:tls';
import https from 'node:https';
import http2 from 'node:http2';
import { spawnSync } from 'node:child_process';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import WebSocket from 'ws';
import { WebSocketProvider } from 'ethers';
import { startFake, startSluice, call, sleep, waitFor, events, metricValue, tempDir, SLUICE_BIN } from '../lib/harness.mjs';
import { certMaker } from '../lib/certs.mjs';

let dir, certs, pair, upstream;
const started = [];

before(async () => {
  dir = tempDir('sluice-tls-clients-');
  certs = certMaker(dir);
  pair = certs.selfSigned('server');
  upstream = await startFake({ name: 'a' });
  started.push(upstream);
});
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const tlsLine = (p, http2 = true) => `{ cert_file: "${p.cert}", key_file: "${p.key}"${http2 ? ', http2: true' : ''} }`;

async function gateway(server = {}, p = pair) {
  const s = await startSluice({
    workers: 1,
    server: { tls: tlsLine(p), ...server },
    networks: { eth: { lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: [{ id: 'a', url: upstream.url }] } },
  });
  started.push(s);
  return s;
}

// POST over Node's https (HTTP/1.1), trusting the self-signed certificate.
function httpsPost(port, body, ca = readFileSync(pair.cert)) {
  return new Promise((resolve, reject) => {
    const req = https.request({ host: '127.0.0.1', port, path: '/eth', method: 'POST', ca, agent: false,
      headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode, version: res.httpVersion, json: JSON.parse(text),
        fingerprint: res.socket.getPeerCertificate?.().fingerprint256 }));
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

// The SHA-256 fingerprint of the certificate the server presents now.
function servedFingerprint(port) {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false, ALPNProtocols: ['http/1.1'] }, () => {
      const fp = s.getPeerCertificate().fingerprint256;
      s.end();
      resolve(fp);
    });
    s.on('error', reject);
  });
}

const opensslFingerprint = (file) =>
  spawnSync('openssl', ['x509', '-in', file, '-noout', '-fingerprint', '-sha256'], { encoding: 'utf8' })
    .stdout.trim().replace(/^.*=/, '');

test('curl --http2 gets 200 over HTTP/2 (ALPN); --http1.1 and the WebSocket listener speak TLS too', async () => {
  const s = await gateway();
  assert.match(s.logs(), /listening on https:\/\/127\.0\.0\.1:\d+ .*\(TLS, HTTP\/2 by ALPN\); WebSocket also on wss:\/\//);
  const body = JSON.stringify(call('eth_chainId'));
  const curl = (args, port = s.port) => spawnSync('curl', ['-sk', ...args, '-w', '\n%{http_version} %{http_code}',
    '-H', 'content-type: application/json', '-d', body, `https://127.0.0.1:${port}/eth`], { encoding: 'utf8' }).stdout;
  const h2 = curl(['--http2']).split('\n');
  assert.deepEqual(JSON.parse(h2[0]), { jsonrpc: '2.0', id: 1, result: '0x1' });
  assert.equal(h2[1], '2 200');
  assert.equal(curl(['--http1.1']).split('\n')[1], '1.1 200');
  assert.equal(curl(['--http2'], s.wsPort).split('\n')[1], '2 200');
  // plain HTTP to the TLS port: no answer, the handshake fails (no crash)
  const plain = spawnSync('curl', ['-s', '-m', '3', '-d', body, `http://127.0.0.1:${s.port}/eth`], { encoding: 'utf8' });
  assert.notEqual(plain.status, 0);
  assert.equal(curl(['--http2']).split('\n')[1], '2 200');
  await waitFor(async () => (await metricValue(s, 'sluice_client_requests_total{protocol="h2"}')) === 3,
    { what: 'three h2 requests counted' });
  assert.equal(await metricValue(s, 'sluice_client_requests_total{protocol="http1_tls"}'), 1);
});

test('Node https (HTTP/1.1) and node:http2: calls, a batch, concurrent streams on one connection', async () => {
  const s = await gateway();
  const r = await httpsPost(s.port, call('eth_chainId'));
  assert.deepEqual([r.status, r.version, r.json.result], [200, '1.1', '0x1']);
  const client = http2.connect(`https://127.0.0.1:${s.port}`, { ca: readFileSync(pair.cert) });
  try {
    const one = (body) => new Promise((resolve, reject) => {
      const req = client.request({ ':method': 'POST', ':path': '/eth', 'content-type': 'application/json' });
      let status, text = '';
      req.on('response', (h) => { status = h[':status']; });
      req.on('data', (d) => { text += d; });
      req.on('end', () => resolve({ status, json: JSON.parse(text) }));
      req.on('error', reject);
      req.end(typeof body === 'string' ? body : JSON.stringify(body));
    });
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => one(call('eth_chainId', [], i))));
    answers.forEach((a, i) => assert.deepEqual([a.status, a.json.id, a.json.result], [200, i, '0x1']));
    const batch = await one([call('eth_chainId', [], 'x'), call('eth_blockNumber', [], 'y')]);
    assert.equal(batch.status, 200);
    assert.deepEqual(batch.json.map((a) => a.id), ['x', 'y']);
    // refusals over h2 are the same JSON-RPC errors, and the connection serves on
    const bad = await one('not json');
    assert.equal(bad.json.error.code, -32700);
    const unknown = await new Promise((resolve) => {
      const req = client.request({ ':method': 'POST', ':path': '/nope', 'content-type': 'application/json' });
      req.on('response', (h) => resolve(h[':status']));
      req.end('{}');
    });
    assert.equal(unknown, 404);
    assert.equal((await one(call('eth_chainId', [], 'after'))).json.result, '0x1');
    assert.equal(client.alpnProtocol, 'h2');
  } finally { client.close(); }
});

test('wss:// on the main port and on port + 1: the ws package and ethers WebSocketProvider', async () => {
  const s = await gateway();
  for (const port of [s.port, s.wsPort]) {
    const url = `wss://127.0.0.1:${port}/eth`;
    const ws = new WebSocket(url, { ca: readFileSync(pair.cert) });
    await new Promise((resolve, reject) => { ws.on('open', resolve); ws.on('error', reject); });
    const answer = new Promise((resolve) => ws.once('message', (d) => resolve(JSON.parse(d.toString()))));
    ws.send(JSON.stringify(call('eth_chainId', [], 7)));
    assert.deepEqual(await answer, { jsonrpc: '2.0', id: 7, result: '0x1' });
    ws.close();
    const provider = new WebSocketProvider(() => new WebSocket(url, { ca: readFileSync(pair.cert) }));
    assert.ok(await provider.getBlockNumber() >= 1000000);
    await provider.destroy();
  }
});

test('--check: a missing file, a file that is no certificate, a key of another certificate: the file named, never its content', () => {
  const other = certs.selfSigned('other');
  const junk = path.join(dir, 'junk.pem');
  writeFileSync(junk, 'SECRET-LOOKING-CONTENT-1234\n');
  const file = path.join(dir, 'check.yaml');
  const check = (tlsValue) => {
    writeFileSync(file, `server:\n  listen: "127.0.0.1:0"\n  tls: ${tlsValue}\nnetworks:\n  eth:\n    chain: ethereum\n    endpoints:\n      - { id: a, url: "http://127.0.0.1:1" }\n`);
    return spawnSync(SLUICE_BIN, ['--check', '-c', file], { encoding: 'utf8' });
  };
  const ok = check(tlsLine(pair));
  assert.equal(ok.status, 0, ok.stderr);
  assert.match(ok.stdout, /listeners: https:\/\/127\.0\.0\.1:0; WebSocket on it/);
  assert.ok(ok.stdout.includes(`certificate sha256 ${opensslFingerprint(pair.cert).replace(/:/g, '').toLowerCase()}`), ok.stdout);

  const missing = check(tlsLine({ cert: path.join(dir, 'nope.pem'), key: pair.key }));
  assert.equal(missing.status, 1);
  assert.match(missing.stderr, /check\.yaml:3: server\.tls\.cert_file: cert_file \S+nope\.pem: cannot open: No such file or directory/);
  const notCert = check(tlsLine({ cert: junk, key: pair.key }));
  assert.equal(notCert.status, 1);
  assert.match(notCert.stderr, /server\.tls\.cert_file: cert_file \S+junk\.pem: not a PEM certificate/);
  assert.doesNotMatch(notCert.stderr + notCert.stdout, /SECRET-LOOKING/);
  const notKey = check(tlsLine({ cert: pair.cert, key: junk }));
  assert.match(notKey.stderr, /server\.tls\.key_file: key_file \S+junk\.pem: not a PEM private key/);
  assert.doesNotMatch(notKey.stderr + notKey.stdout, /SECRET-LOOKING/);
  const mismatch = check(tlsLine({ cert: pair.cert, key: other.key }));
  assert.equal(mismatch.status, 1);
  assert.match(mismatch.stderr, /key_file \S+other\.key is not the key of cert_file \S+server\.pem/);
  const noKey = check(`{ cert_file: "${pair.cert}" }`);
  assert.match(noKey.stderr, /server\.tls\.key_file: required key 'key_file' is missing/);
});

test('SIGHUP after the certificate is replaced in place: the new one is served; a broken one is refused and the old kept', async () => {
  const live = certs.selfSigned('live');
  const s = await gateway({}, live);
  const first = await servedFingerprint(s.port);
  assert.equal(first, opensslFingerprint(live.cert));
  const next = certs.selfSigned('next');
  copyFileSync(next.cert, live.cert);
  copyFileSync(next.key, live.key);
  const seq = (await events(s)).at(-1)?.seq ?? 0;
  s.child.kill('SIGHUP');
  const want = opensslFingerprint(next.cert);
  assert.notEqual(want, first);
  await waitFor(async () => (await servedFingerprint(s.port)) === want, { what: 'the new certificate served', timeoutMs: 10000 });
  assert.equal(await servedFingerprint(s.wsPort), want);
  const r = await httpsPost(s.port, call('eth_chainId'), readFileSync(next.cert));
  assert.equal(r.json.result, '0x1');
  // the admin connection may have been an old worker's, now draining: ask again
  const reloaded = await waitFor(async () => (await events(s, seq).catch(() => []))?.find((e) => e.kind === 'config_reloaded'),
    { what: 'a config_reloaded event' });
  assert.match(reloaded.reason, /server\.tls \(certificate\)/);

  writeFileSync(live.cert, 'not a certificate\n');
  s.child.kill('SIGHUP');
  await waitFor(() => /reload failed: 1 error\(s\)/.test(s.logs()), { what: 'the refused reload' });
  assert.equal(await servedFingerprint(s.port), want);
});

test('a client that never sends its ClientHello is closed within first_request_timeout_ms; TLS connections count per address', async () => {
  const s = await gateway({ first_request_timeout_ms: 500, max_connections_per_address: 4 });
  const open = () => new Promise((resolve) => {
    const sock = net.connect(s.port, '127.0.0.1');
    const t0 = Date.now();
    const closed = new Promise((r) => sock.on('close', () => r(Date.now() - t0)));
    sock.on('error', () => {});
    sock.on('connect', () => resolve({ sock, closed }));
  });
  const silent = [];
  for (let i = 0; i < 4; i++) silent.push(await open());
  // a fifth from the same address is closed at accept, before any handshake
  const fifth = await open();
  const fifthMs = await fifth.closed;
  assert.ok(fifthMs < 400, `the fifth connection is closed at once (${fifthMs} ms)`);
  // the four silent ones go at the handshake timeout, not at the idle timeout (10 s)
  const times = await Promise.all(silent.map((c) => c.closed));
  for (const ms of times) assert.ok(ms >= 400 && ms < 4000, `closed after ${ms} ms`);
  // a handshake begun and never finished (a ClientHello's first bytes) goes the same way
  const partial = await open();
  partial.sock.write(Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01]));
  const ms = await partial.closed;
  assert.ok(ms >= 400 && ms < 4000, `partial handshake closed after ${ms} ms`);
  // the seats are free again
  await sleep(50);
  assert.equal((await httpsPost(s.port, call('eth_chainId'))).json.result, '0x1');
  assert.ok(await metricValue(s, 'sluice_client_connections_closed_total{reason="per_address"}') >= 1);
});

test('an HTTP/2 connection whose calls are being answered never gives way at max_connections (it reads meanwhile)', async () => {
  const slow = await startFake({ name: 'slow', args: ['--mode', 'slow', '--method', 'eth_blockNumber', '--delay-ms', '1500'] });
  started.push(slow);
  const s = await startSluice({
    workers: 1,
    server: { tls: tlsLine(pair), max_connections: 2, max_connections_per_address: 2 },
    networks: { eth: { lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: [{ id: 'slow', url: slow.url }] } },
  });
  started.push(s);
  const client = http2.connect(`https://127.0.0.1:${s.port}`, { ca: readFileSync(pair.cert) });
  client.on('error', () => {});
  try {
    const pending = new Promise((resolve, reject) => {
      const req = client.request({ ':method': 'POST', ':path': '/eth', 'content-type': 'application/json' });
      let text = '';
      req.on('data', (d) => { text += d; });
      req.on('end', () => resolve(JSON.parse(text)));
      req.on('error', reject);
      req.end(JSON.stringify(call('eth_blockNumber')));
    });
    // the call is upstream now (a loaded machine may take a while to get it there)
    await waitFor(async () => ((await slow.stats()).methods?.eth_blockNumber ?? 0) >= 1, { what: 'the call upstream' });
    // two more connections arrive while the worker is full: the h2 one must not be closed for them
    const others = [];
    for (let i = 0; i < 2; i++) {
      // from other addresses: the per-address cap is not what closes anything here
      others.push(tls.connect({ host: '127.0.0.1', port: s.port, rejectUnauthorized: false, ALPNProtocols: ['http/1.1'],
        localAddress: `127.0.0.${2 + i}` }));
      others.at(-1).on('error', () => {});
      await sleep(100);
    }
    const answer = await pending;
    assert.match(answer.result, /^0x/);
    // the idle one went for the newcomer instead
    assert.equal(await metricValue(s, 'sluice_client_connections_closed_total{reason="evicted_idle"}'), 1);
    others.forEach((o) => o.destroy());
  } finally { client.close(); }
});

test('HTTP/2 is off unless server.tls.http2: true: curl --http2 then gets HTTP/1.1', async () => {
  const s = await startSluice({
    workers: 1,
    server: { tls: tlsLine(pair, false) },
    networks: { eth: { lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: [{ id: 'a', url: upstream.url }] } },
  });
  started.push(s);
  assert.match(s.logs(), /listening on https:\/\/127\.0\.0\.1:\d+ with 1 worker\(s\) \(TLS\);/);
  const out = spawnSync('curl', ['-sk', '--http2', '-o', '/dev/null', '-w', '%{http_version} %{http_code}',
    '-H', 'content-type: application/json', '-d', JSON.stringify(call('eth_chainId')), `https://127.0.0.1:${s.port}/eth`],
  { encoding: 'utf8' }).stdout;
  assert.equal(out, '1.1 200');
});

test('server.tls added by a reload: the same port speaks TLS from then on', async () => {
  const s = await startSluice({
    workers: 1,
    networks: { eth: { lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: [{ id: 'a', url: upstream.url }] } },
  });
  started.push(s);
  writeFileSync(s.file, readFileSync(s.file, 'utf8').replace(/^server:\n/m, `server:\n  tls: ${tlsLine(pair)}\n`));
  s.child.kill('SIGHUP');
  const r = await waitFor(() => httpsPost(s.port, call('eth_chainId')).catch(() => undefined), { what: 'https after the reload' });
  assert.deepEqual([r.status, r.json.result], [200, '0x1']);
});
