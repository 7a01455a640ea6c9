// JSON-RPC over WebSocket on the client edge (gateway/gw_ws.c): the main
// port and the second listener (port + 1), real clients (ethers v6
// WebSocketProvider, viem webSocket(), @solana/web3.js's derived URL, the
// ws package), the same gateway path as HTTP (limits per message, errors,
// batches), and the bounds: message size, calls in flight, connections per
// identity, a client that does not read (1008), a client that leaves
// mid-call, shutdown (1001); port + 1 taken; the admin default (8550).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import WebSocket from 'ws';
import { WebSocketProvider } from 'ethers';
import { createPublicClient, webSocket } from 'viem';
import { Connection } from '@solana/web3.js';
import { startFake, startSluice, post, call, sleep, waitFor, waitLog, adminGet, tempDir, SLUICE_BIN } from '../lib/harness.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const ZERO = '0x0000000000000000000000000000000000000000';
const metrics = async (s) => (await adminGet(s, '/metrics')).text;

async function gateway({ server = {}, extra = '', workers = 1, chain = 'ethereum', net: netName = 'eth' } = {}) {
  const a = await startFake({ name: 'a', chain });
  started.push(a);
  const s = await startSluice({ workers, server, extra, networks: { [netName]: { chain, lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: [{ id: 'a', url: a.url }] } } });
  started.push(s);
  return { a, s };
}

// A socket with its messages in a queue: next() resolves with the next one (parsed).
function openWs(url) {
  const ws = new WebSocket(url);
  const queue = [], waiters = [];
  ws.on('message', (d) => {
    const m = JSON.parse(d.toString());
    if (waiters.length) waiters.shift()(m); else queue.push(m);
  });
  const closed = new Promise((r) => ws.on('close', (code, reason) => r({ code, reason: reason.toString() })));
  const opened = new Promise((resolve, reject) => {
    ws.on('open', resolve);
    ws.on('error', reject);
    ws.on('unexpected-response', (req, res) => reject(Object.assign(new Error(`upgrade refused: ${res.statusCode}`), { status: res.statusCode })));
  });
  const next = (ms = 5000) => (queue.length ? Promise.resolve(queue.shift()) : new Promise((r, j) => {
    const t = setTimeout(() => j(new Error('no message')), ms);
    waiters.push((m) => { clearTimeout(t); r(m); });
  }));
  return { ws, opened, closed, next, send: (o) => ws.send(typeof o === 'string' ? o : JSON.stringify(o)) };
}

test('ethers WebSocketProvider and viem webSocket(): calls and a batch on the main port and on port + 1', async () => {
  const { s } = await gateway();
  assert.ok(s.wsPort, `no second listener in the log:\n${s.logs()}`);
  assert.equal(s.wsPort, s.port + 1);
  const balance = BigInt((await post(s.url('eth'), call('eth_getBalance', [ZERO, 'latest']))).json.result);
  for (const port of [s.port, s.wsPort]) {
    const url = `ws://127.0.0.1:${port}/eth`;
    const provider = new WebSocketProvider(url);
    assert.ok(await provider.getBlockNumber() >= 1000000);
    assert.equal(await provider.getBalance(ZERO), balance);
    // several calls in one tick: ethers sends them as one JSON-RPC batch message
    const [n, id, bal] = await Promise.all([provider.getBlockNumber(), provider.send('eth_chainId', []), provider.getBalance(ZERO)]);
    assert.ok(n >= 1000000);
    assert.deepEqual([id, bal], ['0x1', balance]);
    await provider.destroy();

    const client = createPublicClient({ transport: webSocket(url) });
    assert.ok(await client.getBlockNumber() >= 1000000n);
    assert.equal(await client.getBalance({ address: ZERO }), balance);
    assert.equal(await client.getChainId(), 1);
    await (await client.transport.getRpcClient()).close();
  }
  // a raw batch: one message in, one array out, ids kept, order kept
  const c = openWs(`ws://127.0.0.1:${s.wsPort}/eth`);
  await c.opened;
  c.send([call('eth_chainId', [], 'a'), call('eth_blockNumber', [], 2), { jsonrpc: '2.0', method: 'eth_chainId' }]);
  const b = await c.next();
  assert.deepEqual(b.map((m) => m.id), ['a', 2]);
  assert.equal(b[0].result, '0x1');
  assert.ok(Number(b[1].result) >= 1000000);
  // a notification alone gets nothing back (HTTP: 204), the next call its answer
  c.send({ jsonrpc: '2.0', method: 'eth_chainId' });
  c.send(call('eth_chainId', [], 9));
  assert.equal((await c.next()).id, 9);
  c.ws.close();
  // the second listener answers plain HTTP as the main one does
  const r = await post(`http://127.0.0.1:${s.wsPort}/eth`, call('eth_blockNumber'));
  assert.ok(Number(r.json.result) >= 1000000);
  await waitFor(async () => /sluice_websocket_messages_total\{direction="out"\} [1-9]/.test(await metrics(s)), { what: 'messages out' });
  assert.match(await metrics(s), /sluice_websocket_messages_total\{direction="in"\} [1-9]/);
});

test('@solana/web3.js: a plain call through sluice, and its derived WebSocket URL (port + 1) takes the socket', async () => {
  const { s } = await gateway({ chain: 'solana', net: 'solana' });
  const connection = new Connection(`http://127.0.0.1:${s.port}/solana`, 'confirmed');
  assert.equal(typeof await connection.getSlot(), 'number');
  const derived = connection._rpcWsEndpoint;
  assert.equal(derived, `ws://127.0.0.1:${s.port + 1}/solana`);
  assert.equal(s.wsPort, s.port + 1);
  const c = openWs(derived);
  await c.opened;
  c.send(call('getSlot', [], 1));
  assert.equal(typeof (await c.next()).result, 'number');
  // a subscription is served (tests/integration/subscriptions.test.mjs): an id of sluice's, then ended
  c.send(call('slotSubscribe', [], 2));
  const e = await c.next();
  assert.equal(e.id, 2);
  assert.equal(typeof e.result, 'number');
  c.send(call('slotUnsubscribe', [e.result], 4));
  let m;
  do m = await c.next(); while (m.method === 'slotNotification');
  assert.deepEqual([m.id, m.result], [4, true]);
  c.send(call('getSlot', [], 3));
  assert.equal((await c.next()).id, 3);
  c.ws.close();
});

test('the HTTP path\'s features hold over a socket: a wide eth_getLogs is split and answered as one unlimited node would', async () => {
  const args = ['--block', '30000', '--block-time-ms', '0', '--logs-per-block', '2'];
  const lim = await startFake({ name: 'lim', args: [...args, '--logs-limit', '1000', '--logs-vendor', 'infura'] });
  const full = await startFake({ name: 'full', args });
  started.push(lim, full);
  const s = await startSluice({ workers: 1, networks: { eth: { lines: ['ranking: { probe_interval_ms: 200 }'],
    endpoints: [{ id: 'lim', url: lim.url, max_logs_blocks: 1000 }] } } });
  started.push(s);
  await waitFor(async () => (await adminGet(s, '/admin/endpoints')).json.every((e) => Number(e.head) === 30000),
    { timeoutMs: 8000, what: 'the probe saw the head' });
  const q = call('eth_getLogs', [{ address: '0x2222222222222222222222222222222222222222', fromBlock: '0x4e20', toBlock: '0x55f0' }], 5);
  const want = (await post(full.url, q)).text;
  const c = openWs(`ws://127.0.0.1:${s.port}/eth`);
  await c.opened;
  const got = await new Promise((r) => { c.ws.once('message', (d) => r(d.toString())); c.send(q); });
  assert.equal(got, want); // 2,000 blocks through two 1,000-block sub-calls, byte for byte
  assert.ok((await lim.stats()).methods.eth_getLogs >= 2);
  c.ws.close();
});

test('bad messages get JSON-RPC errors and the socket stays usable; eth_subscribe is answered with an id, inside a batch refused', async () => {
  const { s } = await gateway();
  const c = openWs(`ws://127.0.0.1:${s.port}/eth`);
  await c.opened;
  c.send('{"jsonrpc":"2.0","id":1,"method":');
  const e = await c.next();
  assert.equal(e.error.code, -32700);
  assert.equal(e.id, null);
  c.send('{"jsonrpc":"2.0","id":2}');
  assert.equal((await c.next()).error.code, -32600);
  c.send(call('eth_subscribe', ['newHeads'], 3));
  const sub = await c.next();
  assert.equal(sub.id, 3);
  assert.match(sub.result, /^0x[0-9a-f]{32}$/);
  c.send(call('eth_unsubscribe', [sub.result], 5));
  let un;
  do un = await c.next(); while (un.method === 'eth_subscription');
  assert.deepEqual([un.id, un.result], [5, true]);
  // inside a batch a subscription is refused plainly (one per message)
  c.send([call('eth_subscribe', ['newHeads'], 6)]);
  const [inBatch] = await c.next();
  assert.equal(inBatch.error.code, -32601);
  assert.match(inBatch.error.message, /alone in its message/);
  c.send(call('eth_blockNumber', [], 4));
  const ok = await c.next();
  assert.equal(ok.id, 4);
  assert.ok(Number(ok.result) >= 1000000);
  c.ws.close();
  // one access line per message, marked as WebSocket, the client's address as over HTTP
  // (subscription calls, answered by the registry, have their line too: subscribe, unsubscribe, then the batch)
  await waitFor(() => s.accessLines().filter((l) => l.ws).length >= 6, { what: 'access lines' });
  const lines = s.accessLines().filter((l) => l.ws);
  assert.deepEqual(lines.map((l) => l.methods), [[], [''], ['eth_subscribe'], ['eth_unsubscribe'], ['eth_subscribe'],
    ['eth_blockNumber']]);
  assert.deepEqual([lines[2].status, lines[2].outcome, lines[3].outcome], [200, 'ok', 'ok']);
  assert.equal(lines[5].client, '127.0.0.1');
  assert.equal(lines[5].network, 'eth');
  assert.equal(lines[5].upstream[0].endpoint, 'a');
});

test('limits are charged per message: over the tier, -32005 scope client at the call\'s id', async () => {
  const { s } = await gateway({ extra: 'tiers: { anonymous: { per_second: 3 } }' });
  const c = openWs(`ws://127.0.0.1:${s.port}/eth`);
  await c.opened;
  const STD = (id) => call('eth_call', [{ to: '0x0000000000000000000000000000000000000001' }, 'latest'], id);
  for (let i = 1; i <= 6; i++) c.send(STD(i));
  const got = [];
  for (let i = 0; i < 6; i++) got.push(await c.next());
  const refused = got.filter((m) => m.error);
  assert.equal(refused.length, 3, JSON.stringify(got));
  for (const m of refused) {
    assert.equal(m.error.code, -32005);
    assert.equal(m.error.data.scope, 'client');
    assert.ok(m.id >= 1 && m.id <= 6);
  }
  c.ws.close();
});

test('bounds: message size (1009), calls in flight per socket, connections per identity', async () => {
  const { a, s } = await gateway({ server: { max_body_bytes: 2048, ws_max_inflight: 2, ws_max_connections_per_identity: 2 } });
  const c = openWs(`ws://127.0.0.1:${s.port}/eth`);
  await c.opened;
  await a.setMode('slow', { delay_ms: 600, method: 'eth_call' });
  for (let i = 1; i <= 4; i++) c.send(call('eth_call', [{ to: ZERO }, 'latest'], i));
  const got = [];
  for (let i = 0; i < 4; i++) got.push(await c.next());
  const over = got.filter((m) => m.error);
  assert.equal(over.length, 2, JSON.stringify(got));
  assert.deepEqual(over.map((m) => m.id).sort(), [3, 4]);
  assert.match(over[0].error.message, /in flight on this WebSocket/);
  assert.equal(over[0].error.data.scope, 'connection');
  // a third socket of the same caller is refused at the upgrade
  const c2 = openWs(`ws://127.0.0.1:${s.port}/eth`);
  await c2.opened;
  const c3 = openWs(`ws://127.0.0.1:${s.wsPort ?? s.port}/eth`);
  await assert.rejects(c3.opened, (e) => e.status === 429);
  c2.ws.close();
  await c2.closed;
  const c4 = await waitFor(async () => {
    const t = openWs(`ws://127.0.0.1:${s.port}/eth`);
    try { await t.opened; return t; } catch { return null; }
  }, { what: 'a seat after a close' });
  c4.ws.close();
  await waitFor(async () => /sluice_websocket_refused_total 1\n/.test(await metrics(s)), { what: 'refused counted' });
  // a message over max_body_bytes closes the socket with 1009
  c.send(JSON.stringify(call('eth_call', [{ to: ZERO, data: '0x' + '00'.repeat(2000) }, 'latest'], 9)));
  assert.equal((await c.closed).code, 1009);
});

test('a browser\'s upgrade needs an origin server.cors_origins allows; other clients send none', async () => {
  const { s } = await gateway({ server: { cors_origins: '["https://app.example"]' } });
  const evil = new WebSocket(`ws://127.0.0.1:${s.port}/eth`, { origin: 'https://evil.example' });
  const status = await new Promise((r) => { evil.on('unexpected-response', (q, res) => r(res.statusCode)); evil.on('open', () => r(101)); });
  assert.equal(status, 403);
  for (const origin of ['https://app.example', undefined]) {
    const c = new WebSocket(`ws://127.0.0.1:${s.port}/eth`, origin ? { origin } : {});
    await new Promise((r, j) => { c.on('open', r); c.on('unexpected-response', (q, res) => j(new Error(`${res.statusCode}`))); });
    c.close();
  }
});

test('a client that does not read is closed with 1008 while another keeps being served', async () => {
  const { a, s } = await gateway({ server: { ws_max_queued_bytes: 65536 } });
  await a.setMode('huge', { size: 1 << 20, method: 'eth_call' });
  const slow = openWs(`ws://127.0.0.1:${s.port}/eth`);
  await slow.opened;
  const other = openWs(`ws://127.0.0.1:${s.port}/eth`);
  await other.opened;
  slow.ws._socket.pause(); // reads nothing from now on
  for (let i = 0; i < 40; i++) slow.send(call('eth_call', [{ to: ZERO }, 'latest'], i));
  let served = 0;
  await waitFor(async () => {
    other.send(call('eth_blockNumber', [], served));
    assert.ok(Number((await other.next()).result) >= 1000000);
    served++;
    return /sluice_websocket_closed_total\{reason="slow_reader"\} 1/.test(await metrics(s));
  }, { timeoutMs: 20000, what: 'the slow reader closed' });
  slow.ws._socket.resume();
  const { code } = await slow.closed;
  assert.equal(code, 1008);
  assert.ok(served >= 1);
  other.send(call('eth_blockNumber', [], 'after'));
  assert.equal((await other.next()).id, 'after');
  other.ws.close();
  await waitLog(s, /closed a WebSocket \(1008\) whose client does not read/);
});

test('a client that pings and never reads is closed with 1008 too (the pongs it never takes are bounded)', async () => {
  const { s } = await gateway({ server: { ws_max_queued_bytes: 65536 } });
  const c = openWs(`ws://127.0.0.1:${s.port}/eth`);
  await c.opened;
  c.ws._socket.pause();
  const payload = Buffer.alloc(125, 7);
  let sent = 0;
  while (sent < 200000 && !/slow_reader"\} 1\n/.test(await metrics(s))) {
    for (let i = 0; i < 5000; i++) c.ws.ping(payload);
    sent += 5000;
    await sleep(20);
  }
  assert.match(await metrics(s), /sluice_websocket_closed_total\{reason="slow_reader"\} 1\n/);
  c.ws._socket.resume();
  assert.equal((await c.closed).code, 1008);
});

test('a client leaving mid-call releases the call; shutdown closes sockets with 1001', async () => {
  const { a, s } = await gateway({ server: { shutdown_grace_ms: 8000 } });
  await a.setMode('slow', { delay_ms: 6000, method: 'eth_call' });
  const gone = openWs(`ws://127.0.0.1:${s.port}/eth`);
  await gone.opened;
  gone.send(call('eth_call', [{ to: ZERO }, 'latest'], 1));
  await waitFor(async () => (await a.stats()).calls >= 1, { what: 'the call upstream' });
  gone.ws.terminate();
  const stay = openWs(`ws://127.0.0.1:${s.wsPort ?? s.port}/eth`);
  await stay.opened;
  await sleep(300);
  const t0 = Date.now();
  await s.stop();
  // the released call no longer holds the drain (it would for 6 s)
  assert.ok(Date.now() - t0 < 3000, `drain took ${Date.now() - t0} ms:\n${s.logs()}`);
  assert.doesNotMatch(s.logs(), /still in flight/);
  assert.equal((await stay.closed).code, 1001);
});

test('a reload closes the old workers\' sockets with 1001; a new socket is served by the new ones', async () => {
  const { s } = await gateway({ workers: 2 });
  const old = openWs(`ws://127.0.0.1:${s.wsPort ?? s.port}/eth`);
  await old.opened;
  old.send(call('eth_chainId', [], 1));
  assert.equal((await old.next()).result, '0x1');
  s.child.kill('SIGHUP');
  const { code, reason } = await old.closed;
  assert.equal(code, 1001);
  assert.match(reason, /shutting down/);
  // an upgrade that reaches an old worker between its accept and its drain
  // gets 503 "shutting down: connect again": a client connects again
  const fresh = await waitFor(async () => {
    const t = openWs(`ws://127.0.0.1:${s.wsPort ?? s.port}/eth`);
    try { await t.opened; return t; } catch (e) { assert.equal(e.status, 503); return null; }
  }, { what: 'a socket on the new workers' });
  fresh.send(call('eth_chainId', [], 2));
  assert.equal((await fresh.next()).result, '0x1');
  fresh.ws.close();
});

test('port + 1 taken: a log line, WebSocket on the main port only; a set ws_listen that is taken stops the start', async () => {
  // a port whose next one is held by someone else
  let holder, port;
  for (let i = 0; i < 20 && !port; i++) {
    holder = net.createServer();
    await new Promise((r) => holder.listen(0, '127.0.0.1', r));
    const p = holder.address().port - 1;
    const probe = net.createServer();
    const free = await new Promise((r) => { probe.once('error', () => r(false)); probe.listen(p, '127.0.0.1', () => r(true)); });
    if (free) { await new Promise((r) => probe.close(r)); port = p; } else holder.close();
  }
  assert.ok(port, 'no free port below a held one');
  const { s } = await gateway({ server: { listen: `"127.0.0.1:${port}"` } });
  assert.equal(s.port, port);
  assert.equal(s.wsPort, undefined);
  assert.match(s.logs(), new RegExp(`WebSocket: 127\\.0\\.0\\.1:${port + 1} \\(server.listen's port \\+ 1.*cannot be bound.*served on the main port 127\\.0\\.0\\.1:${port} only`));
  assert.match(s.logs(), /WebSocket on the main port only/);
  const c = openWs(`ws://127.0.0.1:${port}/eth`);
  await c.opened;
  c.send(call('eth_blockNumber', [], 1));
  assert.ok(Number((await c.next()).result) >= 1000000);
  c.ws.close();
  await assert.rejects(gateway({ server: { ws_listen: `"127.0.0.1:${port + 1}"` } }), /cannot bind 127\.0\.0\.1:\d+|exited/);
  holder.close();
});

test('defaults: admin on 127.0.0.1:8550, WebSocket on the main port and its port + 1 (--check)', () => {
  const dir = tempDir();
  const file = path.join(dir, 'min.yaml');
  writeFileSync(file, 'networks:\n  eth:\n    chain: ethereum\n    endpoints:\n      - { id: a, url: "http://127.0.0.1:1" }\n');
  const r = spawnSync(SLUICE_BIN, ['--check', '-c', file], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /listeners: http:\/\/0\.0\.0\.0:8545; WebSocket on it and its port \+ 1 when free; admin http:\/\/127\.0\.0\.1:8550\n/);
  writeFileSync(file, 'server: { ws_listen: "127.0.0.1:9546" }\nadmin: { listen: off }\nnetworks:\n  eth:\n    chain: ethereum\n    endpoints:\n      - { id: a, url: "http://127.0.0.1:1" }\n');
  const r2 = spawnSync(SLUICE_BIN, ['--check', '-c', file], { encoding: 'utf8' });
  assert.match(r2.stdout, /WebSocket on it and ws:\/\/127\.0\.0\.1:9546; admin off/);
  writeFileSync(file, 'server: { ws_ping_interval_ms: 5000, ws_idle_timeout_ms: 5000 }\nnetworks:\n  eth:\n    chain: ethereum\n    endpoints:\n      - { id: a, url: "http://127.0.0.1:1" }\n');
  const r3 = spawnSync(SLUICE_BIN, ['--check', '-c', file], { encoding: 'utf8' });
  assert.equal(r3.status, 1);
  assert.match(r3.stderr, /:1: server\.ws_idle_timeout_ms: ws_idle_timeout_ms \(5000\) must be above ws_ping_interval_ms/);
});

test('keep-alive: pings are answered by a live client, which stays; a peer that answers nothing is closed as idle', async () => {
  const { s } = await gateway({ server: { ws_ping_interval_ms: 200, ws_idle_timeout_ms: 1000 } });
  const live = openWs(`ws://127.0.0.1:${s.port}/eth`);
  let pings = 0;
  live.ws.on('ping', () => pings++); // the ws package answers each with a pong
  await live.opened;
  // a raw peer: the handshake, then silence (no pong, nothing)
  const mute = net.connect(s.port, '127.0.0.1');
  await new Promise((r) => mute.once('connect', r));
  mute.write(`GET /eth HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`);
  let head = '';
  const closedAt = new Promise((r) => mute.on('close', () => r(Date.now())));
  mute.on('data', (d) => { head += d.toString('latin1'); });
  const t0 = Date.now();
  const at = await closedAt;
  assert.match(head, /^HTTP\/1\.1 101 /);
  // a close frame (0x88) with 1001 (0x03 0xe9) came before the connection went
  assert.ok(head.includes('\x88') && head.includes('\x03\xe9'), JSON.stringify(head.slice(-80)));
  assert.ok(at - t0 >= 900 && at - t0 < 8000, `closed after ${at - t0} ms`);
  assert.ok(pings >= 3, `${pings} pings`);
  live.send(call('eth_blockNumber', [], 1));
  const got = await live.next();
  assert.ok(Number(got.result) >= 1000000, JSON.stringify(got));
  live.ws.close();
  await waitFor(async () => /sluice_websocket_closed_total\{reason="idle"\} 1\n/.test(await metrics(s)), { what: 'idle close counted' });
});
