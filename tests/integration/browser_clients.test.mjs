// viem and ethers in a real browser (headless Chromium, driven as
// browser.test.mjs drives it: --dump-dom of a page that writes its result
// into <pre id="out">) against a key tied to one origin (issue 33): from the
// allowed origin both libraries read the chain; from another origin the
// browser's preflight fails, so both throw and nothing reaches sluice, and
// the same call sent with that Origin from Node is 403 origin_not_allowed.
// The libraries are the tests' own node_modules, served to the page (viem's
// ES modules through an import map built from the packages' exports).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startFake, startSluice, call, sleep, tempDir } from '../lib/harness.mjs';

const started = [];
const servers = [];
after(async () => {
  for (const srv of servers) srv.close();
  await Promise.all(started.map((p) => p.stop()));
});

const NM = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../node_modules');
const KEY = 'sl_browserkey0123456789abcdefg';
const sha = (k) => createHash('sha256').update(k).digest('hex');

function findChromium() {
  const names = [process.env.CHROMIUM_BIN, 'chromium', 'chromium-browser', 'google-chrome'].filter(Boolean);
  for (const n of names) {
    const r = spawnSync('sh', ['-c', `command -v "${n}"`], { encoding: 'utf8' });
    if (r.status === 0 && r.stdout.trim()) return r.stdout.trim();
  }
  return null;
}
const CHROMIUM = findChromium();
function needChromium(t) {
  if (CHROMIUM) return true;
  if (process.env.SLUICE_REQUIRE_ALL === '1') assert.fail('chromium is not installed (deploy/install-deps.sh installs it)');
  t.skip('chromium is not installed');
  return false;
}

// An import map for viem and the packages it imports, from their package.json
// exports (the browser/import condition), a package nested under another in
// that one's scope.
function importMap() {
  const map = { imports: {}, scopes: {} };
  const pick = (v) => (typeof v === 'string' ? v : v && typeof v === 'object'
    ? pick(v.browser ?? v.import ?? v.module ?? v.default) : undefined);
  const seen = new Set();
  const add = (name, dir, scope) => {
    if (seen.has(dir + (scope ?? ''))) return;
    seen.add(dir + (scope ?? ''));
    const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
    const url = `/nm/${path.relative(NM, dir)}`;
    const into = scope ? (map.scopes[scope] ??= {}) : map.imports;
    const exp = pkg.exports && typeof pkg.exports === 'object' && Object.keys(pkg.exports)[0]?.startsWith('.')
      ? pkg.exports : { '.': pkg.exports ?? pkg.module ?? pkg.main ?? './index.js' };
    for (const [k, v] of Object.entries(exp)) {
      const to = pick(v);
      if (to && !k.includes('*') && to.endsWith('.js')) into[name + k.slice(1)] = `${url}/${to.replace(/^\.\//, '')}`;
    }
    for (const dep of Object.keys(pkg.dependencies ?? {})) {
      const nested = path.join(dir, 'node_modules', dep);
      if (existsSync(nested)) add(dep, nested, `${url}/`);
      else if (existsSync(path.join(NM, dep))) add(dep, path.join(NM, dep)); // one copy: the same from anywhere
    }
  };
  add('viem', path.join(NM, 'viem'));
  return map;
}

// The page: viem and ethers each ask sluice (the key in the path) for the
// chain id and the block number; what they got, or threw, goes into <pre id="out">.
function page(rpcUrl) {
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>pending</title>
<script type="importmap">${JSON.stringify(importMap())}</script>
<script src="/nm/ethers/dist/ethers.umd.min.js"></script></head><body>
<pre id="out">pending</pre>
<script type="module">
const out = { origin: location.origin };
const url = ${JSON.stringify(rpcUrl)};
try {
  const { createPublicClient, http } = await import('viem');
  const client = createPublicClient({ transport: http(url, { retryCount: 0 }) });
  out.viem = { chainId: await client.getChainId(), block: String(await client.getBlockNumber()) };
} catch (e) { out.viem = { error: String(e && e.name) + ': ' + String(e && (e.shortMessage || e.message)) }; }
try {
  const provider = new ethers.JsonRpcProvider(url, 1, { staticNetwork: true, batchMaxCount: 1 });
  out.ethers = { chainId: Number((await provider.send('eth_chainId', []))), block: String(await provider.getBlockNumber()) };
  provider.destroy();
} catch (e) { out.ethers = { error: String(e && (e.shortMessage || e.message)) }; }
document.getElementById('out').textContent = JSON.stringify(out);
document.title = 'done';
</script>
</body></html>
`;
}

// A page server on its own port (its own origin), serving the page and the
// tests' node_modules under /nm/.
async function pageServer() {
  const state = { rpcUrl: null, hits: 0 };
  const srv = http.createServer((req, res) => {
    const u = new URL(req.url, 'http://x');
    if (u.pathname === '/') {
      state.hits++;
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
      res.end(page(state.rpcUrl));
      return;
    }
    const file = path.join(NM, decodeURIComponent(u.pathname.slice('/nm/'.length)));
    if (!u.pathname.startsWith('/nm/') || !file.startsWith(NM + path.sep) || !existsSync(file) || !statSync(file).isFile()) {
      res.writeHead(404);
      res.end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' });
    res.end(readFileSync(file));
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  servers.push(srv);
  state.origin = `http://127.0.0.1:${srv.address().port}`;
  return state;
}

const unescapeHtml = (s) => s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'")
  .replace(/&nbsp;/g, ' ').replace(/&amp;/g, '&');

// Loads `url` in a fresh headless Chromium and returns the JSON the page wrote.
async function browse(url) {
  const profile = tempDir('sluice-chromium-');
  const args = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    '--disable-dev-shm-usage', `--user-data-dir=${profile}`, '--virtual-time-budget=30000', '--dump-dom', url];
  const child = spawn(CHROMIUM, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let stdout = '', stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d) => { stdout += d; });
  child.stderr.setEncoding('utf8').on('data', (d) => { stderr += d; });
  const killGroup = () => { try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ } };
  const timer = setTimeout(killGroup, 90000);
  const code = await new Promise((r) => child.once('exit', (c, sig) => r(c ?? sig)));
  clearTimeout(timer);
  killGroup();
  const m = stdout.match(/<pre id="out">([\s\S]*?)<\/pre>/);
  assert.ok(m, `chromium (exit ${code}) dumped no result:\n${stdout.slice(0, 2000)}\n${stderr.slice(-2000)}`);
  const text = unescapeHtml(m[1]);
  assert.notEqual(text, 'pending', `the page's script did not finish:\n${stderr.slice(-3000)}`);
  return JSON.parse(text);
}

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

// The number of access lines once it has not moved for 600 ms.
async function settledAccessLines(s) {
  let n = -1, same = 0;
  for (;;) {
    const now = s.accessLines().length;
    same = now === n ? same + 1 : 0;
    n = now;
    if (same >= 6) return n;
    await sleep(100);
  }
}

test('viem and ethers from the key\'s origin read the chain; from another origin they are refused', async (t) => {
  if (!needChromium(t)) return;
  const a = await startFake({ name: 'a' });
  started.push(a);
  const allowed = await pageServer(), other = await pageServer();
  const s = await startSluice({
    workers: 2,
    cache: false, // every call is the browser's, counted in the access log
    networks: { eth: { lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: [{ id: 'a', url: a.url }] } },
    extra: ['tiers: { web: { per_minute: 1000 } }', 'keys:',
      `  - { sha256: "${sha(KEY)}", tier: web, name: dapp, origins: ["${allowed.origin}"] }`].join('\n'),
  });
  started.push(s);
  allowed.rpcUrl = other.rpcUrl = `${s.url('eth')}/${KEY}`;
  const chainId = Number(JSON.parse((await raw(allowed.rpcUrl, { headers: { 'content-type': 'application/json' },
    body: JSON.stringify(call('eth_chainId')) })).text).result);

  const ok = await browse(`${allowed.origin}/`);
  assert.equal(allowed.hits, 1, 'the browser loaded the page');
  assert.deepEqual(ok.viem?.chainId, chainId, `viem: ${JSON.stringify(ok.viem)}`);
  assert.match(ok.viem.block, /^\d+$/);
  assert.deepEqual(ok.ethers?.chainId, chainId, `ethers: ${JSON.stringify(ok.ethers)}`);
  assert.match(ok.ethers.block, /^\d+$/);

  // the allowed page's lines are all written first (a worker writes its
  // buffered lines every 100 ms; a slow one later): none may count as the other's
  const before = await settledAccessLines(s);
  const no = await browse(`${other.origin}/`);
  assert.equal(other.hits, 1, 'the browser loaded the other page');
  assert.ok(no.viem?.error && no.viem.chainId === undefined, `viem must fail: ${JSON.stringify(no.viem)}`);
  assert.ok(no.ethers?.error && no.ethers.chainId === undefined, `ethers must fail: ${JSON.stringify(no.ethers)}`);
  assert.equal(s.accessLines().slice(before).filter((l) => (l.methods || []).length > 0).length, 0,
    'the preflight failed: no call from the other origin reached sluice');

  // the same call with that Origin, from Node: refused by the key's origins
  const refused = await raw(allowed.rpcUrl, { headers: { origin: other.origin, 'content-type': 'application/json' },
    body: JSON.stringify(call('eth_chainId')) });
  assert.equal(refused.status, 403, refused.text);
  assert.equal(JSON.parse(refused.text).error.data.reason, 'origin_not_allowed');
  assert.equal(refused.headers['access-control-allow-origin'], undefined);
});
