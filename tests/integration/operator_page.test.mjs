// The operator page (GET / on the admin listener) in a real headless
// Chromium: it asks for the token and never puts it in a URL, renders every
// endpoint in plan order with its breaker state, shows a breaker that opens
// during the test in its live timeline (read from the SSE stream with the
// token in a header) within 2 s, drains and undrains with its buttons, runs
// under a strict Content-Security-Policy that blocks any other inline script,
// and leaves a screenshot (its path is printed).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { startFake, startSluice, post, postFresh, call, waitFor, events, adminGet } from '../lib/harness.mjs';
import { launch, needChromium } from '../lib/cdp.mjs';

const started = [];
const browsers = [];
after(async () => {
  await Promise.all(browsers.map((b) => b.close()));
  await Promise.all(started.map((p) => p.stop()));
});

const TOKEN = 'opPage-7f3a9c-Tok3n-51d0';
const ARTIFACTS = process.env.SLUICE_ARTIFACTS || path.join(tmpdir(), 'sluice-artifacts');

const sha256 = (text) => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;

async function gateway(a, b, admin) {
  const s = await startSluice({
    workers: 2,
    admin,
    networks: {
      eth: {
        // a long cooldown keeps the breaker open for the whole test; health
        // probes off, so the only traffic is the test's; every call reaches
        // the provider (30 identical eth_blockNumber at once would otherwise be
        // coalesced into one per worker: too few failures to open a breaker)
        lines: ['breaker: { consecutive: 3, cooldown_ms: 60000 }', 'ranking: { probe_interval_ms: 0 }',
          'coalesce: { max_waiters: 0 }'],
        endpoints: [{ id: 'a', url: a.url, max_inflight: 16 },
          { id: 'b', url: b.url, cost_profile: 'flat', credits: '{ per_day: 100000 }' }],
      },
    },
  });
  started.push(s);
  return s;
}

// the rows of the endpoints table, as the page shows them
const ROWS = `[...document.querySelectorAll('tr[data-endpoint]')].map((tr) => ({
  endpoint: tr.dataset.endpoint, rank: tr.cells[0].textContent,
  breaker: tr.querySelector('td[data-breaker]').dataset.breaker,
  drained: tr.querySelector('td[data-drained]').dataset.drained }))`;

test('GET / serves the embedded page with no-store, DENY and a CSP naming its own script and style', async () => {
  const a = await startFake({ name: 'a' }), b = await startFake({ name: 'b' });
  started.push(a, b);
  const s = await gateway(a, b, `{ listen: "127.0.0.1:0", token: "${TOKEN}" }`);
  const res = await fetch(`${s.admin}/`); // no token: the page holds no data
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'text/html; charset=utf-8');
  assert.equal(res.headers.get('cache-control'), 'no-store');
  assert.equal(res.headers.get('x-frame-options'), 'DENY');
  assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
  const html = await res.text();
  const script = html.match(/<script>([\s\S]*?)<\/script>/)[1], style = html.match(/<style>([\s\S]*?)<\/style>/)[1];
  const csp = res.headers.get('content-security-policy');
  assert.equal(csp, `default-src 'none'; script-src ${sha256(script)}; style-src ${sha256(style)}; connect-src 'self'; ` +
    "img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
  assert.doesNotMatch(html, /(src|href|action)\s*=\s*["']?(https?:)?\/\//i, 'nothing loaded from elsewhere');
  assert.equal((await fetch(`${s.admin}/admin/endpoints`)).status, 401, 'the data still needs the token');
  assert.equal((await fetch(`${s.admin}/`, { method: 'POST' })).status, 405);
});

test('with a token: login, plan order, breaker in the timeline within 2 s, drain and undrain, screenshot', async (t) => {
  if (!needChromium(t)) return;
  const a = await startFake({ name: 'a' }), b = await startFake({ name: 'b' });
  started.push(a, b);
  const s = await gateway(a, b, `{ listen: "127.0.0.1:0", token: "${TOKEN}" }`);
  for (let i = 0; i < 5; i++) assert.equal((await post(s.url('eth'), call('eth_chainId', [], i))).status, 200);

  const br = await launch();
  browsers.push(br);
  await br.goto(`${s.admin}/`);
  // no token yet: the page asks for one and shows nothing
  await br.waitFor(`!document.getElementById('login').hidden`, { what: 'the token form' });
  assert.equal(await br.evaluate(`document.querySelectorAll('tr[data-endpoint]').length`), 0);
  const typeToken = (v) => br.evaluate(`(() => { const i = document.getElementById('token');
    i.value = ${JSON.stringify(v)}; document.getElementById('login-form').requestSubmit(); })()`);
  await typeToken('not-the-token');
  await br.waitFor(`document.getElementById('login-msg').textContent.includes('refused')`, { what: 'a refused token' });
  await typeToken(TOKEN);
  await br.waitFor(`document.querySelectorAll('tr[data-endpoint]').length === 2`, { what: 'both endpoints' });
  assert.equal(await br.evaluate(`document.getElementById('login').hidden`), true);

  let rows = await br.evaluate(ROWS);
  assert.deepEqual(rows.map((r) => [r.endpoint, r.rank, r.breaker, r.drained]),
    [['eth/a', '1', 'closed', 'false'], ['eth/b', '2', 'closed', 'false']], JSON.stringify(rows));
  assert.match(await br.evaluate(`document.querySelector('tr[data-endpoint="eth/b"]').textContent`), /day.*0 \/ 100,000/);
  await br.waitFor(`document.getElementById('stream-state').dataset.live === 'true'`, { what: 'the event stream' });

  // the pressure column, read from /admin/networks with the token
  const networks = await adminGet(s, '/admin/networks', TOKEN);
  assert.equal(networks.status, 200);
  assert.equal(await br.evaluate(`document.querySelectorAll('th[data-col="pressure"]').length`), 1);
  await br.waitFor(`document.querySelector('tr[data-network="eth"] td[data-pressure]').dataset.pressure ===
    ${JSON.stringify(networks.json[0].level)}`, { what: 'the level /admin/networks says' });
  assert.ok(br.requests.some((r) => new URL(r.url).pathname === '/admin/networks' && r.headers.Authorization === `Bearer ${TOKEN}`));
  // the cache column: the cache is on (sluice's default) and the 4 eth_chainId after the first were hits
  assert.ok(networks.json[0].cache.hits >= 1, JSON.stringify(networks.json[0].cache));
  assert.equal(await br.evaluate(`document.querySelector('tr[data-network="eth"] td[data-cache]').dataset.cache`), 'on');
  assert.match(await br.evaluate(`document.querySelector('tr[data-network="eth"] td[data-cache]').textContent`),
    /\d+ hits · \d+ misses/);

  // a fails: its breaker opens; the page shows it within 2 s of the event
  await a.setMode('http500');
  // (eth_blockNumber: the cache never answers it, so every call meets the failing endpoint)
  await Promise.all(Array.from({ length: 30 }, (_, i) => post(s.url('eth'), call('eth_blockNumber', [], i))));
  const opened = await waitFor(async () => (await events(s, 0, TOKEN)).find((e) => e.kind === 'breaker_opened' && e.endpoint === 'a'),
    { what: 'breaker_opened of a' });
  await br.waitFor(`document.querySelector('#timeline li[data-kind="breaker_opened"][data-endpoint="eth/a"]') !== null`,
    { timeoutMs: 5000, what: 'breaker_opened in the timeline' });
  const shownAfter = Date.now() - opened.ts_ms;
  t.diagnostic(`breaker_opened shown ${shownAfter} ms after it happened`);
  assert.ok(shownAfter < 2000, `the timeline showed the breaker ${shownAfter} ms after it opened`);
  const item = await br.evaluate(`document.querySelector('#timeline li[data-kind="breaker_opened"]').textContent`);
  assert.match(item, /eth\/a/);
  assert.match(item, /closed → open · cooldown 1 min 0 s/);
  await br.waitFor(`document.querySelector('tr[data-endpoint="eth/a"] td[data-breaker]').dataset.breaker === 'open'`,
    { what: 'a open in the table' });
  rows = await br.evaluate(ROWS);
  // plan order: the open endpoint is out of the plan, after the usable one
  // (whose rank is the workers' ranking, as /admin/endpoints says)
  assert.deepEqual(rows.map((r) => [r.endpoint, r.breaker]), [['eth/b', 'closed'], ['eth/a', 'open']], JSON.stringify(rows));
  assert.equal(rows[1].rank, '—');
  assert.match(rows[0].rank, /^\d+$/);
  const rowText = (id) => br.evaluate(`document.querySelector('tr[data-endpoint="eth/${id}"]').textContent`);
  assert.match(await rowText('a'), /open for .*probe in/);
  assert.match(await rowText('a'), /\d+ \/ 16peak \d+/, `in flight / max and the concurrency reached: ${await rowText('a')}`);
  // b took the traffic: its day budget is being spent, with a forecast
  await br.waitFor(`document.querySelector('tr[data-endpoint="eth/b"]').textContent.includes('runs out in')`,
    { what: 'the credit forecast of b' });

  // drain b with its button
  await br.evaluate(`document.querySelector('tr[data-endpoint="eth/b"] button[data-action="drain"]').click()`);
  await br.waitFor(`document.querySelector('tr[data-endpoint="eth/b"] td[data-drained]').dataset.drained === 'true'`,
    { what: 'b drained' });
  let eps = (await adminGet(s, '/admin/endpoints', TOKEN)).json;
  assert.equal(eps.find((e) => e.id === 'b').drained, true, 'the button drained b');
  await br.waitFor(`document.querySelector('#timeline li[data-kind="endpoint_drained"]') !== null`, { what: 'endpoint_drained' });

  mkdirSync(ARTIFACTS, { recursive: true });
  const shot = await br.screenshot(path.join(ARTIFACTS, 'operator-page.png'));
  console.log(`# screenshot of the operator page: ${shot}`);

  await br.evaluate(`document.querySelector('tr[data-endpoint="eth/b"] button[data-action="undrain"]').click()`);
  await br.waitFor(`document.querySelector('tr[data-endpoint="eth/b"] td[data-drained]').dataset.drained === 'false'`,
    { what: 'b undrained' });
  eps = (await adminGet(s, '/admin/endpoints', TOKEN)).json;
  assert.equal(eps.find((e) => e.id === 'b').drained, false);

  // b resets a cheap read: demoted (tried last), and the page says so, with why and until when
  // (again until it is: the workers may not have seen the undrain yet, and then nothing reaches b)
  await b.setMode('reset');
  await waitFor(async () => {
    await post(s.url('eth'), call('eth_blockNumber', [], 'reset')); // never a cache hit: it reaches b
    return (await adminGet(s, '/admin/endpoints', TOKEN)).json.find((e) => e.id === 'b').demoted;
  }, { what: 'b demoted', timeoutMs: 5000, intervalMs: 100 });
  await b.setMode('ok');
  await br.waitFor(`document.querySelector('tr[data-endpoint="eth/b"] td[data-demoted]').dataset.demoted === 'true'`,
    { what: 'b demoted on the page' });
  const demotedText = await br.evaluate(`document.querySelector('tr[data-endpoint="eth/b"] td[data-demoted]').textContent`);
  assert.match(demotedText, /demoted.*reset.*until \d\d:\d\d:\d\d.*demoted \d+×/, demotedText);
  assert.equal(await br.evaluate(`document.querySelector('tr[data-endpoint="eth/a"] td[data-demoted]').dataset.demoted`), 'false');

  // the token went in headers only: never in a URL, the address bar included
  assert.equal(await br.evaluate('location.href'), `${s.admin}/`);
  assert.ok(br.requests.length > 5);
  for (const r of br.requests) assert.ok(!r.url.includes(TOKEN), `a URL carries the token: ${r.url}`);
  const stream = br.requests.filter((r) => r.url.startsWith(`${s.admin}/admin/events/stream`));
  assert.ok(stream.length >= 1, 'the page opened the event stream');
  assert.ok(stream.some((r) => r.headers.Authorization === `Bearer ${TOKEN}`), 'the stream was authenticated by header');
  const drains = br.requests.filter((r) => r.url.endsWith('/drain') || r.url.endsWith('/undrain'));
  assert.deepEqual(drains.map((r) => [r.method, new URL(r.url).pathname]),
    [['POST', '/admin/endpoints/eth/b/drain'], ['POST', '/admin/endpoints/eth/b/undrain']]);

  // the page's own script and style ran under the CSP; another inline script may not
  const cspReports = () => br.console.filter((m) => /Content Security Policy/i.test(m.text));
  assert.deepEqual(cspReports(), [], 'nothing of the page was refused');
  assert.deepEqual(br.console.filter((m) => m.level === 'exception'), []);
  assert.equal(await br.evaluate(`(() => { const s = document.createElement('script');
    s.textContent = 'window.__injected = 1'; document.body.append(s); return window.__injected; })()`), undefined,
  'an injected inline script does not run');
  await waitFor(() => cspReports().length > 0, { what: 'the CSP report of the injected script' });
});

test('without a token the page shows the endpoints at once', async (t) => {
  if (!needChromium(t)) return;
  const a = await startFake({ name: 'a' }), b = await startFake({ name: 'b' });
  started.push(a, b);
  const s = await gateway(a, b, true);
  const br = await launch();
  browsers.push(br);
  await br.goto(`${s.admin}/`);
  await br.waitFor(`document.querySelectorAll('tr[data-endpoint]').length === 2`, { what: 'both endpoints' });
  assert.equal(await br.evaluate(`document.getElementById('login').hidden`), true, 'no token asked for');
  const rows = await br.evaluate(ROWS);
  assert.deepEqual(rows.map((r) => r.breaker), ['closed', 'closed']);
  await br.waitFor(`document.getElementById('stream-state').dataset.live === 'true'`, { what: 'the event stream' });
  // a rate-limit mark: shown on the row and in the timeline
  await a.setMode('http429', { retry_after: 30 });
  assert.equal((await post(s.url('eth'), call('eth_chainId'))).status, 200, 'b answered');
  await br.waitFor(`document.querySelector('tr[data-endpoint="eth/a"]').textContent.includes('rate limited')`,
    { what: 'a rate limited in the table' });
  await br.waitFor(`document.querySelector('#timeline li[data-kind="endpoint_rate_limited"]') !== null`,
    { what: 'endpoint_rate_limited in the timeline' });
});

test('the pressure column shows each network\'s live level: critical under load, ok again after, off where disabled', async (t) => {
  if (!needChromium(t)) return;
  const slow = await startFake({ name: 'slow', args: ['--mode', 'slow', '--delay-ms', '300'] });
  const c = await startFake({ name: 'c' });
  started.push(slow, c);
  const s = await startSluice({
    workers: 2,
    networks: {
      eth: { lines: ['ranking: { probe_interval_ms: 0 }', 'pressure: { hold_ms: 500 }'],
        endpoints: [{ id: 'slow', url: slow.url, max_inflight: 4 }] },
      quiet: { lines: ['pressure: { enabled: false }'], endpoints: [{ id: 'c', url: c.url }] },
    },
  });
  started.push(s);
  const level = async (net) => (await adminGet(s, '/admin/networks')).json.find((n) => n.network === net).level;
  const shown = (net) => br.evaluate(`document.querySelector('tr[data-network="${net}"] td[data-pressure]')?.dataset.pressure`);
  const br = await launch();
  browsers.push(br);
  await br.goto(`${s.admin}/`);
  await br.waitFor(`document.querySelectorAll('tr[data-network] td[data-pressure]').length === 2`, { what: 'both networks' });
  assert.equal(await level('eth'), 'ok');
  await br.waitFor(`document.querySelector('tr[data-network="eth"] td[data-pressure]').dataset.pressure === 'ok'`, { what: 'eth ok' });
  // a network without a level says so, not "ok"
  assert.equal((await adminGet(s, '/admin/networks')).json.find((n) => n.network === 'quiet').enabled, false);
  assert.equal(await shown('quiet'), 'off');

  // receipt polls (never shed: they wait for a slot) from 12 loops against 4
  // slots of a slow provider: the depth passes the ceiling, critical
  let running = true;
  const polls = Promise.all(Array.from({ length: 12 }, async () => {
    while (running) await postFresh(s.url('eth'), call('eth_getTransactionReceipt', ['0x' + randomBytes(32).toString('hex')], 1));
  }));
  try {
    await waitFor(async () => (await level('eth')) === 'critical', { what: 'eth critical', timeoutMs: 8000 });
    await br.waitFor(`document.querySelector('tr[data-network="eth"] td[data-pressure]').dataset.pressure === 'critical'`,
      { what: 'critical on the page' });
    assert.equal(await level('eth'), 'critical', 'the page shows what /admin/networks says');
    // with what makes it: calls in flight of the ceiling (4 slots)
    assert.match(await br.evaluate(`document.querySelector('tr[data-network="eth"] td[data-pressure]').textContent`),
      /^critical\d+ \/ 4 in flight · \d+% · for /);
    assert.equal(await shown('quiet'), 'off');
  } finally {
    running = false;
    await polls;
  }
  await waitFor(async () => (await level('eth')) === 'ok', { what: 'eth ok again', timeoutMs: 10000 });
  await br.waitFor(`document.querySelector('tr[data-network="eth"] td[data-pressure]').dataset.pressure === 'ok'`,
    { what: 'ok again on the page' });
  await br.waitFor(`document.querySelector('#timeline li[data-kind="pressure_changed"]') !== null`, { what: 'pressure_changed in the timeline' });
});
