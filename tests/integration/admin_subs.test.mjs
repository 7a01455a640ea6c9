// Operator truth for WebSocket subscriptions (issue 22): /admin/networks
// shows, per network, the client sockets open, subscriptions and sources
// open by kind, notifications sent, heights backfilled and skipped, logs
// sent, slow-reader closes; /metrics has the same figures per network, and
// the networks add up to the worker totals; the operator page in a real
// Chromium shows them. A subscribe over WebSocket gets an access line.
// `--check --connect` opens each endpoint's ws_url (Upgrade, Accept, one
// eth_chainId over the socket) and names the endpoint, never the URL's key,
// when one is not a WebSocket.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import WebSocket, { WebSocketServer } from 'ws';
import { startFake, startSluice, sleep, waitFor, adminGet, renderConfig, tempDir, SLUICE_BIN } from '../lib/harness.mjs';
import { launch, needChromium } from '../lib/cdp.mjs';

const started = [];
const browsers = [];
after(async () => {
  await Promise.all(browsers.map((b) => b.close()));
  await Promise.all(started.map((p) => p.stop()));
});

const POLL_MS = 100;
const FROZEN = ['--block', '1000', '--block-time-ms', '0'];

async function fake(name, chain) {
  const f = await startFake({ name, chain, args: FROZEN });
  started.push(f);
  f.chain = async (body) => (await fetch(`${f.url}/_control/chain`, { method: 'POST', body: JSON.stringify(body) })).json();
  return f;
}

// A raw client socket: every message kept; call() resolves with the answer.
async function openWs(url) {
  const ws = new WebSocket(url);
  const seen = [];
  ws.on('message', (d) => seen.push(JSON.parse(d.toString())));
  await new Promise((r, j) => { ws.on('open', r); ws.on('error', j); });
  let next = 1;
  const call = async (method, params) => {
    const id = next++;
    ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    return waitFor(() => seen.find((m) => m.id === id), { what: `the answer to ${method}` });
  };
  const notes = () => seen.filter((m) => m.method && m.params && m.params.subscription !== undefined).length;
  const close = () => new Promise((r) => { ws.on('close', r); ws.close(); });
  return { ws, call, notes, close, seen };
}

const networksDoc = async (s) => Object.fromEntries((await adminGet(s, '/admin/networks')).json.map((n) => [n.network, n]));
function metric(text, name, labels) {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}} `));
  return line === undefined ? undefined : Number(line.split(' ').pop());
}
const metricTotal = (text, name) => Number(text.split('\n').find((l) => l.startsWith(`${name} `)).split(' ').pop());

test('/admin/networks and /metrics: sockets, subscriptions and sources by kind, notifications, per network; the page shows them', async (t) => {
  const a = await fake('a', 'ethereum'), b = await fake('b', 'solana');
  const s = await startSluice({ workers: 1, networks: {
    eth: { lines: [`ranking: { probe_interval_ms: ${POLL_MS} }`], endpoints: [{ id: 'a', url: a.url }] },
    sol: { chain: 'solana', lines: [`ranking: { probe_interval_ms: ${POLL_MS} }`], endpoints: [{ id: 'b', url: b.url }] },
  } });
  started.push(s);
  const ws = (netName) => openWs(`ws://127.0.0.1:${s.port}/${netName}`);
  // eth: two sockets, newHeads on both (one shared source), logs on one; sol: slot and root on one socket
  const c1 = await ws('eth'), c2 = await ws('eth'), c3 = await ws('sol');
  for (const [c, m, p] of [[c1, 'eth_subscribe', ['newHeads']],
    [c1, 'eth_subscribe', ['logs', { address: '0x00000000000000000000000000000000000000aa' }]],
    [c2, 'eth_subscribe', ['newHeads']], [c3, 'slotSubscribe', []], [c3, 'rootSubscribe', []]]) {
    const r = await c.call(m, p);
    assert.ok(r.result !== undefined, JSON.stringify(r));
  }
  // a subscription call over WebSocket has its access line, as any other call
  await waitFor(() => s.accessLines().filter((l) => l.ws && l.methods[0] === 'eth_subscribe').length === 3,
    { what: 'the access lines of the subscribes' });
  const line = s.accessLines().find((l) => l.methods[0] === 'slotSubscribe');
  assert.equal(line.network, 'sol');
  assert.equal(line.status, 200);
  assert.equal(line.outcome, 'ok');

  await a.chain({ advance: 3 });
  await b.chain({ advance: 3 });
  const heard = (c, n) => c.seen.some((x) => x.params && x.params.result && x.params.result.number === n);
  await waitFor(() => heard(c1, '0x3eb') && heard(c2, '0x3eb'), { what: 'the eth heads' });
  await sleep(5 * POLL_MS);
  // the figures, once the worker's counters are flushed (every ~100 ms)
  const sent = { eth: () => c1.notes() + c2.notes(), sol: () => c3.notes() };
  const nets = await waitFor(async () => {
    const n = await networksDoc(s);
    return n.eth.subscriptions.notifications === sent.eth() && n.sol.subscriptions.notifications === sent.sol() &&
      n.eth.subscriptions.sockets === 2 ? n : undefined;
  }, { what: 'notifications as the clients counted them' });
  const e = nets.eth.subscriptions, so = nets.sol.subscriptions;
  t.diagnostic(JSON.stringify({ eth: e, sol: so }));
  assert.deepEqual(e.open, { newHeads: 2, logs: 1, newPendingTransactions: 0 });
  assert.deepEqual(e.sources, { newHeads: 1, logs: 1, newPendingTransactions: 0 });
  assert.equal(so.sockets, 1);
  assert.deepEqual(so.open, { slot: 1, root: 1, signature: 0, account: 0, sol_logs: 0, program: 0 });
  assert.deepEqual(so.sources, { slot: 1, root: 1, signature: 0, account: 0, sol_logs: 0, program: 0 });
  assert.ok(e.notifications >= 8, `eth notifications ${e.notifications}`);
  assert.ok(so.notifications >= 1, `sol notifications ${so.notifications}`);
  for (const k of ['backfilled', 'skipped', 'reorged']) assert.equal(typeof e.heights[k], 'number');
  assert.deepEqual(e.closed, { slow_reader: 0, idle: 0 });
  assert.equal(e.last_source_change, null);

  // /metrics: the same figures per network; the networks add up to the worker totals
  const m = (await adminGet(s, '/metrics')).text;
  assert.equal(metric(m, 'sluice_websocket_connections_by_network', 'network="eth"'), 2);
  assert.equal(metric(m, 'sluice_websocket_connections_by_network', 'network="sol"'), 1);
  assert.equal(metric(m, 'sluice_subscriptions_by_network', 'network="eth",kind="newHeads"'), 2);
  assert.equal(metric(m, 'sluice_subscriptions_by_network', 'network="eth",kind="logs"'), 1);
  assert.equal(metric(m, 'sluice_subscriptions_by_network', 'network="sol",kind="slot"'), 1);
  assert.equal(metric(m, 'sluice_subscription_sources', 'network="eth",kind="newHeads"'), 1);
  assert.equal(metric(m, 'sluice_subscription_sources', 'network="sol",kind="root"'), 1);
  const byNet = (n) => metric(m, 'sluice_subscription_notifications_by_network_total', `network="${n}"`);
  assert.equal(byNet('eth'), e.notifications);
  assert.equal(byNet('sol'), so.notifications);
  assert.equal(byNet('eth') + byNet('sol'), metricTotal(m, 'sluice_subscription_notifications_total'));
  assert.equal(metric(m, 'sluice_subscription_heights_by_network_total', 'network="eth",how="backfilled"'),
    metric(m, 'sluice_subscription_heights_total', 'how="backfilled"'));
  assert.equal(metric(m, 'sluice_websocket_connections_by_network', 'network="eth"') +
    metric(m, 'sluice_websocket_connections_by_network', 'network="sol"'), metricTotal(m, 'sluice_websocket_connections'));

  // the operator page (no admin token here) shows them, per network
  if (needChromium(t)) {
    const br = await launch();
    browsers.push(br);
    await br.goto(`${s.admin}/`);
    await br.waitFor(`document.querySelector('tr[data-network="eth"] td[data-subs]') !== null`, { what: 'the summary' });
    await br.waitFor(`document.querySelector('tr[data-network="eth"] td[data-subs]').dataset.subs === '3' &&
      document.querySelector('tr[data-network="sol"] td[data-subs]').dataset.subs === '2'`, { what: 'subscriptions open' });
    const cell = (netName, kind, what) => br.evaluate(`document.querySelector(
      'section[data-network="${netName}"] tr[data-sub-kind="${kind}"] td[data-${what}]').dataset.${what}`);
    assert.equal(await cell('eth', 'newHeads', 'open'), '2');
    assert.equal(await cell('eth', 'newHeads', 'sources'), '1');
    assert.equal(await cell('eth', 'logs', 'open'), '1');
    assert.equal(await cell('sol', 'root', 'sources'), '1');
    const figures = await br.evaluate(`({ ...document.querySelector('section[data-network="eth"] [data-subs-figures]').dataset })`);
    assert.equal(figures.sockets, '2');
    assert.equal(figures.notifications, String(e.notifications));
    assert.match(await br.evaluate(`document.querySelector('section[data-network="eth"] .subs').textContent`),
      /2 client sockets · [\d,]+ notifications · \d+ heights backfilled · \d+ skipped · \d+ logs sent · 0 slow-reader closes/);
    assert.deepEqual(br.console.filter((x) => x.level === 'exception'), []);
  }

  // sockets go: the figures follow; the last subscriber of a source stops it
  await c2.close();
  await waitFor(async () => {
    const n = (await networksDoc(s)).eth.subscriptions;
    return n.sockets === 1 && n.open.newHeads === 1 && n.sources.newHeads === 1;
  }, { what: 'c2 gone' });
  await c1.close();
  await c3.close();
  const gone = await waitFor(async () => {
    const n = await networksDoc(s);
    return n.eth.subscriptions.sockets === 0 && n.sol.subscriptions.sockets === 0 ? n : undefined;
  }, { what: 'every socket gone' });
  assert.deepEqual(gone.eth.subscriptions.sources, { newHeads: 0, logs: 0, newPendingTransactions: 0 });
  assert.deepEqual(gone.sol.subscriptions.open, { slot: 0, root: 0, signature: 0, account: 0, sol_logs: 0, program: 0 });
});

test('a client that does not read is closed with 1008 and counted on its network', async () => {
  const a = await fake('a', 'ethereum'), b = await fake('b', 'solana');
  const s = await startSluice({ workers: 1, server: { ws_max_queued_bytes: 65536 }, networks: {
    eth: { lines: [`ranking: { probe_interval_ms: ${POLL_MS} }`], endpoints: [{ id: 'a', url: a.url }] },
    sol: { chain: 'solana', lines: [`ranking: { probe_interval_ms: ${POLL_MS} }`], endpoints: [{ id: 'b', url: b.url }] },
  } });
  started.push(s);
  await a.setMode('huge', { size: 1 << 20, method: 'eth_call' });
  const slow = new WebSocket(`ws://127.0.0.1:${s.port}/eth`);
  await new Promise((r, j) => { slow.on('open', r); slow.on('error', j); });
  const closed = new Promise((r) => slow.on('close', (code) => r(code)));
  slow._socket.pause(); // reads nothing from now on
  for (let i = 0; i < 40; i++) slow.send(JSON.stringify({ jsonrpc: '2.0', id: i, method: 'eth_call', params: [{ to: '0x' + '00'.repeat(20) }, 'latest'] }));
  const n = await waitFor(async () => {
    const x = (await networksDoc(s));
    return x.eth.subscriptions.closed.slow_reader >= 1 ? x : undefined;
  }, { what: 'the slow-reader close', timeoutMs: 15000 });
  assert.equal(n.sol.subscriptions.closed.slow_reader, 0);
  const m = (await adminGet(s, '/metrics')).text;
  assert.equal(metric(m, 'sluice_websocket_closed_by_network_total', 'network="eth",reason="slow_reader"'),
    metric(m, 'sluice_websocket_closed_total', 'reason="slow_reader"'));
  slow._socket.resume();
  assert.equal(await closed, 1008);
});

test('the last subscription_source_changed of a network is in /admin/networks and on the page', async (t) => {
  const a = await fake('a', 'ethereum'), b = await fake('b', 'ethereum'), c = await fake('c', 'solana');
  const s = await startSluice({ workers: 1, networks: {
    eth: { lines: [`ranking: { probe_interval_ms: ${POLL_MS} }`], endpoints: [{ id: 'a', url: a.url }, { id: 'b', url: b.url }] },
    sol: { chain: 'solana', lines: [`ranking: { probe_interval_ms: ${POLL_MS} }`], endpoints: [{ id: 'c', url: c.url }] },
  } });
  started.push(s);
  await b.setMode('slow', { delay_ms: 40 }); // the ranking puts a first: the polls go through a
  const w = await openWs(`ws://127.0.0.1:${s.port}/eth`);
  await w.call('eth_subscribe', ['newHeads']);
  await sleep(3 * POLL_MS); // a subscription starts after the head it found (geth's): that head, behind us
  const both = async (body) => { await a.chain(body); return b.chain(body); };
  await both({ advance: 2 });
  await waitFor(() => w.notes() >= 2, { what: 'the heads before the kill' });
  assert.equal((await networksDoc(s)).eth.subscriptions.last_source_change, null);
  // a fails the polls' header fetches (its probes still answer): they fail over to b
  await a.setMode('http500', { method: 'eth_getBlockByNumber' });
  await both({ advance: 2 });
  const ch = await waitFor(async () => (await networksDoc(s)).eth.subscriptions.last_source_change,
    { timeoutMs: 15000, what: 'the source change' });
  assert.equal(ch.to, 'b');
  assert.match(ch.reason, /polled through b, was a/);
  assert.ok(Math.abs(Date.parse(ch.time) - Date.now()) < 15000, ch.time);
  assert.equal((await networksDoc(s)).sol.subscriptions.last_source_change, null, 'the other network has none');
  if (needChromium(t)) {
    const br = await launch();
    browsers.push(br);
    await br.goto(`${s.admin}/`);
    await br.waitFor(`(document.querySelector('section[data-network="eth"] .subs') || { textContent: '' })
      .textContent.includes('source moved to b')`, { what: 'the source change on the page' });
  }
  await w.close();
});

// ---- --check --connect and ws_url ----

const KEY = 'Qx7wK2mZ9vB4nR8tL3pY6sD1';

// An upstream speaking JSON-RPC over HTTP and over WebSocket on one port.
async function wsUpstream(chainId = '0x1') {
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ jsonrpc: '2.0', id: JSON.parse(body).id, result: '0x1' })));
  });
  const wss = new WebSocketServer({ server });
  const paths = [];
  wss.on('connection', (w, req) => {
    paths.push(req.url);
    w.on('message', (d) => {
      const m = JSON.parse(String(d));
      w.send(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: m.method === 'eth_chainId' ? chainId : null }));
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { port: server.address().port, paths, stop: () => new Promise((r) => { wss.close(); server.close(r); }) };
}

// Plain HTTP: 200 to everything, an Upgrade included.
async function plainHttp() {
  const server = http.createServer((req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('hello'));
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { port: server.address().port, stop: () => new Promise((r) => server.close(r)) };
}

// Answers an Upgrade with 101 and an Accept for another key.
async function wrongAccept() {
  const server = net.createServer((c) => {
    c.on('data', () => c.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
      'Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n'));
    c.on('error', () => {});
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { port: server.address().port, stop: () => new Promise((r) => server.close(r)) };
}

async function checkConnect(endpoints) {
  const dir = tempDir();
  const file = path.join(dir, 'sluice.yaml');
  writeFileSync(file, renderConfig({ statePath: path.join(dir, 'state'), networks: {
    eth: { lines: ['chain_id: 1'], endpoints } } }));
  return new Promise((resolve) => {
    // not spawnSync: the upstreams answering the check live in this process's event loop
    const child = spawn(SLUICE_BIN, ['--check', '--connect', '-c', file]);
    let stdout = '', stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

test('--check --connect opens every ws_url and asks its chain over the socket; a ws_url that is no WebSocket fails, named', async () => {
  const good = await wsUpstream(), plain = await plainHttp(), wrong = await wrongAccept(), goerli = await wsUpstream('0x5');
  started.push(good, plain, wrong, goerli);
  const http1 = `http://127.0.0.1:${good.port}`;
  const ok = await checkConnect([{ id: 'good', url: http1, ws_url: `"ws://127.0.0.1:${good.port}/v2/${KEY}"` }]);
  assert.equal(ok.status, 0, ok.stdout + ok.stderr);
  assert.match(ok.stdout, /network eth: endpoint good: ws_url answers over WebSocket \(chain 0x1\)/);
  assert.deepEqual(good.paths, [`/v2/${KEY}`], 'the socket was opened on the ws_url, with its key');

  const bad = await checkConnect([{ id: 'good', url: http1, ws_url: `"ws://127.0.0.1:${good.port}/v2/${KEY}"` },
    { id: 'plain', url: http1, ws_url: `"ws://127.0.0.1:${plain.port}/v2/${KEY}"` },
    { id: 'wrongaccept', url: http1, ws_url: `"ws://127.0.0.1:${wrong.port}/v2/${KEY}"` },
    { id: 'closed', url: http1, ws_url: '"ws://127.0.0.1:1/"' },
    { id: 'otherchain', url: http1, ws_url: `"ws://127.0.0.1:${goerli.port}/v2/${KEY}"` }]);
  assert.equal(bad.status, 1, bad.stdout + bad.stderr);
  assert.match(bad.stdout, /endpoint good: ws_url answers over WebSocket/);
  assert.match(bad.stderr, /network eth: endpoint plain: ws_url: the Upgrade was refused \(not HTTP 101\)/);
  assert.match(bad.stderr, /network eth: endpoint wrongaccept: ws_url: a wrong Sec-WebSocket-Accept/);
  assert.match(bad.stderr, /network eth: endpoint closed: ws_url: the connection failed/);
  assert.match(bad.stderr, /network eth: endpoint otherchain: ws_url is on chain 0x5, not the configured 0x1/);
  assert.ok(!(bad.stdout + bad.stderr).includes(KEY), 'the key is shown nowhere');
  assert.ok(!(ok.stdout + ok.stderr).includes(KEY), 'the key is shown nowhere');
});
