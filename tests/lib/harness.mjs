// tests/lib/harness.mjs: real processes for integration and end-to-end tests.
//
// Starts fake providers (tests/fakeprovider) and sluice itself on ephemeral
// ports, talks to them over HTTP, and kills everything when the test process
// exits. Binaries come from the environment ctest sets (SLUICE_BIN,
// FAKEPROVIDER_BIN) or from ./build.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after } from 'node:test';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
// Set by tests/lib/tls_suite.sh (ctest's tls/<name>): every sluice started
// here serves its clients over TLS with the certificate in this folder
// (node trusts it: NODE_EXTRA_CA_CERTS), and its URLs are https://.
const TLS_DIR = process.env.SLUICE_TEST_TLS_DIR;
export const SRC = process.env.SLUICE_SRC || path.resolve(here, '../..');
export const SLUICE_BIN = process.env.SLUICE_BIN || path.join(SRC, 'build/server/sluice');
export const FAKE_BIN = process.env.FAKEPROVIDER_BIN || path.join(SRC, 'build/tests/fakeprovider/fakeprovider');

const children = new Set();
const tempDirs = new Set();

function killAll() {
  for (const c of children) {
    // each child leads its own process group: this takes a sluice master's
    // workers with it, so no orphan keeps our pipes (and node) alive
    try { process.kill(-c.pid, 'SIGKILL'); } catch { /* already gone */ }
  }
  for (const d of tempDirs) {
    try { rmSync(d, { recursive: true, force: true }); } catch { /* ignore */ }
  }
}
process.on('exit', killAll);
// A test that failed half-way may leave processes behind; their pipes would
// keep node (and ctest) waiting forever. Once the file's tests are done, ask
// what is left to stop, then kill whatever did not. This hook runs before a
// test file's own after hooks (node runs them in the order they were
// registered, and this module is imported first), which may still check
// for a clean exit: so SIGTERM goes to the leader alone (a sluice master
// stops its own workers, as in production), with time to drain, even under
// the sanitizers.
after(async () => {
  const left = [...children];
  for (const c of left) {
    try { process.kill(c.pid, 'SIGTERM'); } catch { /* already gone */ }
  }
  const end = Date.now() + 20000;
  while (Date.now() < end && left.some((c) => children.has(c))) await sleep(50);
  killAll();
});
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => { killAll(); process.exit(1); });

export function tempDir(prefix = 'sluice-test-') {
  const d = mkdtempSync(path.join(tmpdir(), prefix));
  tempDirs.add(d);
  return d;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Spawns a process and resolves once `pattern` matches its output (stdout or
// stderr, whichever `stream` says); rejects if it exits first or times out.
function spawnUntil(bin, args, { pattern, stream = 'stdout', timeoutMs = 15000, env } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env }, detached: true });
    children.add(child);
    // made now, not when a caller asks: an 'exit' that already fired (a
    // child the cleanup hook above stopped first) would never fire again
    const exited = new Promise((r) => child.once('exit', (code, signal) => r({ code, signal })));
    const out = { stdout: '', stderr: '' };
    let done = false;
    const timer = setTimeout(() => finish(new Error(`${path.basename(bin)}: no "${pattern}" within ${timeoutMs} ms\n${out.stderr}`)), timeoutMs);
    function finish(err, m) {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (err) { try { child.kill('SIGKILL'); } catch { /* ignore */ } reject(err); } else resolve({ child, out, match: m, exited });
    }
    for (const s of ['stdout', 'stderr']) {
      child[s].setEncoding('utf8');
      child[s].on('data', (d) => {
        out[s] += d;
        if (s === stream) {
          const m = out[s].match(pattern);
          if (m) finish(null, m);
        }
      });
    }
    child.on('exit', (code, sig) => {
      children.delete(child);
      // what it wrote last may still be in the pipe when 'exit' fires: wait
      // for its streams to close (a child of its own holding them: 300 ms)
      const fail = () => finish(new Error(`${path.basename(bin)} exited (${code ?? sig}) before ready:\n${out.stderr}${out.stdout}`));
      const late = setTimeout(fail, 300);
      child.once('close', () => { clearTimeout(late); fail(); });
    });
  });
}

export async function post(url, body, headers = {}) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json;
  try { json = text.length ? JSON.parse(text) : undefined; } catch { json = undefined; }
  return { status: res.status, headers: res.headers, text, json };
}

export const call = (method, params = [], id = 1) => ({ jsonrpc: '2.0', id, method, params });

// A fake provider: { url, port, name, setMode(), stats(), reset(), stop() }.
export async function startFake({ name = 'fake', chain = 'ethereum', args = [], tls } = {}) {
  const argv = ['--listen', '127.0.0.1:0', '--name', name, '--chain', chain, '--quiet', ...args];
  if (tls) argv.push('--tls-cert', tls.cert, '--tls-key', tls.key);
  const { child, match, exited } = await spawnUntil(FAKE_BIN, argv, { pattern: /listening on ([\d.]+):(\d+)/ });
  const port = Number(match[2]);
  const scheme = tls ? 'https' : 'http';
  const base = `http://127.0.0.1:${port}`;
  const control = async (p, body) => {
    if (tls) throw new Error('control API of a TLS fake: use args at start');
    const res = await fetch(base + p, { method: body ? 'POST' : 'GET', body: body ? JSON.stringify(body) : undefined });
    return res.json();
  };
  return {
    name, port, child,
    url: `${scheme}://127.0.0.1:${port}`,
    setMode: (mode, opts = {}) => control('/_control/mode', { mode, ...opts }),
    stats: () => control('/_control/stats'),
    reset: () => control('/_control/reset', {}),
    stop: (sig = 'SIGTERM') => { child.kill(sig); return exited; },
  };
}

// Renders a small YAML config; `networks` maps name -> { chain, endpoints: [{id, url, ...}], extra yaml lines }.
export function renderConfig({ workers = 2, networks, server = {}, admin = true, extra = '', statePath }) {
  const lines = [];
  if (statePath) lines.push(`state: { path: "${statePath}" }`);
  const srv = { listen: '"127.0.0.1:0"', workers, ...server };
  if (TLS_DIR && srv.tls === undefined) srv.tls = `{ cert_file: "${TLS_DIR}/cert.pem", key_file: "${TLS_DIR}/key.pem" }`;
  lines.push('server:');
  for (const [k, v] of Object.entries(srv)) lines.push(`  ${k}: ${v}`);
  if (typeof admin === 'string') lines.push(`admin: ${admin}`);
  else lines.push(admin ? 'admin: { listen: "127.0.0.1:0" }' : 'admin: { listen: off }');
  lines.push('networks:');
  for (const [net, n] of Object.entries(networks)) {
    lines.push(`  ${net}:`);
    lines.push(`    chain: ${n.chain || 'ethereum'}`);
    for (const l of n.lines || []) lines.push(`    ${l}`);
    // the chain probe (safe, finalized, the head's hashes) is off unless a
    // test asks for it: its batch would count in every test's call counts
    if (!(n.lines || []).some((l) => l.startsWith('chain_probe_ms'))) lines.push('    chain_probe_ms: 0');
    lines.push('    endpoints:');
    for (const e of n.endpoints) {
      lines.push(`      - id: ${e.id}`);
      lines.push(`        url: "${e.url}"`);
      for (const [k, v] of Object.entries(e)) if (k !== 'id' && k !== 'url') lines.push(`        ${k}: ${v}`);
    }
  }
  if (extra) lines.push(extra);
  return lines.join('\n') + '\n';
}

// Starts sluice on a config (YAML text or the object renderConfig takes).
// Sluice runs on its defaults, the response cache on, as users run it. A test
// that must see every call reach the upstreams (it counts upstream calls, or
// injects faults a cached answer would hide) says `cache: false` in the config
// object, with the reason beside it; a YAML text says `cache:` itself.
// (`cache: true`, which the cache tests still say, is the default.)
// Resolves when the master says every worker listens. `wrap` is a command
// that execs sluice in the same process (same pid), e.g. ['prlimit', '--nofile=64:64', '--'] or
// ['unshare', '-m', 'sh', '-c', '... exec "$0" "$@"'].
export async function startSluice(config, { env, wrap = [] } = {}) {
  const dir = tempDir();
  const file = path.join(dir, 'sluice.yaml');
  let statePath = path.join(dir, 'state'); // every sluice its own shared state
  let text = typeof config === 'string' ? config : renderConfig({ statePath, ...config });
  if (typeof config !== 'string' && config.cache === false && !/^cache:/m.test(text)) text += 'cache: { enabled: false }\n';
  const given = text.match(/^state:\s*\{\s*path:\s*"([^"]+)"/m);
  if (given) statePath = given[1];
  else text += `state: { path: "${statePath}" }\n`;
  writeFileSync(file, text);
  const [bin, ...argv] = [...wrap, SLUICE_BIN, '-c', file];
  // The main port is the kernel's pick (127.0.0.1:0); its port + 1, where
  // WebSocket goes by default, may be another process's listener, and then
  // sluice rightly serves WebSocket on the main port only. Tests expect the
  // default's usual outcome: start again, a few times at most.
  // Only a sluice on a state of the harness's own is started again, on a
  // fresh state: what the first start wrote (events, the chain learned, a
  // cache) must not be seen twice by a test.
  const ownState = typeof config === 'string' ? !/^state:/m.test(config) : config.statePath === undefined;
  const kernelPicks = ownState && /listen: "127\.0\.0\.1:0"/.test(text) && !/ws_listen/.test(text);
  let child, out, match, exited, wsMatch;
  for (let attempt = 0; ; attempt++) {
    ({ child, out, match, exited } = await spawnUntil(bin, argv,
      { pattern: /listening on https?:\/\/([\d.]+):(\d+) .*admin API (?:off|on http:\/\/[\d.]+:\d+)/, stream: 'stderr', env }));
    wsMatch = out.stderr.match(/WebSocket also on wss?:\/\/([\d.]+):(\d+)/);
    if (wsMatch || !kernelPicks || attempt === 9) break;
    child.kill('SIGKILL');
    await exited;
    for (const p of [statePath, statePath + '-cache']) rmSync(p, { recursive: true, force: true });
  }
  const port = Number(match[2]);
  const scheme = /listening on https:/.test(match[0]) ? 'https' : 'http';
  // the TLS suite (tls_suite.sh) runs only where its TLS took: a config the test wrote itself is its own
  if (TLS_DIR && typeof config !== 'string' && config.server?.tls === undefined && scheme !== 'https') {
    child.kill('SIGKILL');
    throw new Error('SLUICE_TEST_TLS_DIR is set but sluice did not listen with TLS');
  }
  const adminMatch = out.stderr.match(/admin API on http:\/\/([\d.]+):(\d+)/);
  const adminPort = adminMatch ? Number(adminMatch[2]) : undefined;
  const wsPort = wsMatch ? Number(wsMatch[2]) : undefined; // the second listener, when it bound
  return {
    child, port, wsPort, dir, file, exited, statePath,
    url: (net = 'eth') => `${scheme}://127.0.0.1:${port}/${net}`,
    base: `${scheme}://127.0.0.1:${port}`,
    admin: adminPort ? `http://127.0.0.1:${adminPort}` : undefined,
    logs: () => out.stderr,
    accessLines: () => out.stderr.split('\n').filter((l) => l.includes('"type":"access"')).map((l) => JSON.parse(l)),
    stop: async (sig = 'SIGTERM') => { child.kill(sig); return exited; },
  };
}

// Pids of the master's worker processes (children of the master).
export async function workerPids(masterPid) {
  const { readFileSync } = await import('node:fs');
  try {
    return readFileSync(`/proc/${masterPid}/task/${masterPid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

export async function waitFor(fn, { timeoutMs = 10000, intervalMs = 50, what = 'condition' } = {}) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(intervalMs);
  }
}

// A line another process wrote (the master, a worker) reaches this process
// through a pipe, and may arrive after the HTTP answer that made us look for
// it: wait for it, then fail with the whole log if it never came.
export async function waitLog(s, re, { timeoutMs = 5000 } = {}) {
  const end = Date.now() + timeoutMs;
  while (!re.test(s.logs())) {
    if (Date.now() > end) assert.match(s.logs(), re);
    await sleep(25);
  }
}

// Admin API helpers. `token` adds the bearer header.
export async function adminGet(s, p, token) {
  const res = await fetch(`${s.admin}${p}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  const text = await res.text();
  let json;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: res.status, text, json, headers: res.headers };
}

// The value of one /metrics line (its name and labels exactly as printed), or
// undefined when the line is absent.
export async function metricValue(s, line) {
  const text = (await adminGet(s, '/metrics')).text;
  const m = text.match(new RegExp(`^${line.replace(/[{}"]/g, (c) => `\\${c}`)} (\\d+)$`, 'm'));
  return m ? Number(m[1]) : undefined;
}

export async function adminPost(s, p, token) {
  const res = await fetch(`${s.admin}${p}`, { method: 'POST', headers: token ? { authorization: `Bearer ${token}` } : {} });
  return { status: res.status, json: await res.json().catch(() => undefined) };
}

export async function events(s, since = 0, token) {
  return (await adminGet(s, `/admin/events?since=${since}&limit=1000`, token)).json;
}

// A Server-Sent Events subscriber: collects { id, event, data } as they come.
export async function sseConnect(url, { lastEventId, token } = {}) {
  const http = await import('node:http');
  const got = [];
  const comments = [];
  let buf = '';
  const headers = {};
  if (lastEventId !== undefined) headers['last-event-id'] = String(lastEventId);
  if (token) headers.authorization = `Bearer ${token}`;
  const req = http.get(url, { headers });
  const res = await new Promise((resolve, reject) => { req.on('response', resolve); req.on('error', reject); });
  res.setEncoding('utf8');
  res.on('data', (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const ev = {};
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) comments.push(line.slice(1).trim());
        else if (line.startsWith('id: ')) ev.id = Number(line.slice(4));
        else if (line.startsWith('event: ')) ev.event = line.slice(7);
        else if (line.startsWith('data: ')) ev.data = JSON.parse(line.slice(6));
      }
      if (ev.id !== undefined) got.push(ev);
    }
  });
  res.on('error', () => {});
  return { status: res.statusCode, headers: res.headers, events: got, comments, close: () => { req.destroy(); } };
}

// Reads a node:http answer to its end: { status, headers, text, json }
// (json undefined when the body is not JSON).
export function readAnswer(res, resolve, headers = res.headers) {
  let text = '';
  res.setEncoding('utf8');
  res.on('data', (d) => { text += d; });
  res.on('end', () => {
    let json;
    try { json = JSON.parse(text); } catch { json = undefined; }
    resolve({ status: res.statusCode, headers, text, json });
  });
}

// A POST on a new connection (no keep-alive): with SO_REUSEPORT the kernel
// spreads such requests over every worker, which shared-budget tests need.
// localAddress (e.g. 127.0.0.2: all of 127/8 is loopback) makes the caller
// another address, so another identity.
export async function postFresh(url, body, headers = {}, { localAddress } = {}) {
  const http = await import(url.startsWith('https:') ? 'node:https' : 'node:http');
  const data = typeof body === 'string' ? body : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(url, {
      method: 'POST', agent: false, localAddress,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data), connection: 'close', ...headers },
    }, (res) => readAnswer(res, resolve, new Map(Object.entries(res.headers))));
    req.on('error', reject);
    req.end(data);
  });
}
