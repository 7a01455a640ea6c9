// A subscription outlives its socket (sub/sub_resume.c, server.ws_resume):
// a keyed caller whose socket is cut (by a TCP proxy between it and sluice)
// and who sends the same eth_subscribe again within server.ws_resume_s, on
// any worker, goes on from where it was: every height and every log once,
// in order, across both sockets (raw sockets, viem's webSocket() with its
// own reconnect, ethers with a new provider). A reorg in the gap is walked
// back (the replaced blocks' logs told removed, fetched by the hashes held);
// once caught up, a resumed subscription polls no more than before.
// Past the window it starts from the head
// and the expiry is counted; an anonymous caller is not held under the
// default (keyed); a reload closes the sockets (1001) and the positions,
// kept in LMDB, survive it. Real processes: sluice with two workers and a
// fake provider whose chain moves on request.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { startFake, startSluice, sleep, waitFor, adminGet, adminPost } from '../lib/harness.mjs';
import { openWs, waitMetric } from '../lib/wsclient.mjs';
import { startFaultProxy } from '../lib/faultproxy.mjs';
import { createPublicClient, webSocket } from 'viem';
import { WebSocketProvider } from 'ethers';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const POLL_MS = 100;
const KEY = 'sl_resumekey0123456789abcdef0123';
const num = (h) => Number(BigInt(h));
const sha = (k) => createHash('sha256').update(k).digest('hex');

async function fake() {
  const f = await startFake({ name: 'a', args: ['--block', '1000', '--block-time-ms', '0', '--logs-per-block', '2'] });
  started.push(f);
  const post = async (p, body) => (await fetch(`${f.url}${p}`, { method: 'POST', body: JSON.stringify(body) })).json();
  f.chain = (body) => post('/_control/chain', body);
  f.calls = async (m) => (await (await fetch(`${f.url}/_control/stats`)).json()).methods?.[m] ?? 0;
  return f;
}

async function gateway(f, server = {}, workers = 2) {
  const s = await startSluice({ workers, server, networks: { eth: { lines: [`ranking: { probe_interval_ms: ${POLL_MS} }`],
    endpoints: [{ id: 'a', url: f.url }] } },
  extra: `tiers: { t: { per_second: 1000 } }\nkeys:\n  - { sha256: "${sha(KEY)}", tier: t, name: app }` });
  started.push(s);
  return s;
}

// A socket (through port, with the key or not) subscribed to newHeads and logs.
async function connect(port, keyed = true) {
  const c = openWs(`ws://127.0.0.1:${port}/eth${keyed ? `/${KEY}` : ''}`);
  await c.opened;
  c.sentAt = performance.now();
  const heads = (await c.rpc('eth_subscribe', ['newHeads'], 1)).result;
  const logs = (await c.rpc('eth_subscribe', ['logs', {}], 2)).result;
  assert.match(heads, /^0x[0-9a-f]{32}$/);
  assert.match(logs, /^0x[0-9a-f]{32}$/);
  return { c, heads: () => c.notes(heads).map((h) => num(h.number)), logs: () => c.notes(logs), headsId: heads };
}

const range = (from, to) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

// every log once, in order: two per block from `from` to `to`, none twice, none removed
function assertLogsOnce(logs, from, to) {
  assert.ok(logs.every((l) => l.removed === false), 'no log removed');
  const heights = logs.map((l) => num(l.blockNumber));
  assert.deepEqual(heights, range(from, to).flatMap((h) => [h, h]), `logs of ${heights}`);
  assert.equal(new Set(logs.map((l) => `${l.blockHash}/${l.logIndex}`)).size, logs.length, 'a log twice');
}

// the subscriptions' gauge of the worker(s) is back to zero: the closed socket's subscriptions are held
const closed = (s) => waitMetric(s, /sluice_subscriptions\{kind="newHeads"\} 0\b/);

test('a keyed caller cut by a proxy, 3 blocks mined, back within 5 s: every height and log once, in order', async () => {
  const f = await fake();
  const s = await gateway(f);
  const proxy = await startFaultProxy(`http://127.0.0.1:${s.port}`);
  started.push({ stop: () => proxy.close() });
  const one = await connect(proxy.port);
  await f.chain({ advance: 2 });
  await waitFor(() => one.heads().length >= 2 && one.logs().length >= 4, { what: 'the first two blocks' });
  proxy.kill(); // both sockets reset: sluice sees its client gone
  await closed(s);
  await f.chain({ advance: 3 });
  await sleep(3 * POLL_MS);
  proxy.resume();
  const two = await connect(proxy.port);
  await waitFor(() => two.heads().length >= 3 && two.logs().length >= 6, { what: 'the 3 blocks mined while away' });
  const firstAt = two.c.seen.find((m) => m.params)?.at;
  await f.chain({ advance: 1 });
  await waitFor(() => two.heads().length >= 4 && two.logs().length >= 8, { what: 'the next block, live' });
  await sleep(5 * POLL_MS);
  const heads = [...one.heads(), ...two.heads()];
  assert.deepEqual(heads, range(heads[0], heads[0] + 5), `heights ${heads}`);
  assertLogsOnce([...one.logs(), ...two.logs()], heads[0], heads[0] + 5);
  await waitMetric(s, /sluice_subscription_resumes_total\{outcome="resumed"\} 2\b/);
  console.log(`# resumed: ${two.heads().length - 1} heights (3 missed) backfilled; the first backfilled notification ` +
    `${(firstAt - two.c.sentAt).toFixed(1)} ms after the reconnected socket's first subscribe`);
  two.c.ws.close();
});

test('viem over webSocket(), cut by the proxy, reconnects and subscribes again itself: every block number and log once', async () => {
  const f = await fake();
  const s = await gateway(f);
  const proxy = await startFaultProxy(`http://127.0.0.1:${s.port}`);
  started.push({ stop: () => proxy.close() });
  const viem = createPublicClient({ transport: webSocket(`${proxy.wsUrl}/eth/${KEY}`, { reconnect: { delay: 300, attempts: 20 } }) });
  const numbers = [], logs = [];
  const unwatch = viem.watchBlockNumber({ onBlockNumber: (n) => numbers.push(Number(n)), onError: () => {} });
  const unwatchLogs = viem.watchEvent({ onLogs: (ls) => logs.push(...ls), onError: () => {} });
  await waitFor(() => s.accessLines().filter((l) => l.methods?.[0] === 'eth_subscribe').length >= 2, { what: 'viem subscribed' });
  await f.chain({ advance: 2 });
  await waitFor(() => numbers.length >= 2 && logs.length >= 4, { what: 'the first two blocks' });
  proxy.kill();
  await closed(s);
  await f.chain({ advance: 3 });
  proxy.resume();
  await waitFor(() => numbers.length >= 5 && logs.length >= 10, { timeoutMs: 20000, what: 'the 3 blocks mined while away' });
  await f.chain({ advance: 1 });
  await waitFor(() => numbers.length >= 6 && logs.length >= 12, { what: 'the next block, live' });
  await sleep(5 * POLL_MS);
  assert.deepEqual(numbers, range(numbers[0], numbers[0] + 5), `numbers ${numbers}`);
  const heights = logs.map((l) => Number(l.blockNumber));
  assert.deepEqual(heights, range(numbers[0], numbers[0] + 5).flatMap((h) => [h, h]), `logs of ${heights}`);
  assert.equal(new Set(logs.map((l) => `${l.blockHash}/${l.logIndex}`)).size, logs.length, 'a log twice');
  await waitMetric(s, /sluice_subscription_resumes_total\{outcome="resumed"\} 2\b/);
  unwatch();
  unwatchLogs();
  (await viem.transport.getRpcClient()).close();
});

test('ethers on(\'block\'), its socket cut by the proxy, a new provider subscribing again: every block number once', async () => {
  const f = await fake();
  const s = await gateway(f);
  const proxy = await startFaultProxy(`http://127.0.0.1:${s.port}`);
  started.push({ stop: () => proxy.close() });
  const url = `${proxy.wsUrl}/eth/${KEY}`;
  const blocks = [];
  const first = new WebSocketProvider(url, 1, { staticNetwork: true });
  await first.on('block', (n) => blocks.push(n));
  await waitFor(() => s.accessLines().some((l) => l.methods?.[0] === 'eth_subscribe'), { what: 'ethers subscribed' });
  await f.chain({ advance: 2 });
  await waitFor(() => blocks.length >= 2, { what: 'the first two blocks' });
  proxy.kill();
  await closed(s);
  first.destroy();
  await f.chain({ advance: 3 });
  proxy.resume();
  // ethers v6 does not reconnect by itself: the app makes a new provider and listens again
  const second = new WebSocketProvider(url, 1, { staticNetwork: true });
  await second.on('block', (n) => blocks.push(n));
  await waitFor(() => blocks.length >= 5, { what: 'the 3 blocks mined while away' });
  await f.chain({ advance: 1 });
  await waitFor(() => blocks.length >= 6, { what: 'the next block, live' });
  await sleep(5 * POLL_MS);
  assert.deepEqual(blocks, range(blocks[0], blocks[0] + 5), `blocks ${blocks}`);
  second.destroy();
});

test('once caught up, the resumed subscriptions follow the head through the worker\'s one follower (no poll more than before)', async () => {
  const f = await fake();
  const s = await gateway(f, {}, 1);
  const rate = async () => { const n0 = await f.calls('eth_getBlockByNumber'); await sleep(2000); return (await f.calls('eth_getBlockByNumber')) - n0; };
  const one = await connect(s.port);
  await f.chain({ advance: 1 });
  await waitFor(() => one.heads().length >= 1 && one.logs().length >= 2, { what: 'a first block' });
  const before = await rate();
  one.c.ws.close();
  await closed(s);
  await f.chain({ advance: 3 });
  const two = await connect(s.port);
  await waitFor(() => two.heads().length >= 3 && two.logs().length >= 6, { what: 'the blocks missed' });
  await sleep(10 * POLL_MS);
  const afterResume = await rate();
  console.log(`# eth_getBlockByNumber over 2 s: ${before} before the cut, ${afterResume} after the resume`);
  assert.ok(afterResume <= before * 1.5 + 2, `${afterResume} polls after, ${before} before: a follower per resumed subscription left running`);
  two.c.ws.close();
});

test('a reorg during the gap: newHeads walks back over the replaced heights; logs tell the replaced blocks\' removed, then the new branch\'s', async () => {
  const f = await fake();
  const s = await gateway(f);
  const one = await connect(s.port);
  await f.chain({ advance: 3 });
  await waitFor(() => one.heads().length >= 3 && one.logs().length >= 6, { what: 'three blocks' });
  one.c.ws.close();
  await closed(s);
  await f.chain({ reorg: 2 }); // replaces the held block and the one below it, whose logs went out on the first socket
  await f.chain({ advance: 1 });
  const two = await connect(s.port);
  const first = one.heads()[0];
  await waitFor(() => two.heads().length >= 3, { what: 'the new branch' });
  assert.deepEqual(two.heads(), [first + 1, first + 2, first + 3], 'the replaced heights again, then the next');
  const oldHashes = one.c.notes(one.headsId).map((h) => h.hash);
  const newHashes = two.c.notes(two.headsId).map((h) => h.hash);
  assert.notEqual(newHashes[0], oldHashes[1], 'a new header for a height sent');
  assert.equal(two.c.notes(two.headsId)[0].parentHash, oldHashes[0], 'the fork is above the first block');
  // as a node tells it: the replaced blocks' logs again with removed: true, newest first, then the new branch's
  await waitFor(() => two.logs().length >= 10, { what: 'the replaced logs and the new branch\'s' });
  await sleep(5 * POLL_MS);
  const logs = two.logs();
  assert.equal(logs.length, 10, `logs ${logs.map((l) => `${num(l.blockNumber)}${l.removed ? 'r' : ''}`)}`);
  const removed = logs.slice(0, 4), added = logs.slice(4);
  assert.ok(removed.every((l) => l.removed === true), 'the first four told removed');
  assert.deepEqual(removed.map((l) => num(l.blockNumber)), [first + 2, first + 2, first + 1, first + 1], 'newest block first');
  const sentBefore = one.logs().filter((l) => num(l.blockNumber) > first);
  assert.deepEqual(removed.map((l) => `${l.blockHash}/${l.logIndex}`).sort(),
    sentBefore.map((l) => `${l.blockHash}/${l.logIndex}`).sort(), 'the logs sent before on the replaced blocks, each once');
  assert.deepEqual(removed.map((l) => l.blockHash).filter((h, i, a) => a.indexOf(h) === i), [oldHashes[2], oldHashes[1]]);
  assertLogsOnce(added, first + 1, first + 3);
  assert.deepEqual(added.map((l) => l.blockHash).filter((h, i, a) => a.indexOf(h) === i), newHashes, 'the new branch\'s blocks');
  assert.equal(two.c.seen.filter((m) => m.error && m.id === null).length, 0, 'the subscription goes on');
  await f.chain({ advance: 1 });
  await waitFor(() => two.logs().length >= 12, { what: 'the next block, live' });
  assertLogsOnce(two.logs().slice(4), first + 1, first + 4);
  two.c.ws.close();
});

test('a reorg during the gap, the upstream no longer knowing the replaced blocks: logs end naming the first block replaced', async () => {
  const f = await fake();
  const s = await gateway(f);
  const one = await connect(s.port);
  await f.chain({ advance: 3 });
  await waitFor(() => one.heads().length >= 3 && one.logs().length >= 6, { what: 'three blocks' });
  one.c.ws.close();
  await closed(s);
  await f.chain({ reorg: 2, forget: true }); // a pruned node: eth_getLogs {blockHash} of a replaced block is unknown
  const two = await connect(s.port);
  const first = one.heads()[0];
  await waitFor(() => two.heads().length >= 2, { what: 'the new branch' });
  assert.deepEqual(two.heads(), [first + 1, first + 2], 'the replaced heights again');
  const err = await two.c.next((m) => m.error && m.id === null);
  assert.equal(err.error.code, -32005);
  assert.equal(err.error.data.reason, 'reorg');
  assert.equal(num(err.error.data.block), first + 1);
  assert.deepEqual(two.logs(), [], 'no log of the new branch before its replaced logs could be told');
  two.c.ws.close();
});

test('gone longer than server.ws_resume_s: starts from the head, the expiry counted', async () => {
  const f = await fake();
  const s = await gateway(f, { ws_resume_s: 1 });
  const one = await connect(s.port);
  await f.chain({ advance: 1 });
  await waitFor(() => one.heads().length >= 1, { what: 'a first block' });
  one.c.ws.close();
  await closed(s);
  await f.chain({ advance: 3 });
  await sleep(2500);
  const two = await connect(s.port);
  await sleep(5 * POLL_MS);
  assert.deepEqual(two.heads(), [], 'nothing backfilled');
  const head = one.heads()[0] + 3;
  await f.chain({ advance: 1 });
  await waitFor(() => two.heads().length >= 1 && two.logs().length >= 2, { what: 'the next block' });
  assert.deepEqual(two.heads(), [head + 1]);
  assertLogsOnce(two.logs(), head + 1, head + 1);
  await waitMetric(s, /sluice_subscription_resumes_total\{outcome="expired"\} 2\b/);
  assert.match((await adminGet(s, '/metrics')).text, /sluice_subscription_resumes_total\{outcome="resumed"\} 0\b/);
  two.c.ws.close();
});

test('a gap of 120 blocks, near the backfill bound: every height and log once, in order', async () => {
  const f = await fake();
  const s = await gateway(f);
  const one = await connect(s.port);
  await f.chain({ advance: 1 });
  await waitFor(() => one.heads().length >= 1 && one.logs().length >= 2, { what: 'a first block' });
  one.c.ws.close();
  await closed(s);
  await f.chain({ advance: 120 });
  const two = await connect(s.port);
  await waitFor(() => two.heads().length >= 120 && two.logs().length >= 240, { timeoutMs: 30000, what: 'the 120 blocks missed' });
  const took = two.c.seen.filter((m) => m.params).at(-1).at - two.c.sentAt;
  await f.chain({ advance: 1 });
  await waitFor(() => two.heads().length >= 121 && two.logs().length >= 242, { what: 'the next block, live' });
  await sleep(5 * POLL_MS);
  const first = one.heads()[0];
  assert.deepEqual([...one.heads(), ...two.heads()], range(first, first + 121));
  assertLogsOnce([...one.logs(), ...two.logs()], first, first + 121);
  console.log(`# a gap of 120 blocks resumed: 120 headers and 240 logs backfilled in ${took.toFixed(0)} ms`);
  two.c.ws.close();
});

test('more than 128 heights behind the head: starts from the head, counted too_far', async () => {
  const f = await fake();
  const s = await gateway(f);
  const one = await connect(s.port);
  await f.chain({ advance: 1 });
  await waitFor(() => one.heads().length >= 1 && one.logs().length >= 2, { what: 'a first block' });
  one.c.ws.close();
  await closed(s);
  await f.chain({ advance: 200 });
  const head = one.heads()[0] + 201;
  // the chain view learns the head from the probes (the workers read it a moment later)
  await waitFor(async () => (await adminGet(s, '/admin/endpoints')).json.every((e) => e.head >= head - 1),
    { what: 'the probes at the new head' });
  await sleep(3 * POLL_MS);
  const two = await connect(s.port);
  await f.chain({ advance: 1 });
  await waitFor(() => two.heads().length >= 1 && two.logs().length >= 2, { what: 'the next block' });
  await sleep(5 * POLL_MS);
  assert.deepEqual(two.heads(), [head]);
  assertLogsOnce(two.logs(), head, head);
  await waitMetric(s, /sluice_subscription_resumes_total\{outcome="too_far"\} 2\b/);
  assert.match(s.logs(), /held at block \d+ is more than 128 heights behind the head: it starts from the head/);
  two.c.ws.close();
});

test('an anonymous caller is not held under the default (keyed); server.ws_resume: all holds it', async () => {
  for (const mode of ['keyed', 'all']) {
    const f = await fake();
    const s = await gateway(f, mode === 'all' ? { ws_resume: 'all' } : {});
    const one = await connect(s.port, false);
    await f.chain({ advance: 1 });
    await waitFor(() => one.heads().length >= 1 && one.logs().length >= 2, { what: 'a first block' });
    one.c.ws.close();
    await closed(s);
    await f.chain({ advance: 2 });
    await sleep(3 * POLL_MS);
    const two = await connect(s.port, false);
    await f.chain({ advance: 1 });
    const first = one.heads()[0];
    if (mode === 'keyed') {
      await waitFor(() => two.heads().length >= 1, { what: 'the next block' });
      await sleep(5 * POLL_MS);
      assert.deepEqual(two.heads(), [first + 3], 'from the head: the 2 blocks between are not told');
      await waitMetric(s, /sluice_subscription_resumes_total\{outcome="resumed"\} 0\b/);
    } else {
      await waitFor(() => two.heads().length >= 3 && two.logs().length >= 6, { what: 'the blocks missed, then the next' });
      assert.deepEqual(two.heads(), range(first + 1, first + 3));
      assertLogsOnce(two.logs(), first + 1, first + 3);
      await waitMetric(s, /sluice_subscription_resumes_total\{outcome="resumed"\} 2\b/);
    }
    two.c.ws.close();
  }
});

test('a reload mid-stream (sockets closed with 1001): the caller resumes on the new workers', async () => {
  const f = await fake();
  const s = await gateway(f);
  const one = await connect(s.port);
  const closeCode = new Promise((r) => one.c.ws.on('close', (code) => r(code)));
  await f.chain({ advance: 1 });
  await waitFor(() => one.heads().length >= 1 && one.logs().length >= 2, { what: 'a first block' });
  assert.equal((await adminPost(s, '/admin/reload')).status, 200);
  assert.equal(await closeCode, 1001);
  await f.chain({ advance: 2 });
  await sleep(3 * POLL_MS);
  const two = await waitFor(async () => { try { return await connect(s.port); } catch { return null; } }, { what: 'the new workers' });
  await f.chain({ advance: 1 });
  await waitFor(() => two.heads().length >= 3 && two.logs().length >= 6, { what: 'the blocks missed, then the next' });
  await sleep(5 * POLL_MS);
  const first = one.heads()[0];
  assert.deepEqual([...one.heads(), ...two.heads()], range(first, first + 3));
  assertLogsOnce([...one.logs(), ...two.logs()], first, first + 3);
  two.c.ws.close();
});
