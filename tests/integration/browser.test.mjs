// A real browser (headless Chromium) on another origin reads sluice's
// rate-limit headers: the CORS preflight (OPTIONS) passes, the answer exposes
// X-RateLimit-* and X-Sluice-Endpoint to the page's script. With an origin
// allowlist, a page from another origin cannot read the answer at all, and
// its POST never reaches sluice. The same headers are checked from Node too.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import http from 'node:http';
import { startFake, startSluice, post, call, tempDir } from '../lib/harness.mjs';

const started = [];
const servers = [];
after(async () => {
  for (const srv of servers) srv.close();
  await Promise.all(started.map((p) => p.stop()));
});

const READ = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'X-RateLimit-Window',
  'X-RateLimit-Bucket', 'X-Sluice-Endpoint'];
const EXPOSED = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'X-RateLimit-Window',
  'X-RateLimit-Bucket', 'Retry-After'];

function findChromium() {
  const names = [process.env.CHROMIUM_BIN, 'chromium', 'chromium-browser', 'google-chrome'].filter(Boolean);
  for (const n of names) {
    const r = spawnSync('sh', ['-c', `command -v "${n}"`], { encoding: 'utf8' });
    if (r.status === 0 && r.stdout.trim()) return r.stdout.trim();
  }
  return null;
}
const CHROMIUM = findChromium();
// tests/run-all.sh installs chromium and sets SLUICE_REQUIRE_ALL: there a
// missing browser is a failure, not a skip (a run by hand may skip).
function needChromium(t) {
  if (CHROMIUM) return true;
  if (process.env.SLUICE_REQUIRE_ALL === '1') assert.fail('chromium is not installed (deploy/install-deps.sh installs it)');
  t.skip('chromium is not installed');
  return false;
}

// The page: one cross-origin POST with Content-Type application/json (not a
// "simple" request, so the browser sends an OPTIONS preflight first), then
// what the script could read goes into <pre id="out"> as JSON.
function page(sluiceUrl) {
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>pending</title></head><body>
<pre id="out">pending</pre>
<script>
(async () => {
  const out = { origin: location.origin };
  try {
    const res = await fetch(${JSON.stringify(sluiceUrl)}, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_call', params: [{}, 'latest'] }),
    });
    out.status = res.status;
    out.type = res.type;
    out.headers = {};
    for (const h of ${JSON.stringify(READ)}) out.headers[h] = res.headers.get(h);
    out.body = await res.json();
  } catch (e) {
    out.error = String(e);
  }
  document.getElementById('out').textContent = JSON.stringify(out);
  document.title = 'done';
})();
</script>
</body></html>
`;
}

// A page server on its own port (so its own origin). `sluiceUrl` is read at
// request time: the server can exist before the sluice it points to.
async function pageServer() {
  const state = { sluiceUrl: null, hits: 0 };
  const srv = http.createServer((req, res) => {
    if (req.url !== '/') { res.writeHead(404); res.end(); return; }
    state.hits++;
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
    res.end(page(state.sluiceUrl));
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  servers.push(srv);
  state.port = srv.address().port;
  state.origin = `http://127.0.0.1:${state.port}`;
  return state;
}

const unescapeHtml = (s) => s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'")
  .replace(/&nbsp;/g, ' ').replace(/&amp;/g, '&');

// Loads `url` in a fresh headless Chromium and returns { dom, out }: the
// dumped DOM and the JSON the page's script wrote.
async function browse(url) {
  const profile = tempDir('sluice-chromium-');
  const args = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    '--disable-dev-shm-usage', `--user-data-dir=${profile}`, '--virtual-time-budget=10000', '--dump-dom', url];
  const child = spawn(CHROMIUM, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let stdout = '', stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d) => { stdout += d; });
  child.stderr.setEncoding('utf8').on('data', (d) => { stderr += d; });
  const killGroup = () => { try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ } };
  const timer = setTimeout(killGroup, 90000);
  const code = await new Promise((r) => child.once('exit', (c, sig) => r(c ?? sig)));
  clearTimeout(timer);
  killGroup(); // helpers (zygote, utility processes) share its group
  const m = stdout.match(/<pre id="out">([\s\S]*?)<\/pre>/);
  assert.ok(m, `chromium (exit ${code}) dumped no result:\n${stdout.slice(0, 2000)}\n${stderr.slice(-2000)}`);
  const text = unescapeHtml(m[1]);
  assert.notEqual(text, 'pending', `the page's script did not finish:\n${stderr.slice(-2000)}`);
  return { dom: stdout, out: JSON.parse(text) };
}

// A raw request from Node (node:http lets us set Origin and the preflight headers).
function raw(url, { method = 'POST', headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, agent: false, headers: { connection: 'close', ...headers } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const list = (v) => (v || '').split(',').map((x) => x.trim().toLowerCase()).filter(Boolean);
const ethCalls = (s) => s.accessLines().filter((l) => (l.methods || []).includes('eth_call')).length;

async function gateway(config) {
  const s = await startSluice(config);
  started.push(s);
  return s;
}

async function fake() {
  const a = await startFake({ name: 'a' });
  started.push(a);
  return a;
}

test('default CORS (*): a page on another origin reads every rate-limit header and the result', async (t) => {
  if (!needChromium(t)) return;
  const a = await fake();
  const s = await gateway({
    workers: 2,
    networks: { eth: { lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: [{ id: 'a', url: a.url }] } },
    extra: 'tiers: { anonymous: { per_minute: 100 } }',
  });
  const pg = await pageServer();
  pg.sluiceUrl = s.url('eth');
  assert.notEqual(new URL(pg.origin).port, String(s.port), 'page and sluice are different origins');

  const { dom, out } = await browse(`${pg.origin}/`);
  assert.equal(pg.hits, 1, 'the browser loaded the page');
  assert.equal(out.error, undefined, `the cross-origin fetch failed: ${out.error}`);
  assert.equal(out.status, 200);
  assert.equal(out.type, 'cors', 'a CORS response, not an opaque one');
  const h = out.headers;
  for (const name of READ) assert.ok(h[name] !== null && h[name] !== '', `${name} is readable by the page: ${JSON.stringify(h)}`);
  assert.equal(h['X-RateLimit-Limit'], '100');
  assert.equal(h['X-RateLimit-Bucket'], 'standard');
  assert.equal(h['X-RateLimit-Window'], '60');
  assert.equal(h['X-RateLimit-Remaining'], '99', 'one call charged (the preflight is not)');
  assert.match(h['X-RateLimit-Reset'], /^\d+$/);
  assert.equal(h['X-Sluice-Endpoint'], 'a');
  assert.deepEqual(out.body, { jsonrpc: '2.0', id: 1, result: '0x' });
  // and the same, as text in the DOM Chromium dumped
  for (const v of ['"X-RateLimit-Limit":"100"', '"X-RateLimit-Bucket":"standard"', '"X-RateLimit-Window":"60"',
    '"X-Sluice-Endpoint":"a"', '"result":"0x"'])
    assert.ok(unescapeHtml(dom).includes(v), `the DOM shows ${v}`);
  assert.equal(ethCalls(s), 1, 'exactly one POST reached sluice');
});

test('origin allowlist: the listed origin reads the headers; another origin cannot, and its POST never leaves the browser', async (t) => {
  if (!needChromium(t)) return;
  const a = await fake();
  const allowed = await pageServer(), denied = await pageServer();
  // renderConfig already emits server:, so this variant uses a config string
  const s = await gateway(`server: { listen: "127.0.0.1:0", workers: 2, cors_origins: ["${allowed.origin}"] }
admin: { listen: off }
tiers: { anonymous: { per_minute: 100 } }
networks: { eth: { ranking: { probe_interval_ms: 0 }, endpoints: [{ id: a, url: "${a.url}" }] } }
`);
  allowed.sluiceUrl = denied.sluiceUrl = s.url('eth');

  const ok = (await browse(`${allowed.origin}/`)).out;
  assert.equal(ok.error, undefined, `the allowed origin's fetch failed: ${ok.error}`);
  assert.equal(ok.status, 200);
  assert.equal(ok.headers['X-RateLimit-Limit'], '100');
  assert.equal(ok.headers['X-RateLimit-Bucket'], 'standard');
  assert.equal(ok.headers['X-Sluice-Endpoint'], 'a');
  assert.equal(ok.body.result, '0x');
  assert.equal(ethCalls(s), 1);

  const no = (await browse(`${denied.origin}/`));
  assert.equal(denied.hits, 1, 'the browser loaded the other page');
  assert.match(no.out.error || '', /TypeError/, `a disallowed origin must not read the answer: ${JSON.stringify(no.out)}`);
  assert.equal(no.out.status, undefined);
  assert.equal(no.out.headers, undefined, 'no header value reached the page');
  assert.deepEqual(Object.keys(no.out).sort(), ['error', 'origin'], 'nothing about the answer reached the DOM');
  assert.equal(ethCalls(s), 1, 'the preflight failed, so the browser never sent the POST');

  // what the browser saw, from Node: the preflight names no origin for the stranger
  const pre = (origin) => raw(s.url('eth'), { method: 'OPTIONS', headers: { origin,
    'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' } });
  const good = await pre(allowed.origin), bad = await pre(denied.origin);
  assert.equal(good.status, 204);
  assert.equal(good.headers['access-control-allow-origin'], allowed.origin, 'the listed origin is echoed, not *');
  assert.ok(list(good.headers.vary).includes('origin'), 'Vary: Origin, so caches keep origins apart');
  assert.equal(bad.headers['access-control-allow-origin'], undefined);
  assert.equal(bad.headers['access-control-allow-methods'], undefined);
  const post2 = await raw(s.url('eth'), { headers: { origin: denied.origin, 'content-type': 'application/json' },
    body: JSON.stringify(call('eth_call', [{}, 'latest'])) });
  assert.equal(post2.status, 200, 'sluice still answers (CORS is the browser\'s to enforce)');
  assert.equal(post2.headers['access-control-allow-origin'], undefined);
  assert.equal(post2.headers['access-control-expose-headers'], undefined);
});

test('from Node: the preflight answers 204 with methods and headers; every answer exposes the rate-limit headers', async () => {
  const a = await fake();
  const s = await gateway({
    workers: 1,
    networks: { eth: { lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: [{ id: 'a', url: a.url }] } },
    extra: 'tiers: { anonymous: { per_minute: 2 } }',
  });
  const origin = 'http://app.example:3000';
  const pre = await raw(s.url('eth'), { method: 'OPTIONS', headers: { origin,
    'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,x-api-key' } });
  assert.equal(pre.status, 204);
  assert.equal(pre.text, '');
  assert.equal(pre.headers['access-control-allow-origin'], '*');
  assert.ok(list(pre.headers['access-control-allow-methods']).includes('post'), pre.headers['access-control-allow-methods']);
  const allowHeaders = list(pre.headers['access-control-allow-headers']);
  assert.ok(allowHeaders.includes('content-type') && allowHeaders.includes('x-api-key'), pre.headers['access-control-allow-headers']);
  assert.equal(ethCalls(s), 0, 'a preflight is not a call');

  const send = () => raw(s.url('eth'), { headers: { origin, 'content-type': 'application/json' },
    body: JSON.stringify(call('eth_call', [{}, 'latest'])) });
  const expectExposed = (r, what) => {
    assert.equal(r.headers['access-control-allow-origin'], '*', what);
    const exposed = list(r.headers['access-control-expose-headers']);
    for (const h of EXPOSED) assert.ok(exposed.includes(h.toLowerCase()), `${what}: ${h} is exposed (${r.headers['access-control-expose-headers']})`);
  };
  const ok = await send();
  assert.equal(ok.status, 200);
  expectExposed(ok, 'a 200');
  assert.equal(ok.headers['x-ratelimit-limit'], '2');
  // an error sluice answers itself (an unknown key costs the address its
  // second call: guessing keys is limited like calling)
  const unknownKey = await raw(`${s.url('eth')}/sl_not_a_configured_key_0000`, { headers: { origin,
    'content-type': 'application/json' }, body: JSON.stringify(call('eth_call', [{}, 'latest'])) });
  assert.equal(unknownKey.status, 401);
  assert.equal(unknownKey.headers['access-control-allow-origin'], '*');
  // the answer a browser most needs to read: the refusal with its Retry-After
  const refused = await send();
  assert.equal(refused.status, 429);
  assert.ok(Number(refused.headers['retry-after']) >= 1);
  expectExposed(refused, 'a 429');
  // without an Origin (curl, a server) there are no CORS headers at all
  const plain = await post(s.url('eth'), call('eth_chainId'));
  assert.equal(plain.headers.get('access-control-allow-origin'), null);
});
