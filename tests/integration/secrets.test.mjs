// No key ever leaves the process. One realistic session with every kind of
// secret sluice holds (upstream keys in a URL path, a query string, userinfo,
// a header, an ${ENV} value; the admin token; client keys) and every error
// path that might print one (5xx, 429, TLS failure, refused connection,
// breakers, drains, a failed write, 401s, 404s, --check of a broken config).
// Then every byte sluice produced is searched for the raw secrets: stderr
// (diagnostics at debug level and the access log), every response body and
// header from the client and admin APIs, the event feed, the SSE stream, the
// metrics, and the --check output. The same search run over what we gave
// sluice (config file, environment, client requests) finds every secret,
// and recording proxies in front of the upstreams show sluice really sent
// them: the search is live, and the secrets were really in use.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { startFake, startSluice, call, sleep, waitFor, tempDir, SLUICE_BIN, waitLog } from '../lib/harness.mjs';

const started = [];
const servers = [];
after(async () => {
  for (const srv of servers) srv.close();
  await Promise.all(started.map((p) => p.stop()));
});

// Long, unique, and nothing a log line would contain by chance.
const S = {
  pathKey: 'upkey-path-9f8e7d6c5b4a3f2e1d0c7b6a',            // https://host/v2/<key>
  queryKey: 'upkey-query-1a2b3c4d5e6f7a8b9c0d1e2f',          // ?api-key=<key>
  headerKey: 'upkey-header-5e4d3c2b1a0f9e8d7c6b5a49',        // headers: { X-Api-Key: <key> }
  envKey: 'upkey-env-7c6b5a4f3e2d1c0b9a8f7e6d5c4b',          // ${SLUICE_SECRETS_TEST_KEY}
  userinfo: 'upkey-basic-3f2e1d0c9b8a7f6e5d4c3b2a',          // http://user:<pw>@host/
  deadKey: 'upkey-dead-0d1c2b3a4f5e6d7c8b9a0f1e',            // in the path of a refused endpoint
  adminToken: 'admtok-0e1d2c3b4a5f6e7d8c9b0a1f2e3d',
  wrongToken: 'admtok-wrong-6a7b8c9d0e1f2a3b4c5d6e7f',       // a caller's bad guess: not to be echoed either
  clientPath: 'sl_clientpath8e7d6c5b4a3f2e1d0c9b8a7f',       // a client key, in the URL path
  clientHeader: 'sl_clienthdr2b3c4d5e6f7a8b9c0d1e2f3a4b',    // a client key, in X-API-Key
  unknownKey: 'sl_unknown6f5e4d3c2b1a0f9e8d7c6b5a4f3e',      // not configured: 401
  checkKey: 'chkkey-path-4b5c6d7e8f9a0b1c2d3e4f5a6b7c',      // in an invalid URL, for --check
  checkQuery: 'chkkey-query-8c9d0e1f2a3b4c5d6e7f8a9b0c1d',
  checkEnv: 'chkkey-env-2e3f4a5b6c7d8e9f0a1b2c3d4e5f',
};
const sha = (k) => createHash('sha256').update(k).digest('hex');
// A path as a label: secrets named, not shown (labels go into failure messages).
const label = (p) => Object.entries(S).reduce((acc, [k, v]) => acc.split(v).join(`<${k}>`), p);
const secretsIn = (text) => Object.entries(S).filter(([, v]) => text.includes(v)).map(([k]) => k);

// A pass-through proxy in front of a fake provider that remembers each
// request's line and headers: proof that sluice really sends the secrets.
async function recorder(target) {
  const seen = [];
  const srv = http.createServer((req, res) => {
    seen.push({ method: req.method, url: req.url, headers: req.headers });
    const chunks = [];
    req.on('data', (d) => chunks.push(d));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const up = http.request({ host: '127.0.0.1', port: target.port, method: req.method, path: req.url,
        headers: { 'content-type': 'application/json', 'content-length': body.length } }, (ur) => {
        res.writeHead(ur.statusCode, ur.headers);
        ur.pipe(res);
      });
      up.on('error', () => { res.destroy(); });
      up.end(body);
    });
  });
  srv.keepAliveTimeout = 30000;
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  servers.push(srv);
  return { port: srv.address().port, seen };
}

// A plain HTTP server: a TLS ClientHello gets "400 Bad Request" at once.
async function plainHttp() {
  const srv = http.createServer((req, res) => { res.writeHead(404); res.end(); });
  const st = { connections: 0 };
  srv.on('connection', () => { st.connections++; });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  servers.push(srv);
  st.port = srv.address().port;
  return st;
}

async function closedPort() {
  const srv = net.createServer();
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  return port;
}

// Every response is kept whole: status line, every header, the body.
const outputs = [];
function request(url, { method = 'POST', headers = {}, body, what } = {}) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    const h = { connection: 'close', ...headers };
    if (data !== undefined) {
      h['content-length'] = Buffer.byteLength(data);
      if (!Object.keys(h).some((k) => k.toLowerCase() === 'content-type')) h['content-type'] = 'application/json';
    }
    // a new connection each time: the kernel spreads them over both workers
    const req = http.request(url, { method, agent: false, headers: h }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { text += d; });
      res.on('end', () => {
        const head = [`HTTP ${res.statusCode} ${res.statusMessage}`];
        for (let i = 0; i < res.rawHeaders.length; i += 2) head.push(`${res.rawHeaders[i]}: ${res.rawHeaders[i + 1]}`);
        outputs.push({ where: `${what || method} ${label(new URL(url).pathname)}`, text: `${head.join('\n')}\n\n${text}` });
        let json;
        try { json = JSON.parse(text); } catch { json = undefined; }
        resolve({ status: res.statusCode, headers: res.headers, text, json });
      });
    });
    req.on('error', reject);
    req.end(data);
  });
}

// The SSE stream, as raw text.
function sseRaw(url, token) {
  const got = { text: '', status: 0 };
  const req = http.get(url, { headers: { authorization: `Bearer ${token}` } });
  req.on('response', (res) => {
    got.status = res.statusCode;
    got.head = res.rawHeaders.join('\n');
    res.setEncoding('utf8');
    res.on('data', (d) => { got.text += d; });
    res.on('error', () => {});
  });
  req.on('error', () => {});
  got.close = () => req.destroy();
  return got;
}

test('no secret appears in any log line, response, header, event, metric or --check message', async () => {
  // ---- upstreams: a failing one (500), a rate-limiting one (429), a plain-HTTP
  // one addressed as https (the TLS handshake fails), a closed port, a healthy one
  const a = await startFake({ name: 'a' }), b = await startFake({ name: 'b' }), g = await startFake({ name: 'g' });
  started.push(a, b, g);
  const ra = await recorder(a), rb = await recorder(b), rg = await recorder(g);
  const plain = await plainHttp();
  const dead = await closedPort();
  await a.setMode('http500');
  await b.setMode('http429', { retry_after: 1 });

  const env = { SLUICE_SECRETS_TEST_KEY: S.envKey };
  const config = `server: { listen: "127.0.0.1:0", workers: 2 }
admin: { listen: "127.0.0.1:0", token: "${S.adminToken}" }
log: { level: debug }
tiers:
  anonymous: { per_minute: 100000 }
  pro: { per_second: 1000 }
keys:
  - { sha256: "${sha(S.clientPath)}", tier: pro, name: team-path }
  - { sha256: "${sha(S.clientHeader)}", tier: pro, name: team-header }
networks:
  eth:
    chain: ethereum
    breaker: { consecutive: 2, cooldown_ms: 1000 }
    timeouts: { connect_ms: 1000, first_byte_ms: 2000, attempt_ms: 3000, request_ms: 8000 }
    endpoints:
      - id: p500
        url: "http://127.0.0.1:${ra.port}/v2/${S.pathKey}"
      - id: q429
        url: "http://127.0.0.1:${rb.port}/rpc?api-key=${S.queryKey}"
      - id: tlsbad
        url: "https://127.0.0.1:${plain.port}/v3/\${SLUICE_SECRETS_TEST_KEY}"
      - id: dead
        url: "http://rpcuser:${S.userinfo}@127.0.0.1:${dead}/rpc/${S.deadKey}"
      - id: good
        url: "http://127.0.0.1:${rg.port}/eth"
        headers: { X-Api-Key: "${S.headerKey}" }
  bad:
    chain: ethereum
    breaker: { consecutive: 2, cooldown_ms: 1000 }
    endpoints:
      - id: bad-500
        url: "http://127.0.0.1:${ra.port}/v2/${S.pathKey}"
      - id: bad-dead
        url: "http://rpcuser:${S.userinfo}@127.0.0.1:${dead}/rpc/${S.deadKey}"
`;
  const s = await startSluice(config, { env });
  started.push(s);
  const admin = (p, { method = 'GET', token = S.adminToken } = {}) => request(`${s.admin}${p}`,
    { method, headers: token ? { authorization: `Bearer ${token}` } : {}, what: `admin ${method}` });

  const sse = sseRaw(`${s.admin}/admin/events/stream?heartbeat_ms=1000`, S.adminToken);

  // ---- client traffic: anonymous, both client keys, the failure paths
  const rpc = s.url('eth');
  const eth = (i) => call('eth_call', [{ to: '0x0000000000000000000000000000000000000001' }, 'latest'], i);
  const raw = (n) => call('eth_sendRawTransaction', ['0x02f86b0180843b9aca00850ba43b7400825208940000000000000000000000000000000000000003880de0b6b3a764000080c0'], n);
  // a network where every endpoint fails: 502 with the attempts listed, an
  // ambiguous write, then (breakers open) 503
  await request(`${s.url('bad')}/${S.clientPath}`, { body: raw(1) });
  for (let i = 0; i < 5; i++) await request(s.url('bad'), { body: eth(i) });
  for (let i = 0; i < 12; i++) await request(rpc, { body: eth(i) });
  for (let i = 0; i < 4; i++) await request(`${rpc}/${S.clientPath}`, { body: eth(i) });
  for (let i = 0; i < 4; i++) await request(rpc, { body: eth(i), headers: { 'x-api-key': S.clientHeader } });
  await request(`${rpc}/${S.clientPath}`, { body: call('eth_blockNumber'), headers: { 'x-api-key': S.clientHeader } });
  await request(rpc, { body: [call('eth_blockNumber', [], 1), call('eth_getBalance', ['0x0000000000000000000000000000000000000002', 'latest'], 2), eth(3)] });
  await request(rpc, { body: raw(7) });
  await request(rpc, { body: call('debug_traceTransaction', ['0x00']) });
  await request(rpc, { body: '{"jsonrpc":"2.0","id":1,"method":' });
  await request(rpc, { body: { jsonrpc: '2.0', method: 'eth_blockNumber', params: [] } }); // notification
  await request(`${rpc}/${S.unknownKey}`, { body: eth(1), what: 'unknown key in path' });
  await request(rpc, { body: eth(1), headers: { 'x-api-key': S.unknownKey }, what: 'unknown key in header' });
  await request(`${s.base}/nope/${S.clientPath}`, { body: eth(1), what: 'unknown network' });
  await request(`${rpc}/${S.clientPath}`, { method: 'GET', what: 'GET' });
  await request(`${rpc}/${S.clientPath}`, { method: 'OPTIONS', what: 'preflight',
    headers: { origin: 'http://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'x-api-key' } });
  await request(rpc, { body: eth(1), headers: { 'content-type': 'text/plain' }, what: 'wrong content type' });

  // ---- breakers open on the failing endpoints (windows are per worker: keep calling)
  const opened = async () => {
    const r = await admin('/admin/events?since=0&limit=1000');
    return (r.json || []).filter((e) => e.kind === 'breaker_opened').map((e) => e.endpoint);
  };
  // (an endpoint failing most calls also drops out of the ranking, so which of
  // eth's failing endpoints trips first depends on timing: any one will do)
  let ids = [];
  await waitFor(async () => {
    ids = await opened();
    if (ids.includes('bad-500') && ids.includes('bad-dead') && ['p500', 'tlsbad', 'dead'].some((id) => ids.includes(id))) return true;
    await request(rpc, { body: eth(99) });
    return false;
  }, { timeoutMs: 20000, intervalMs: 100, what: 'breakers to open' }).catch((e) => { throw new Error(`${e.message}; opened: ${ids}`); });

  // ---- with the healthy endpoint drained, every answer is a failure naming the attempts
  assert.equal((await admin('/admin/endpoints/eth/good/drain', { method: 'POST' })).status, 200);
  await sleep(300); // breakers half-open after 1 s: some attempts hit the failing endpoints again
  for (let i = 0; i < 6; i++) {
    await request(rpc, { body: eth(i) });
    await request(`${rpc}/${S.clientPath}`, { body: call('eth_sendRawTransaction', ['0x02f86b01808400'], i) });
    await sleep(200);
  }
  assert.equal((await admin('/admin/endpoints/eth/good/undrain', { method: 'POST' })).status, 200);
  await sleep(200);
  for (let i = 0; i < 4; i++) await request(rpc, { body: eth(i) });

  // ---- the admin API, every route, also refused ones
  const view = await admin('/admin/endpoints');
  assert.equal(view.status, 200);
  const evs = await admin('/admin/events?since=0&limit=1000');
  assert.equal(evs.status, 200);
  const metrics = await admin('/metrics');
  assert.equal(metrics.status, 200);
  await admin('/healthz');
  await admin('/readyz');
  await admin('/admin/endpoints/eth/nope/drain', { method: 'POST' });
  await admin('/admin/nothing-here');
  await admin('/admin/endpoints', { token: S.wrongToken });
  await admin('/metrics', { token: null });
  await sleep(400); // the SSE stream catches up
  sse.close();
  assert.equal(sse.status, 200);
  outputs.push({ where: 'SSE /admin/events/stream', text: `${sse.head}\n\n${sse.text}` });

  // ---- a clean stop: the shutdown lines too
  const exit = await s.stop();
  assert.equal(exit.code, 0);
  outputs.push({ where: 'sluice stderr (diagnostics + access log)', text: s.logs() });

  // ---- --check of the session's config, and of a broken one
  const check = (file, extraEnv = {}) => {
    const r = spawnSync(SLUICE_BIN, ['--check', '-c', file], { encoding: 'utf8', timeout: 20000, env: { ...process.env, ...extraEnv } });
    return r;
  };
  const good = check(s.file, env);
  assert.equal(good.status, 0, good.stderr);
  outputs.push({ where: '--check (valid config)', text: good.stdout + good.stderr });
  const dir = tempDir();
  const badFile = path.join(dir, 'bad.yaml');
  const badConfig = `admin: { listen: "127.0.0.1:0", token: "${S.adminToken}" }
networks:
  eth:
    endpoints:
      - id: scheme
        url: "htps://eth-mainnet.example.com/v2/${S.checkKey}"
      - id: port
        url: "https://eth-mainnet.example.com:99999/rpc?api-key=${S.checkQuery}"
      - id: space
        url: "https://eth mainnet.example.com/v2/${S.checkKey}"
      - id: env
        url: "https//eth-mainnet.example.com/v2/\${SLUICE_SECRETS_CHECK_KEY}"
      - id: hdr
        url: "http://127.0.0.1:1/"
        headers: { "Bad Header": "${S.headerKey}" }
`;
  writeFileSync(badFile, badConfig);
  const bad = check(badFile, { SLUICE_SECRETS_CHECK_KEY: S.checkEnv });
  assert.equal(bad.status, 1, `--check must refuse the broken config:\n${bad.stdout}${bad.stderr}`);
  assert.ok((bad.stdout + bad.stderr).split('\n').filter((l) => /invalid url/.test(l)).length >= 4,
    `every bad URL is reported:\n${bad.stdout}${bad.stderr}`);
  outputs.push({ where: '--check (broken config)', text: bad.stdout + bad.stderr });

  // ---- the session did what it meant to (or the search would prove little)
  const all = outputs.map((o) => o.text).join('\n');
  const access = s.accessLines();
  assert.ok(access.length >= 40, `access lines: ${access.length}`);
  const statuses = {};
  for (const l of access) statuses[`${l.status} ${l.outcome}`] = (statuses[`${l.status} ${l.outcome}`] || 0) + 1;
  for (const status of [200, 204, 401, 404, 405, 415, 429, 502]) assert.ok(access.some((l) => l.status === status), `an access line with ${status}: ${JSON.stringify(statuses)}`);
  assert.ok(access.some((l) => l.outcome === 'ambiguous_write'), `a write failed ambiguously: ${JSON.stringify(statuses)}`);
  assert.ok(access.some((l) => l.key === 'team-path') && access.some((l) => l.key === 'team-header'),
    'client keys are known by their names');
  const kinds = new Set((evs.json || []).map((e) => e.kind));
  for (const k of ['breaker_opened', 'endpoint_drained', 'endpoint_undrained']) assert.ok(kinds.has(k), `event ${k}`);
  assert.match(sse.text, /event: breaker_opened/);
  assert.match(metrics.text, /sluice_upstream_attempts_total\{network="eth",endpoint="p500"/);
  assert.equal(view.json.length, 7);
  assert.ok(view.json.filter((e) => e.id !== 'good').every((e) => e.url.includes('***')),
    `every endpoint URL with a secret is shown redacted: ${view.json.map((e) => e.url)}`);
  assert.ok(ra.seen.some((r) => r.url === `/v2/${S.pathKey}`), 'sluice sent the path key upstream');
  assert.ok(rb.seen.some((r) => r.url === `/rpc?api-key=${S.queryKey}`), 'sluice sent the query key upstream');
  assert.ok(rg.seen.some((r) => r.headers['x-api-key'] === S.headerKey), 'sluice sent the header key upstream');
  assert.ok(plain.connections > 0, 'sluice tried the https endpoint');
  await waitLog(s, /eth\/tlsbad: TLS handshake with https:\/\/127\.0\.0\.1:\d+\/v3\/\*\*\* failed/);

  // SLUICE_SECRETS_DUMP=FILE keeps everything searched, to read it by eye
  if (process.env.SLUICE_SECRETS_DUMP)
    writeFileSync(process.env.SLUICE_SECRETS_DUMP, outputs.map((o) => `=== ${o.where}\n${o.text}`).join('\n'));
  // ---- the search finds every secret in what we handed sluice...
  const given = [config, badConfig, JSON.stringify(env), `SLUICE_SECRETS_CHECK_KEY=${S.checkEnv}`,
    `${rpc}/${S.clientPath}`, `x-api-key: ${S.clientHeader}`, `${rpc}/${S.unknownKey}`, `Bearer ${S.wrongToken}`].join('\n');
  assert.deepEqual(secretsIn(given), Object.keys(S), 'the search is live: it finds every secret where we put it');
  assert.deepEqual(secretsIn(config), ['pathKey', 'queryKey', 'headerKey', 'userinfo', 'deadKey', 'adminToken'],
    'the config file text holds the literal upstream keys and the admin token');

  // ---- ...and none in anything sluice said
  const leaks = [];
  for (const o of outputs) {
    for (const name of secretsIn(o.text)) {
      const at = o.text.indexOf(S[name]);
      leaks.push(`${name} in ${o.where}: …${o.text.slice(Math.max(0, at - 160), at + S[name].length + 80)}…`);
    }
  }
  assert.deepEqual(leaks, [], `secrets left the process:\n${leaks.join('\n\n')}`);
  assert.ok(outputs.length > 60, `outputs searched: ${outputs.length}`);
});

// sluice returns an upstream's JSON-RPC error byte for byte, unless it
// carries a registered secret: a provider whose error message quotes the
// request URL would otherwise hand its key to sluice's client.
test('an upstream error message that quotes its own URL does not carry the key to the client', async () => {
  const key = 'upkey-echo-0a9b8c7d6e5f4a3b2c1d0e9f8a7b';
  const srv = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      let parsed = null;
      try { parsed = JSON.parse(body); } catch { /* not JSON */ }
      const refuse = (m) => ({ jsonrpc: '2.0', id: m?.id ?? null, error: { code: -32000, message: `${req.url} is not allowed to call this method` } });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(Array.isArray(parsed) ? parsed.map(refuse) : refuse(parsed)));
    });
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  servers.push(srv);
  const s = await startSluice(`server: { listen: "127.0.0.1:0", workers: 1 }
admin: { listen: off }
networks: { eth: { ranking: { probe_interval_ms: 0 }, endpoints: [{ id: only, url: "http://127.0.0.1:${srv.address().port}/v2/${key}" }] } }
`);
  started.push(s);
  const r = await request(s.url('eth'), { body: call('eth_call', [{}, 'latest']) });
  assert.equal(r.status, 200);
  assert.equal(r.json.error.code, -32000, 'the upstream error is returned');
  assert.equal(r.json.error.message, '/v2/*** is not allowed to call this method', 'only the key is taken out');
  assert.ok(!r.text.includes(key), `the key reached the client: ${r.text}`);
  // batch members are spliced, not passed through: the same scrub applies
  const b = await request(s.url('eth'), { body: [call('eth_call', [{}, 'latest'], 7), call('eth_call', [{}, 'latest'], 'x')] });
  assert.equal(b.status, 200);
  assert.deepEqual(b.json.map((m) => [m.id, m.error.message]),
    [[7, '/v2/*** is not allowed to call this method'], ['x', '/v2/*** is not allowed to call this method']]);
  assert.ok(!b.text.includes(key), `the key reached the client: ${b.text}`);
});
