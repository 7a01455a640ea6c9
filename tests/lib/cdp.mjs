// tests/lib/cdp.mjs: headless Chromium driven over the DevTools protocol.
//
// Chromium is started with --remote-debugging-pipe: it reads protocol
// messages on fd 3 and writes them on fd 4, each a JSON text ended by a NUL
// byte. No WebSocket, no npm package, no port. One page per browser, with
// `flatten` sessions: { evaluate, waitFor, screenshot, close, console,
// requests }.
import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import assert from 'node:assert/strict';
import { tempDir, sleep } from './harness.mjs';

export function findChromium() {
  const names = [process.env.CHROMIUM_BIN, 'chromium', 'chromium-browser', 'google-chrome'].filter(Boolean);
  for (const n of names) {
    const r = spawnSync('sh', ['-c', `command -v "${n}"`], { encoding: 'utf8' });
    if (r.status === 0 && r.stdout.trim()) return r.stdout.trim();
  }
  return null;
}

// tests/run-all.sh installs chromium and sets SLUICE_REQUIRE_ALL: there a
// missing browser is a failure, not a skip (a run by hand may skip).
export function needChromium(t) {
  if (findChromium()) return true;
  if (process.env.SLUICE_REQUIRE_ALL === '1') assert.fail('chromium is not installed (deploy/install-deps.sh installs it)');
  t.skip('chromium is not installed');
  return false;
}

export async function launch({ width = 1500, height = 1000 } = {}) {
  const bin = findChromium();
  const profile = tempDir('sluice-chromium-');
  const args = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    '--disable-dev-shm-usage', '--remote-debugging-pipe', `--user-data-dir=${profile}`,
    `--window-size=${width},${height}`, 'about:blank'];
  const child = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'], detached: true });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d) => { stderr = (stderr + d).slice(-8000); });
  const killGroup = () => { try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ } };
  process.on('exit', killGroup);
  const toBrowser = child.stdio[3], fromBrowser = child.stdio[4];

  let nextId = 1;
  const waiting = new Map();
  const listeners = [];
  let buf = Buffer.alloc(0);
  fromBrowser.on('data', (chunk) => {
    buf = Buffer.concat([buf, chunk]);
    let i;
    while ((i = buf.indexOf(0)) >= 0) {
      const msg = JSON.parse(buf.subarray(0, i).toString('utf8'));
      buf = buf.subarray(i + 1);
      if (msg.id !== undefined && waiting.has(msg.id)) {
        const { resolve, reject, method } = waiting.get(msg.id);
        waiting.delete(msg.id);
        if (msg.error) reject(new Error(`${method}: ${msg.error.message}`));
        else resolve(msg.result);
      } else if (msg.method) {
        for (const l of listeners) l(msg);
      }
    }
  });
  fromBrowser.on('error', () => {});
  toBrowser.on('error', () => {});
  const exited = new Promise((r) => child.once('exit', r));
  exited.then(() => {
    for (const { reject, method } of waiting.values()) reject(new Error(`${method}: chromium exited\n${stderr}`));
    waiting.clear();
  });

  function send(method, params = {}, sessionId) {
    const id = nextId++;
    const msg = { id, method, params };
    if (sessionId) msg.sessionId = sessionId;
    return new Promise((resolve, reject) => {
      waiting.set(id, { resolve, reject, method });
      toBrowser.write(JSON.stringify(msg) + '\0');
    });
  }

  const { targetId } = await send('Target.createTarget', { url: 'about:blank' });
  const { sessionId } = await send('Target.attachToTarget', { targetId, flatten: true });
  const page = (method, params) => send(method, params, sessionId);

  const console = [];    // console messages and browser log entries (CSP reports land here)
  const requests = [];   // every request the page made: { url, method, headers }
  const loaded = [];
  listeners.push((msg) => {
    if (msg.sessionId !== sessionId) return;
    if (msg.method === 'Runtime.consoleAPICalled')
      console.push({ level: msg.params.type, text: msg.params.args.map((a) => a.value ?? a.description).join(' ') });
    else if (msg.method === 'Log.entryAdded') console.push({ level: msg.params.entry.level, text: msg.params.entry.text });
    else if (msg.method === 'Runtime.exceptionThrown')
      console.push({ level: 'exception', text: msg.params.exceptionDetails.exception?.description || msg.params.exceptionDetails.text });
    else if (msg.method === 'Network.requestWillBeSent')
      requests.push({ url: msg.params.request.url, method: msg.params.request.method, headers: msg.params.request.headers });
    else if (msg.method === 'Page.loadEventFired') loaded.push(Date.now());
  });
  await page('Page.enable');
  await page('Runtime.enable');
  await page('Log.enable');
  await page('Network.enable');
  await page('Emulation.setDeviceMetricsOverride', { width, height, deviceScaleFactor: 1, mobile: false });

  // Evaluates expr in the page (a promise is awaited) and returns its value.
  async function evaluate(expr) {
    const r = await page('Runtime.evaluate', { expression: expr, awaitPromise: true, returnByValue: true });
    if (r.exceptionDetails) throw new Error(`in the page: ${r.exceptionDetails.exception?.description || r.exceptionDetails.text}`);
    return r.result.value;
  }

  return {
    console, requests,
    async goto(url) {
      const n = loaded.length;
      await page('Page.navigate', { url });
      const end = Date.now() + 30000;
      while (loaded.length === n && Date.now() < end) await sleep(20);
      assert.ok(loaded.length > n, `${url} did not load`);
    },
    evaluate,
    // Polls expr (truthy value wins) every 25 ms.
    async waitFor(expr, { timeoutMs = 10000, what = expr } = {}) {
      const end = Date.now() + timeoutMs;
      for (;;) {
        const v = await evaluate(expr);
        if (v) return v;
        if (Date.now() > end) throw new Error(`page: timed out waiting for ${what}`);
        await sleep(25);
      }
    },
    async screenshot(file) {
      const { data } = await page('Page.captureScreenshot', { format: 'png', captureBeyondViewport: true });
      writeFileSync(file, Buffer.from(data, 'base64'));
      return file;
    },
    async close() {
      try { await Promise.race([send('Browser.close'), sleep(3000)]); } catch { /* already gone */ }
      await Promise.race([exited, sleep(3000)]);
      killGroup(); // helpers (zygote, utility processes) share its group
    },
  };
}
