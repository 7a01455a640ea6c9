// Client-facing answers name upstream endpoints by id only. Many failure
// modes (HTTP 5xx, garbage, resets, refused connections, a TLS failure, an
// unresolvable host, timeouts, the request deadline, upstream rate limits,
// an ambiguous write, breakers open, everything drained, batches, client
// errors), then every status line, header and body a client got is searched
// for the upstreams' host names, IP addresses and ports. The access log shows
// that sluice knew them all along (operators get the redacted URL there).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { startFake, startSluice, call, adminPost, sleep } from '../lib/harness.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

// every byte the client gets: status line, headers, body
function request(url, { method = 'POST', headers = {}, body } = {}) {
  const data = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const h = { connection: 'close', ...headers };
    if (data !== undefined) h['content-length'] = Buffer.byteLength(data);
    if (data !== undefined && !('content-type' in h)) h['content-type'] = 'application/json';
    const req = (url.startsWith('https:') ? https : http).request(url, { method, agent: false, headers: h }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { text += d; });
      res.on('end', () => {
        const head = [`HTTP/1.1 ${res.statusCode} ${res.statusMessage}`];
        for (let i = 0; i < res.rawHeaders.length; i += 2) head.push(`${res.rawHeaders[i]}: ${res.rawHeaders[i + 1]}`);
        let json;
        try { json = JSON.parse(text); } catch { json = undefined; }
        resolve({ status: res.statusCode, all: `${head.join('\n')}\n\n${text}`, text, json });
      });
    });
    req.on('error', reject);
    req.end(data);
  });
}

async function freePort() {
  const srv = net.createServer();
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  return port;
}

test('no client-facing answer names an upstream host, IP address or port', async () => {
  const fake = (name, mode, extra = []) => startFake({ name, args: mode ? ['--mode', mode, ...extra] : extra });
  const f = {
    ok: await fake('ok'),
    e500: await fake('e500', 'http500'),
    garbage: await fake('garbage', 'garbage'),
    reset: await fake('reset', 'reset'),
    hang: await fake('hang', 'hang'),
    limited: await fake('limited', 'http429', ['--retry-after', '2']),
  };
  started.push(...Object.values(f));
  const dead = await freePort();
  const T = 'timeouts: { connect_ms: 300, first_byte_ms: 300, attempt_ms: 400, request_ms: 3000 }';
  const NOPROBE = 'ranking: { probe_interval_ms: 0 }';
  const KEEP = 'breaker: { consecutive: 1000, failure_count: 1000 }';
  const s = await startSluice({
    workers: 2,
    networks: {
      // every endpoint fails, each its own way
      fail: {
        lines: [T, NOPROBE, KEEP, 'max_attempts: 7'],
        endpoints: [
          { id: 'http500', url: `${f.e500.url}/v2/k` },
          { id: 'garbage', url: f.garbage.url },
          { id: 'reset', url: f.reset.url },
          { id: 'refused', url: `http://127.0.0.1:${dead}/rpc` },
          { id: 'tls', url: `https://127.0.0.1:${f.ok.port}/` }, // TLS to a plain HTTP server
          { id: 'nodns', url: `http://nonexistent.invalid:${f.ok.port}/` },
          { id: 'hang', url: f.hang.url },
        ],
      },
      slow: { lines: [T, NOPROBE, KEEP], endpoints: [{ id: 'hang', url: f.hang.url }] },
      deadline: {
        lines: ['timeouts: { connect_ms: 300, first_byte_ms: 400, attempt_ms: 400, request_ms: 600 }', NOPROBE, KEEP],
        endpoints: [{ id: 'hang', url: f.hang.url }, { id: 'hang2', url: f.hang.url }, { id: 'hang3', url: f.hang.url }],
      },
      limited: { lines: [T, NOPROBE], endpoints: [{ id: 'limited', url: f.limited.url }] },
      write: { lines: [T, NOPROBE, KEEP], endpoints: [{ id: 'reset', url: f.reset.url }, { id: 'ok', url: f.ok.url }] },
      breaker: { lines: [T, NOPROBE, 'breaker: { consecutive: 1, cooldown_ms: 600000 }'], endpoints: [{ id: 'e500', url: f.e500.url }] },
      drained: { lines: [T, NOPROBE], endpoints: [{ id: 'ok', url: f.ok.url }] },
      good: { lines: [T, NOPROBE], endpoints: [{ id: 'ok', url: f.ok.url }] },
    },
  });
  started.push(s);
  assert.equal((await adminPost(s, '/admin/endpoints/drained/ok/drain')).status, 200);
  await sleep(150);

  const got = [];
  const send = async (net, body, opts = {}) => {
    const r = await request(`${s.base}/${net}`, { body, ...opts });
    got.push({ what: `${opts.method || 'POST'} /${net} ${JSON.stringify(body)?.slice(0, 80)}`, ...r });
    return r;
  };
  const raw = '0x02f86b0180843b9aca00850ba43b7400825208940000000000000000000000000000000000000003880de0b6b3a764000080c0';
  for (let i = 0; i < 3; i++) await send('fail', call('eth_chainId', [], i));
  await send('fail', [call('eth_chainId', [], 1), call('eth_blockNumber', [], 2)]);
  await send('slow', call('eth_chainId'));
  await send('deadline', call('eth_chainId'));
  await send('limited', call('eth_getBalance', ['0x0000000000000000000000000000000000000000', 'latest']));
  await send('write', call('eth_sendRawTransaction', [raw]));
  await send('breaker', call('eth_chainId'));
  await sleep(150); // the open breaker reaches every worker
  for (let i = 0; i < 3; i++) await send('breaker', call('eth_chainId'));
  await send('drained', call('eth_chainId'));
  await send('good', call('eth_call', [{}, 'latest']));
  await send('good', '{"jsonrpc":"2.0",');
  await send('good', call('admin_peers'));
  await send('nope', call('eth_chainId'));
  await send('good/sl_not_a_key_0000000000000000', call('eth_chainId'));
  await send('good', call('eth_chainId'), { headers: { 'content-type': 'text/plain' } });
  await send('good', undefined, { method: 'GET' });

  // the failure modes really happened
  const statuses = new Set(got.map((r) => r.status));
  for (const st of [200, 401, 404, 405, 415, 429, 502, 503, 504]) assert.ok(statuses.has(st), `a ${st}: ${[...statuses]}`);
  const attempts = got.flatMap((r) => [r.json].flat().flatMap((m) => m?.error?.data?.attempts || []));
  const errors = new Set(attempts.map((a) => a.error));
  for (const e of ['connection closed before the answer was complete', 'connection refused or unreachable',
    'no answer within first_byte_ms'])
    assert.ok(errors.has(e), `an attempt failed with "${e}": ${[...errors]}`);
  assert.ok(attempts.some((a) => a.status === 500), 'an HTTP 500');
  assert.ok(attempts.some((a) => a.endpoint === 'tls'), 'the TLS endpoint was tried');
  assert.ok(got.some((r) => r.json?.error?.data?.outcome === 'ambiguous_write'), 'an ambiguous write');
  assert.ok(got.some((r) => r.json?.error?.data?.outcome === 'timeout'), 'a timeout');

  // the search is live: the access log names the same upstreams by URL
  const ports = [dead, ...Object.values(f).map((x) => x.port)];
  const access = JSON.stringify(s.accessLines());
  assert.match(access, /127\.0\.0\.1/);
  for (const p of [f.e500.port, f.garbage.port, f.reset.port, dead]) assert.ok(access.includes(`:${p}`), `port ${p} in the access log`);

  const leaks = [];
  for (const r of got) {
    for (const needle of ['127.0.0.1', 'nonexistent.invalid', 'localhost', '[::1]'])
      if (r.all.includes(needle)) leaks.push(`${needle} in ${r.what}:\n${r.all}`);
    for (const p of ports)
      if (new RegExp(`\\b${p}\\b`).test(r.all)) leaks.push(`port ${p} in ${r.what}:\n${r.all}`);
  }
  assert.deepEqual(leaks, []);
});
