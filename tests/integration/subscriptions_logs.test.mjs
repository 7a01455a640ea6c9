// eth_subscribe("logs"): every log once, in order, or an error notification
// naming the block (sub/sub_eth.c). Real processes: sluice and fake
// providers whose chain moves, whose eth_getLogs fails for a while, and
// which reorg on request. A block's logs are asked again with backoff while
// it is canonical, within server.ws_logs_retry_s; past it the subscription
// ends with -32005 naming the block, a log line and
// sluice_subscription_logs_skipped_total, and the socket's other
// subscriptions go on. A reorg is told in full (every block undone, newest
// first, then the new branch), or, deeper than the blocks followed, ends
// the subscription the same way. The shared fetch (past 4 filters) is
// retried, not fanned out per filter.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { startFake, startSluice, sleep, waitFor, adminGet } from '../lib/harness.mjs';
import { openWs, waitMetric } from '../lib/wsclient.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const POLL_MS = 100;
const num = (h) => Number(BigInt(h));

async function fake(name, args) {
  const f = await startFake({ name, args: ['--block', '1000', '--logs-per-block', '1', ...args] });
  started.push(f);
  const post = async (p, body) => (await fetch(`${f.url}${p}`, { method: 'POST', body: JSON.stringify(body) })).json();
  f.chain = (body) => post('/_control/chain', body);
  f.mode = (body) => post('/_control/mode', body);
  f.stats = async () => (await fetch(`${f.url}/_control/stats`)).json();
  return f;
}

async function gateway(fakes, server = {}) {
  const s = await startSluice({ workers: 1, server, networks: { eth: { lines: [`ranking: { probe_interval_ms: ${POLL_MS} }`],
    endpoints: fakes.map((f) => ({ id: f.name, url: f.url })) } } });
  started.push(s);
  return s;
}

async function subscribe(s, filter = {}) {
  const c = openWs(`ws://127.0.0.1:${s.port}/eth`);
  await c.opened;
  const sub = (await c.rpc('eth_subscribe', ['logs', filter], 1)).result;
  assert.match(sub, /^0x[0-9a-f]{32}$/);
  c.errors = () => c.seen.filter((m) => m.error && m.error.data && m.error.data.subscription === sub);
  return { c, sub };
}

// the live logs (removed: false) of a subscription: once per height, in order, from `from` to `to`
function assertOnceInOrder(logs, from, to) {
  const heights = logs.map((l) => num(l.blockNumber));
  assert.deepEqual(heights, Array.from({ length: to - from + 1 }, (_, i) => from + i), `heights ${heights}`);
  assert.equal(new Set(logs.map((l) => `${l.blockHash}/${l.logIndex}`)).size, logs.length);
}

// eth_getLogs fails for outageMs while the chain moves a block every blockMs: every log once, none lost
async function outage(blockMs, outageMs) {
  const a = await fake('a', ['--block-time-ms', String(blockMs)]);
  const s = await gateway([a]);
  const { c, sub } = await subscribe(s);
  await waitFor(() => c.notes(sub).length >= 2, { timeoutMs: 10 * blockMs + 5000, what: 'the first logs' });
  await a.mode({ mode: 'rpc_error', method: 'eth_getLogs', code: -32000, message: 'internal error' });
  const failedAt = (await a.stats()).head;
  await sleep(outageMs);
  await a.mode({ mode: 'ok' });
  const head = (await a.stats()).head;
  await waitFor(() => c.notes(sub).some((l) => num(l.blockNumber) >= head), { timeoutMs: 30000, what: `the logs of ${head}` });
  const logs = c.notes(sub);
  assert.ok(logs.every((l) => l.removed === false));
  assertOnceInOrder(logs, num(logs[0].blockNumber), num(logs.at(-1).blockNumber));
  assert.ok(num(logs[0].blockNumber) < failedAt && num(logs.at(-1).blockNumber) >= head);
  assert.deepEqual(c.errors(), []);
  const m = (await adminGet(s, '/metrics')).text;
  assert.match(m, /sluice_subscription_logs_skipped_total 0\b/);
  console.log(`# eth_getLogs failing ${outageMs / 1000} s at ${blockMs} ms blocks: ${head - failedAt} blocks' logs ` +
    `waited, ${logs.length} logs of ${num(logs[0].blockNumber)}..${num(logs.at(-1).blockNumber)} once each`);
  c.ws.close();
}

test('eth_getLogs failing 15 s at 400 ms blocks: every log once, in order', async () => {
  await outage(400, 15000);
});

test('eth_getLogs failing 60 s at 1 s blocks: every log once, in order (server.ws_logs_retry_s 120)', { timeout: 170000 }, async () => {
  await outage(1000, 60000);
});

// a frozen chain, a socket with a logs and a newHeads subscription, both told 1001 and 1002
async function logsAndHeads(server = {}) {
  const a = await fake('a', ['--block-time-ms', '0']);
  const s = await gateway([a], server);
  const { c, sub } = await subscribe(s);
  const heads = (await c.rpc('eth_subscribe', ['newHeads'], 2)).result;
  await sleep(3 * POLL_MS);
  await a.chain({ advance: 2 });
  await waitFor(() => c.notes(sub).length >= 2, { what: 'the logs of 1001, 1002' });
  return { a, s, c, sub, heads };
}

test('past server.ws_logs_retry_s: an error naming the first block not delivered; the socket\'s newHeads goes on', async () => {
  const { a, s, c, sub, heads } = await logsAndHeads({ ws_logs_retry_s: 2 });
  await a.mode({ mode: 'rpc_error', method: 'eth_getLogs' });
  const b1003 = await a.chain({ advance: 1 });
  await waitFor(() => c.errors().length === 1, { timeoutMs: 15000, what: 'the error notification' });
  const [err] = c.errors();
  assert.equal(err.id, null);
  assert.equal(err.error.code, -32005);
  assert.match(err.error.message, /the logs of block 1003 could not be delivered \(eth_getLogs failed for 2 s, server.ws_logs_retry_s\)/);
  assert.deepEqual([err.error.data.method, err.error.data.reason, err.error.data.block, err.error.data.blockHash],
    ['eth_subscribe', 'retries', '0x3eb', b1003.hash]);
  assert.deepEqual(c.notes(sub).map((l) => num(l.blockNumber)), [1001, 1002]);
  await waitMetric(s, /sluice_subscription_logs_skipped_total 1\b/);
  await waitMetric(s, /sluice_subscription_logs_skipped_by_network_total\{network="eth"\} 1\b/);
  await waitMetric(s, /sluice_subscriptions\{kind="logs"\} 0\b/);
  assert.match(s.logs(), /network eth: a logs source ended at block 1003 \(eth_getLogs failed for 2 s/);
  assert.equal((await c.rpc('eth_unsubscribe', [sub], 3)).result, false); // ended
  // the other subscription of the socket goes on
  await a.chain({ advance: 1 });
  await waitFor(() => c.notes(heads).some((h) => num(h.number) === 1004), { what: 'newHeads 1004' });
  assert.deepEqual(c.notes(heads).map((h) => num(h.number)), [1001, 1002, 1003, 1004]);
  c.ws.close();
});

test('the head more than 128 heights on: logs end naming the first block skipped; newHeads goes on from the head', async () => {
  const { a, s, c, sub, heads } = await logsAndHeads();
  await a.chain({ advance: 200 });
  await waitFor(() => c.errors().length === 1, { what: 'the error notification' });
  const [err] = c.errors();
  assert.deepEqual([err.error.code, err.error.data.reason, err.error.data.block], [-32005, 'behind', '0x3eb']);
  assert.match(err.error.message, /the logs of block 1003 could not be delivered \(more than 128 heights behind the head\)/);
  assert.deepEqual(c.notes(sub).map((l) => num(l.blockNumber)), [1001, 1002]);
  await waitFor(() => c.notes(heads).some((h) => num(h.number) === 1202), { what: 'newHeads 1202' });
  await waitMetric(s, /sluice_subscription_logs_skipped_total 1\b/);
  c.ws.close();
});

test('newHeads and logs start with the first block after the subscription (geth), not the head they found', async () => {
  const a = await fake('a', ['--block-time-ms', '0']);
  const s = await gateway([a]);
  const { c, sub } = await subscribe(s);
  const heads = (await c.rpc('eth_subscribe', ['newHeads'], 2)).result;
  await sleep(5 * POLL_MS);
  assert.deepEqual([c.notes(sub).length, c.notes(heads).length], [0, 0]);
  // a second socket joining the running source: from the next block too
  const late = await subscribe(s);
  await sleep(3 * POLL_MS);
  await a.chain({ advance: 1 });
  await waitFor(() => c.notes(heads).length >= 1 && c.notes(sub).length >= 1 && late.c.notes(late.sub).length >= 1,
    { what: 'block 1001' });
  await sleep(3 * POLL_MS);
  assert.deepEqual(c.notes(heads).map((h) => num(h.number)), [1001]);
  assert.deepEqual(c.notes(sub).map((l) => num(l.blockNumber)), [1001]);
  assert.deepEqual(late.c.notes(late.sub).map((l) => num(l.blockNumber)), [1001]);
  c.ws.close();
  late.c.ws.close();
});

// the logs of heights from..to in reverse, removed; then of from..to again on the new branch
function assertReorgTold(logs, live, from, to) {
  const removed = logs.slice(0, to - from + 1);
  assert.deepEqual(removed.map((l) => [num(l.blockNumber), l.removed]),
    Array.from({ length: to - from + 1 }, (_, i) => [to - i, true]), 'undone newest first');
  const byHeight = new Map(live.map((l) => [num(l.blockNumber), l.blockHash]));
  const bad = removed.filter((l) => byHeight.get(num(l.blockNumber)) !== l.blockHash).map((l) => num(l.blockNumber));
  assert.deepEqual(bad, [], 'the hashes sent before');
  const again = logs.slice(to - from + 1);
  assertOnceInOrder(again, from, to);
  assert.ok(again.every((l) => l.removed === false && byHeight.get(num(l.blockNumber)) !== l.blockHash));
}

// a frozen chain at 1000 and a logs subscription that has had every log of 1001.. as the chain moves by steps
async function followed(steps) {
  const a = await fake('a', ['--block-time-ms', '0']);
  const s = await gateway([a]);
  const { c, sub } = await subscribe(s);
  await sleep(3 * POLL_MS);
  let head = 1000;
  for (const k of steps) { // each under the follower's backfill bound (128)
    head += k;
    await a.chain({ advance: k });
    await waitFor(() => c.notes(sub).length >= head - 1000, { what: `the logs of 1001..${head}` });
  }
  assertOnceInOrder(c.notes(sub), 1001, head);
  return { a, s, c, sub };
}

test('reorgs of depth 30 and 100 are told in full: every block undone, newest first, then the new branch', async () => {
  const { a, c, sub } = await followed([110]);
  for (const depth of [30, 100]) {
    const n = c.notes(sub).length;
    const before = c.notes(sub).filter((l) => !l.removed); // by height, the last sent wins
    await a.chain({ reorg: depth });
    await waitFor(() => c.notes(sub).length >= n + 2 * depth, { what: `the reorg of depth ${depth}` });
    await sleep(3 * POLL_MS);
    const told = c.notes(sub).slice(n);
    assert.equal(told.length, 2 * depth);
    assertReorgTold(told, before, 1111 - depth, 1110);
  }
  assert.deepEqual(c.errors(), []);
  c.ws.close();
});

test('a reorg deeper than the 128 blocks followed (150) ends the subscription clearly', async () => {
  const { a, s, c } = await followed([100, 60]);
  await a.chain({ reorg: 150 });
  await waitFor(() => c.errors().length === 1, { what: 'the error notification' });
  const [err] = c.errors();
  assert.equal(err.error.code, -32005);
  assert.equal(err.error.data.reason, 'reorg');
  assert.match(err.error.message, /the logs of block \d+ could not be delivered \(a reorg deeper than the 128 blocks followed\)/);
  // whatever was told before the end, nothing claims the replaced blocks are still there unannounced
  await waitMetric(s, /sluice_subscription_logs_skipped_total 1\b/);
  c.ws.close();
});

test('the shared logs fetch (300 filters) retried with backoff on a brief provider error: a handful of calls, not one per filter', async () => {
  const a = await fake('a', ['--block-time-ms', '0']);
  const s = await gateway([a]);
  const c = openWs(`ws://127.0.0.1:${s.port}/eth`);
  await c.opened;
  const any = (await c.rpc('eth_subscribe', ['logs', {}], 1)).result;
  for (let i = 0; i < 299; i++) {
    const r = await c.rpc('eth_subscribe', ['logs', { address: `0x${randomBytes(20).toString('hex')}` }], i + 2);
    assert.ok(r.result, JSON.stringify(r));
  }
  await waitMetric(s, /sluice_subscriptions\{kind="logs"\} 300\b/);
  await sleep(3 * POLL_MS);
  await a.mode({ mode: 'rpc_error', method: 'eth_getLogs', count: 4 });
  await fetch(`${a.url}/_control/reset`, { method: 'POST' });
  const moved = await a.chain({ advance: 1 });
  await waitFor(() => c.notes(any).some((l) => l.blockHash === moved.hash), { what: 'the block\'s logs after the errors' });
  await sleep(2000);
  const calls = (await a.stats()).methods.eth_getLogs;
  assert.ok(calls >= 5 && calls <= 8, `eth_getLogs ${calls} times for one block, 300 filters and 4 errors`);
  assert.deepEqual(c.notes(any).map((l) => l.blockHash), [moved.hash]);
  console.log(`# 300 filters, 4 failed shared fetches: ${calls} eth_getLogs in all for the block`);
  c.ws.close();
});
