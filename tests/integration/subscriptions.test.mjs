// Subscriptions over the client WebSocket, served from polling through the
// pool (gateway/sub*.c, policy/headtrack.c): viem's webSocket()
// watchBlocks and ethers' WebSocketProvider on('block') get every height
// exactly once, in order, while the head jumps by several blocks; a reorg
// re-sends the replaced heights with their new hashes; eth_subscribe logs
// gets every log once per (blockHash, logIndex), and a replaced block's logs
// again with removed: true; a subscription starts with the first block after
// it (geth's semantics: the head it found is not sent); the first of two endpoints killed mid-stream
// leaves no gap; 1,000 subscribers share one source (the fake's call counts);
// unsubscribe, the bounds, newPendingTransactions' refusal; Solana's
// onSlotChange through the derived port + 1 URL and signatureSubscribe.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import bs58 from 'bs58';
import http from 'node:http';
import WebSocket, { WebSocketServer } from 'ws';
import { WebSocketProvider } from 'ethers';
import { createPublicClient, webSocket } from 'viem';
import { Connection, PublicKey } from '@solana/web3.js';
import { startFake, startSluice, post, call, sleep, waitFor, adminGet, workerPids, events } from '../lib/harness.mjs';
import { openWs, waitMetric } from '../lib/wsclient.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const POLL_MS = 100;
const FROZEN = ['--block', '1000', '--block-time-ms', '0'];

async function fake(name, { chain = 'ethereum', args = [] } = {}) {
  const f = await startFake({ name, chain, args: [...FROZEN, ...args] });
  started.push(f);
  f.chain = async (body) => (await fetch(`${f.url}/_control/chain`, { method: 'POST', body: JSON.stringify(body) })).json();
  return f;
}

async function gateway(fakes, { chain = 'ethereum', net = 'eth', server = {}, extra = '', cache = false, probeMs = POLL_MS } = {}) {
  const s = await startSluice({ workers: 1, server, extra, cache, networks: { [net]: { chain,
    lines: [`ranking: { probe_interval_ms: ${probeMs} }`], endpoints: fakes.map((f) => ({ id: f.name, url: f.url })) } } });
  started.push(s);
  return s;
}


const num = (h) => Number(BigInt(h));
const consecutive = (xs) => xs.every((x, i) => i === 0 || x === xs[i - 1] + 1);

test('viem watchBlocks: every height once, in order, while the head jumps; a reorg re-sends the replaced heights', async () => {
  const a = await fake('a');
  const s = await gateway([a], { cache: true }); // the response cache on, as by default: polls go past it
  // a raw subscriber beside viem, from the start: it will see the reorg as a node tells it
  const c = openWs(`ws://127.0.0.1:${s.port}/eth`);
  await c.opened;
  const sub = (await c.rpc('eth_subscribe', ['newHeads'], 1)).result;
  assert.match(sub, /^0x[0-9a-f]{32}$/);
  const client = createPublicClient({ transport: webSocket(`ws://127.0.0.1:${s.port}/eth`) });
  const blocks = [];
  const unwatch = client.watchBlocks({ onBlock: (b) => blocks.push(b), onError: (e) => blocks.push(e) });
  const numbers = [];
  const unwatchN = client.watchBlockNumber({ onBlockNumber: (n) => numbers.push(Number(n)), onError: (e) => numbers.push(e) });
  // viem joins the raw subscriber's source: it hears the heads from the next one on; the head
  // the subscriptions found (1000) is sent to none (geth's semantics: the first block after it)
  await waitMetric(s, /sluice_subscriptions\{kind="newHeads"\} 3\b/);
  await sleep(3 * POLL_MS);
  assert.equal(c.notes(sub).length, 0);
  for (const k of [1, 3, 5, 2]) {
    const head = (await a.chain({ advance: k })).head;
    await waitFor(() => numbers.at(-1) === head && blocks.some((b) => Number(b.number) === head), { what: `block ${head}` });
  }
  await sleep(3 * POLL_MS);
  // watchBlockNumber reads the notifications as they come: 1001..1011, once each, in order
  const ns = Array.from({ length: 11 }, (_, i) => 1001 + i);
  assert.deepEqual(numbers, ns);
  // watchBlocks fetches each block it is told of (eth_getBlockByNumber, answered as they come back):
  // every one once; each links to the one before
  blocks.sort((x, y) => Number(x.number) - Number(y.number));
  assert.deepEqual(blocks.map((b) => Number(b.number)), ns);
  for (let i = 1; i < blocks.length; i++) assert.equal(blocks[i].parentHash, blocks[i - 1].hash);
  unwatch();
  unwatchN();
  await (await client.transport.getRpcClient()).close();

  // the raw subscriber got the same heights; then 1010 and 1011 are replaced, new hashes
  assert.deepEqual(c.notes(sub).map((h) => num(h.number)), ns);
  const old = c.notes(sub).at(-1);
  assert.equal(num(old.number), 1011);
  assert.equal(old.transactions, undefined);
  await a.chain({ reorg: 2 }); // 1010, 1011 replaced
  const r = await a.chain({ advance: 1 }); // head 1012
  await waitFor(() => c.notes(sub).some((h) => num(h.number) === 1012), { what: 'the new head' });
  const after = c.notes(sub).slice(11);
  assert.deepEqual(after.map((h) => num(h.number)), [1010, 1011, 1012]);
  assert.notEqual(after[1].hash, old.hash);
  assert.equal(after[2].hash, r.hash);
  assert.equal(after[1].parentHash, after[0].hash);
  assert.equal(after[0].parentHash, blocks[8].hash); // 1009 was kept
  // 1010 was sent again over the one sent (1011 refetched after it): one reorged, 12 + 1 backfilled
  await waitMetric(s, /sluice_subscription_heights_total\{how="reorged"\} 1\b/);
  await waitMetric(s, /sluice_subscriptions\{kind="newHeads"\} 1\b/);
  c.ws.close();
});

test('ethers WebSocketProvider on("block"), and the first of two endpoints killed mid-stream: no gap', async () => {
  const a = await fake('a'), b = await fake('b');
  // probes off: the poll itself must meet the killed endpoint, which is the
  // failover the event tells; a probe finding a dead first moves the ranking
  // instead, which is not told (a slow worker under ASan lost that race)
  const s = await gateway([a, b], { probeMs: 0 });
  // the ranking puts a first: the polls go through a until it is killed, whenever that is
  await b.setMode('slow', { delay_ms: 40 });
  const provider = new WebSocketProvider(`ws://127.0.0.1:${s.port}/eth`, 1, { staticNetwork: true }); // a notification before ethers knows its network throws in ethers
  const seen = [];
  await provider.on('block', (n) => seen.push(n));
  const both = async (body) => { await a.chain(body).catch(() => {}); return b.chain(body); };
  // ethers subscribes in the background: the head its subscription found (1000) is not sent, the
  // first block after it is
  await waitMetric(s, /sluice_subscriptions\{kind="newHeads"\} 1\b/);
  await sleep(3 * POLL_MS);
  for (const k of [2, 4]) {
    const head = (await both({ advance: k })).head;
    await waitFor(() => seen.at(-1) === head, { what: `block ${head}` });
  }
  await a.stop('SIGKILL');
  for (const k of [1, 3]) {
    const head = (await both({ advance: k })).head;
    await waitFor(() => seen.at(-1) === head, { timeoutMs: 15000, what: `block ${head} after the kill` });
  }
  assert.ok(consecutive(seen), `gap or repeat: ${seen}`);
  assert.equal(seen[0], 1001);
  assert.equal(seen.at(-1), 1010);
  // the operator is told the polls moved off the killed endpoint
  await waitFor(async () => (await events(s)).some((e) => e.kind === 'subscription_source_changed'),
    { what: 'the subscription_source_changed event' });
  const ev = (await events(s)).find((e) => e.kind === 'subscription_source_changed');
  assert.deepEqual([ev.network, ev.endpoint], ['eth', 'b']);
  assert.match(ev.reason, /polled through b, was a/);
  await provider.destroy();
});

test('eth_subscribe logs: every log once per (blockHash, logIndex), in block order; a replaced block\'s logs again with removed: true', async () => {
  const a = await fake('a', { args: ['--logs-per-block', '2'] });
  const s = await gateway([a]);
  const c = openWs(`ws://127.0.0.1:${s.port}/eth`);
  await c.opened;
  const filter = { address: '0x2222222222222222222222222222222222222222',
    topics: ['0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef'] };
  const sub = (await c.rpc('eth_subscribe', ['logs', filter], 1)).result;
  // ethers' provider.on(filter) subscribes the same way (its filter normalised to the same source)
  const provider = new WebSocketProvider(`ws://127.0.0.1:${s.port}/eth`, 1, { staticNetwork: true }); // a notification before ethers knows its network throws in ethers
  const viaEthers = [];
  await provider.on(filter, (log) => viaEthers.push(log));
  await waitMetric(s, /sluice_subscriptions\{kind="logs"\} 2\b/); // ethers subscribes in the background
  await sleep(3 * POLL_MS);
  assert.equal(c.notes(sub).length, 0, 'the head block\'s logs are not sent: the first block after it\'s are');
  await a.chain({ advance: 3 });
  await waitFor(() => c.notes(sub).length >= 6, { what: 'logs of 1001..1003' });
  await waitFor(() => viaEthers.length >= 6, { what: 'ethers got the logs of 1001..1003' });
  assert.deepEqual(viaEthers.slice(-6).map((l) => [l.blockNumber, l.index]),
    [[1001, 0], [1001, 1], [1002, 0], [1002, 1], [1003, 0], [1003, 1]]);
  await provider.destroy();
  await a.chain({ reorg: 1 });
  await waitFor(() => c.notes(sub).length >= 10, { what: 'the reorg\'s logs' });
  await sleep(3 * POLL_MS);
  const logs = c.notes(sub);
  assert.equal(logs.length, 10);
  const live = logs.slice(0, 6);
  assert.deepEqual(live.map((l) => num(l.blockNumber)), [1001, 1001, 1002, 1002, 1003, 1003]);
  assert.equal(new Set(live.map((l) => `${l.blockHash}/${l.logIndex}`)).size, 6);
  assert.ok(live.every((l) => l.removed === false));
  const [r1, r0, n0, n1] = logs.slice(6);
  assert.deepEqual([r1, r0].map((l) => [l.blockHash, l.logIndex, l.removed]),
    [[live[5].blockHash, live[5].logIndex, true], [live[4].blockHash, live[4].logIndex, true]]);
  assert.equal(num(n0.blockNumber), 1003);
  assert.notEqual(n0.blockHash, live[4].blockHash);
  assert.deepEqual([n0.logIndex, n1.logIndex, n0.removed], ['0x0', '0x1', false]);
  // 10 to the raw subscriber, and those ethers shared while it was subscribed (one source for both)
  await waitFor(async () => Number((await adminGet(s, '/metrics')).text.match(/sluice_subscription_logs_total (\d+)/)[1]) >= 16,
    { what: 'logs counted' });
  // a bad filter is refused at the call, the socket stays
  const bad = await c.rpc('eth_subscribe', ['logs', { address: '0x12' }], 2);
  assert.equal(bad.error.code, -32602);
  const pend = await c.rpc('eth_subscribe', ['newPendingTransactions'], 3);
  assert.equal(pend.error.code, -32601);
  assert.match(pend.error.message, /needs an endpoint with ws_url/);
  const other = await c.rpc('eth_subscribe', ['syncing'], 4);
  assert.equal(other.error.code, -32602);
  c.ws.close();
});

test('1,000 subscribers on 4 sockets share one source; unsubscribe; the source stops with its last subscriber', async () => {
  const a = await fake('a');
  const s = await gateway([a]);
  const [pid] = await workerPids(s.child.pid);
  const rss = () => Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)[1]);
  const socks = await Promise.all([0, 1, 2, 3].map(async () => { const c = openWs(`ws://127.0.0.1:${s.port}/eth`); await c.opened; return c; }));
  await sleep(200);
  const before = rss();
  const subs = [];
  for (let i = 0; i < 1000; i++) {
    subs.push(socks[i % 4].rpc('eth_subscribe', ['newHeads'], 100 + i));
    if (i % 100 === 99) await Promise.all(subs.slice(-100));
  }
  const ids = (await Promise.all(subs)).map((m) => m.result);
  assert.equal(new Set(ids).size, 1000);
  await sleep(3 * POLL_MS);
  const afterSubs = rss();
  await a.reset();
  const t0 = performance.now();
  const head = (await a.chain({ advance: 1 })).head;
  await waitFor(() => ids.every((id, i) => socks[i % 4].notes(id).some((h) => num(h.number) === head)),
    { what: 'every subscriber got the new head' });
  const delays = socks.map((c) => c.seen.find((m) => m.params && num(m.params.result.number) === head).at - t0);
  await sleep(5 * POLL_MS);
  const calls = (await a.stats()).methods.eth_getBlockByNumber || 0;
  // one source: a poll of the latest per interval (not 1,000 of them)
  assert.ok(calls <= 12, `eth_getBlockByNumber ${calls} times in ~${6 * POLL_MS} ms`);
  console.log(`# RSS of the worker: ${before} kB with 4 sockets, ${afterSubs} kB with 1,000 newHeads subscribers ` +
    `(${afterSubs - before} kB); head change to notification: ${Math.round(Math.min(...delays))}-${Math.round(Math.max(...delays))} ms ` +
    `(poll interval ${POLL_MS} ms); ${calls} upstream calls for 1,000 subscribers`);
  // an eth_unsubscribe notification (no id) is carried out, unanswered
  socks[2].ws.send(JSON.stringify({ jsonrpc: '2.0', method: 'eth_unsubscribe', params: [ids[2]] }));
  await waitMetric(s, /sluice_subscriptions\{kind="newHeads"\} 999\b/);
  // unsubscribe: true once, then false; only the socket's own ids
  assert.equal((await socks[0].rpc('eth_unsubscribe', [ids[0]], 1)).result, true);
  assert.equal((await socks[0].rpc('eth_unsubscribe', [ids[0]], 2)).result, false);
  assert.equal((await socks[0].rpc('eth_unsubscribe', [ids[1]], 3)).result, false); // socket 1's
  await waitMetric(s, /sluice_subscriptions\{kind="newHeads"\} 998\b/);
  assert.ok(!socks[2].seen.some((m) => m.id === null)); // nothing answered the notification
  // every socket closed: the source stops polling
  for (const c of socks) c.ws.close();
  await waitFor(async () => /sluice_subscriptions\{kind="newHeads"\} 0\b/.test((await adminGet(s, '/metrics')).text),
    { what: 'subscriptions gone' });
  await a.reset();
  await sleep(5 * POLL_MS);
  assert.equal((await a.stats()).methods.eth_getBlockByNumber || 0, 0);
});

test('a subscriber that does not read its notifications is closed with 1008; the others keep receiving', async () => {
  const a = await fake('a');
  // 1 MiB: a block's 1,000 notifications (~700 kB) fit; the bound is reached once the kernel's
  // buffers are full too, after a few blocks not read
  const s = await gateway([a], { server: { ws_max_queued_bytes: 1 << 20 } });
  const slow = openWs(`ws://127.0.0.1:${s.port}/eth`), other = openWs(`ws://127.0.0.1:${s.port}/eth`);
  await slow.opened; await other.opened;
  const closed = new Promise((r) => slow.ws.on('close', (code) => r(code)));
  for (let k = 0; k < 10; k++)
    await Promise.all(Array.from({ length: 100 }, (_, i) => slow.rpc('eth_subscribe', ['newHeads'], 100 * k + i + 1)));
  const sub = (await other.rpc('eth_subscribe', ['newHeads'], 1)).result; // joins the source: from the next head on
  await sleep(3 * POLL_MS); // the head they found is not sent (geth's): the next ones are
  slow.ws._socket.pause(); // reads nothing from now on
  let head = 1000;
  await waitFor(async () => {
    head = (await a.chain({ advance: 1 })).head;
    await waitFor(() => other.notes(sub).some((h) => num(h.number) === head), { what: `block ${head}` });
    return /sluice_websocket_closed_total\{reason="slow_reader"\} 1\b/.test((await adminGet(s, '/metrics')).text);
  }, { timeoutMs: 30000, intervalMs: 1, what: 'the slow subscriber closed' });
  slow.ws._socket.resume();
  assert.equal(await closed, 1008);
  head = (await a.chain({ advance: 2 })).head;
  await waitFor(() => other.notes(sub).some((h) => num(h.number) === head), { what: `block ${head}` });
  const ns = other.notes(sub).map((h) => num(h.number));
  assert.deepEqual(ns, Array.from({ length: head - 1000 }, (_, i) => 1001 + i));
  await waitMetric(s, /sluice_subscriptions\{kind="newHeads"\} 1\b/); // the slow one's 1,000 ended with its socket
  other.ws.close();
});

// An upstream with a WebSocket (ws_url): HTTP JSON-RPC for blocks by number, and a newHeads stream
// pushed when the test advances its chain.
async function wsUpstream() {
  const st = { head: 1000 };
  const hex = (n) => '0x' + n.toString(16);
  const hashOf = (n) => '0x' + n.toString(16).padStart(64, '0');
  const block = (n) => ({ number: hex(n), hash: hashOf(n), parentHash: hashOf(n - 1), timestamp: hex(1700000000 + n) });
  const answer = (m) => {
    if (m.method === 'eth_chainId') return '0x1';
    if (m.method === 'eth_blockNumber') return hex(st.head);
    if (m.method !== 'eth_getBlockByNumber') return null;
    const n = m.params[0] === 'latest' ? st.head : Number(m.params[0]);
    return n <= st.head ? block(n) : null;
  };
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      const m = JSON.parse(body);
      const out = Array.isArray(m) ? m.map((x) => ({ jsonrpc: '2.0', id: x.id, result: answer(x) }))
        : { jsonrpc: '2.0', id: m.id, result: answer(m) };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(out));
    });
  });
  const socks = new Set();
  new WebSocketServer({ server }).on('connection', (ws) => {
    ws.on('error', () => {});
    ws.on('close', () => socks.delete(ws));
    ws.on('message', (d) => {
      const m = JSON.parse(String(d));
      if (m.method === 'eth_subscribe') socks.add(ws);
      ws.send(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: m.method === 'eth_subscribe' ? '0x1234' : answer(m) }));
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const port = server.address().port;
  started.push({ stop: () => { for (const s of socks) s.terminate(); return new Promise((r) => server.close(r)); } });
  return {
    url: `http://127.0.0.1:${port}`, wsUrl: `ws://127.0.0.1:${port}/`, socks,
    advance(n) {
      st.head += n;
      const note = JSON.stringify({ jsonrpc: '2.0', method: 'eth_subscription', params: { subscription: '0x1234', result: block(st.head) } });
      for (const s of socks) s.send(note);
      return st.head;
    },
  };
}

test('with an endpoint\'s ws_url, a head from its stream wakes the polls: notifications at once, not at the interval', async () => {
  const up = await wsUpstream();
  const s = await startSluice({ workers: 1, networks: { eth: { lines: ['ranking: { probe_interval_ms: 60000 }'],
    endpoints: [{ id: 'a', url: up.url, ws_url: `"${up.wsUrl}"` }] } } });
  started.push(s);
  await waitFor(() => up.socks.size === 1, { what: 'sluice subscribed upstream' });
  const c = openWs(`ws://127.0.0.1:${s.port}/eth`);
  await c.opened;
  const sub = (await c.rpc('eth_subscribe', ['newHeads'], 1)).result;
  await sleep(300); // its first fetch, at once: the head it found (not sent)
  const delays = [];
  for (const k of [1, 3, 1]) {
    const t0 = performance.now();
    const head = up.advance(k);
    const m = await c.next((x) => x.params && num(x.params.result.number) === head, 3000);
    delays.push(m.at - t0);
  }
  assert.deepEqual(c.notes(sub).map((h) => num(h.number)), [1001, 1002, 1003, 1004, 1005]);
  assert.ok(Math.max(...delays) < 1000, `delays ${delays} (the poll interval is 60 s)`);
  console.log(`# with ws_url: head pushed upstream to notification ${delays.map(Math.round).join(', ')} ms (poll interval 60 s)`);
  c.ws.close();
});

test('bounds: subscriptions per connection and per identity get -32005', async () => {
  const a = await fake('a');
  const s = await gateway([a], { server: { ws_max_subscriptions_per_connection: 3, ws_max_subscriptions_per_identity: 5 } });
  const c1 = openWs(`ws://127.0.0.1:${s.port}/eth`), c2 = openWs(`ws://127.0.0.1:${s.port}/eth`);
  await c1.opened; await c2.opened;
  const mine = [];
  for (let i = 1; i <= 3; i++) mine.push((await c1.rpc('eth_subscribe', ['newHeads'], i)).result);
  assert.ok(mine.every((id) => /^0x/.test(id)));
  const over = await c1.rpc('eth_subscribe', ['newHeads'], 4);
  assert.equal(over.error.code, -32005);
  assert.match(over.error.message, /ws_max_subscriptions_per_connection/);
  for (let i = 1; i <= 2; i++) assert.ok((await c2.rpc('eth_subscribe', ['newHeads'], i)).result);
  const over2 = await c2.rpc('eth_subscribe', ['newHeads'], 3);
  assert.equal(over2.error.code, -32005);
  assert.match(over2.error.message, /ws_max_subscriptions_per_identity/);
  // one ends: room again
  assert.equal((await c1.rpc('eth_unsubscribe', [mine[0]], 5)).result, true);
  assert.ok((await c2.rpc('eth_subscribe', ['newHeads'], 6)).result);
  await waitMetric(s, /sluice_subscriptions_refused_total 2\b/);
  c1.ws.close(); c2.ws.close();
});

test('subscription calls are charged to the caller\'s rate limit, one standard call each', async () => {
  const a = await fake('a');
  const s = await gateway([a], { extra: 'tiers: { anonymous: { per_second: 3 } }' });
  const c = openWs(`ws://127.0.0.1:${s.port}/eth`);
  await c.opened;
  for (let i = 1; i <= 6; i++) c.ws.send(JSON.stringify(call('eth_subscribe', ['newHeads'], i)));
  const got = [];
  for (let i = 1; i <= 6; i++) got.push(await c.next((m) => m.id === i));
  const refused = got.filter((m) => m.error);
  assert.equal(refused.length, 3, JSON.stringify(got));
  for (const m of refused) {
    assert.equal(m.error.code, -32005);
    assert.equal(m.error.data.scope, 'client');
  }
  c.ws.close();
});

// A head more than 128 heights on: sent from the head, the heights between counted as skipped
test('a gap wider than the backfill bound goes on from the head and is counted', async () => {
  const a = await fake('a');
  const s = await gateway([a]);
  const c = openWs(`ws://127.0.0.1:${s.port}/eth`);
  await c.opened;
  const sub = (await c.rpc('eth_subscribe', ['newHeads'], 1)).result;
  await sleep(3 * POLL_MS); // the head it found, not sent
  await a.chain({ advance: 2 });
  await waitFor(() => c.notes(sub).length >= 2, { what: '1001, 1002' });
  await a.chain({ advance: 200 });
  await waitFor(() => c.notes(sub).some((h) => num(h.number) === 1202), { what: '1202' });
  await a.chain({ advance: 1 });
  await waitFor(() => c.notes(sub).some((h) => num(h.number) === 1203), { what: '1203' });
  assert.deepEqual(c.notes(sub).map((h) => num(h.number)), [1001, 1002, 1202, 1203]);
  await waitMetric(s, /sluice_subscription_heights_total\{how="skipped"\} 199\b/);
  await waitMetric(s, /sluice_subscription_heights_total\{how="backfilled"\} 1\b/); // 1001 (1002 was the head)
  assert.match(s.logs(), /newHeads went on from the head 1202, 199 heights behind the last sent were skipped/);
  c.ws.close();
});

test('Solana: onSlotChange through the derived port + 1 URL; signatureSubscribe notifies once and ends; onAccountChange', async () => {
  const a = await fake('a', { chain: 'solana' });
  const s = await gateway([a], { chain: 'solana', net: 'solana' });
  const connection = new Connection(`http://127.0.0.1:${s.port}/solana`, 'confirmed');
  assert.equal(connection._rpcWsEndpoint, `ws://127.0.0.1:${s.port + 1}/solana`);
  const slots = [];
  const id = connection.onSlotChange((info) => slots.push(info));
  await waitFor(() => slots.length >= 1, { what: 'the first slot' });
  await a.chain({ advance: 3 });
  await waitFor(() => slots.at(-1).slot === 1003, { what: 'slot 1003' });
  const ns = slots.map((x) => x.slot);
  assert.ok(consecutive(ns), `slots ${ns}`);
  assert.ok(slots.every((x) => x.parent === x.slot - 1 && x.root <= x.slot));
  await connection.removeSlotChangeListener(id);

  const c = openWs(`ws://127.0.0.1:${s.wsPort}/solana`);
  await c.opened;
  // the fake's signature of a transaction it cannot decode: base58 of SHA-512 of the text
  const tx = 'not a transaction';
  const sig = bs58.encode(createHash('sha512').update(tx).digest());
  const sub = (await c.rpc('signatureSubscribe', [sig, { commitment: 'confirmed' }], 1)).result;
  assert.equal(typeof sub, 'number');
  await sleep(3 * POLL_MS);
  assert.equal(c.notes(sub).length, 0); // not landed yet
  const sent = await post(s.url('solana'), call('sendTransaction', [tx]));
  assert.equal(sent.json.result, sig);
  const got = await c.next((m) => m.method === 'signatureNotification');
  assert.equal(got.params.subscription, sub);
  assert.deepEqual(got.params.result.value, { err: null });
  assert.equal(got.params.result.context.slot, 1003);
  await sleep(3 * POLL_MS);
  assert.equal(c.notes(sub).length, 1); // once, then the subscription is over
  assert.equal((await c.rpc('signatureUnsubscribe', [sub], 2)).result, false);
  // web3.js confirms the next one (it subscribes, and the fake has it at once)
  const tx2 = 'another one';
  const sig2 = (await post(s.url('solana'), call('sendTransaction', [tx2]))).json.result;
  const bh = await connection.getLatestBlockhash();
  const conf = await connection.confirmTransaction({ signature: sig2, ...bh }, 'confirmed');
  assert.equal(conf.value.err, null);
  // accountSubscribe: the fake's Clock sysvar holds the slot; a notification when it changes
  const clock = new PublicKey('SysvarC1ock11111111111111111111111111111111');
  const changes = [];
  const acc = connection.onAccountChange(clock, (info, ctx) => changes.push({ slot: ctx.slot, data: info.data }), 'confirmed');
  await waitMetric(s, /sluice_subscriptions\{kind="account"\} 1\b/);
  await sleep(3 * POLL_MS);
  assert.equal(changes.length, 0); // where it stands is not a change
  for (const k of [2, 1]) {
    const head = (await a.chain({ advance: k })).head;
    await waitFor(() => changes.length && changes.at(-1).slot === head, { what: `the clock at ${head}` });
    assert.equal(changes.at(-1).data.readBigUInt64LE(0), BigInt(head));
  }
  await sleep(3 * POLL_MS);
  assert.deepEqual(changes.map((x) => x.slot), [1005, 1006]);
  await connection.removeAccountChangeListener(acc);
  c.ws.close();
  // web3.js keeps its socket and reconnects forever: not past this test
  connection._rpcWebSocket.reconnect = false;
  connection._rpcWebSocket.close();
});
