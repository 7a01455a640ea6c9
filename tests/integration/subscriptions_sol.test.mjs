// Solana's logsSubscribe ({"mentions":[address]}) and programSubscribe served
// from polling (sub/sub_sol_logs.c, sub_sol_program.c), with real
// processes: the gateway, fake Solana providers (their /_control/sol adds
// transactions mentioning an address and sets program accounts) and
// @solana/web3.js through the default derived WebSocket URL (port + 1).
// Each transaction once, in order; a burst bigger than one poll's bound all
// arrives; a failover loses none; bad params and "all" get -32602; a program
// too large to poll ends its subscription with the documented error.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Connection, PublicKey } from '@solana/web3.js';
import { startFake, startSluice, post, call, sleep, waitFor, adminGet } from '../lib/harness.mjs';
import { openWs, waitMetric } from '../lib/wsclient.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const POLL_MS = 100;
const FROZEN = ['--block', '1000', '--block-time-ms', '0'];
const ADDR = 'Vote111111111111111111111111111111111111111';
const OTHER = 'Stake11111111111111111111111111111111111111';
const PROGRAM = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA';
const ACC1 = 'SysvarC1ock11111111111111111111111111111111';
const ACC2 = 'SysvarRent111111111111111111111111111111111';
const ACC3 = 'SysvarS1otHashes111111111111111111111111111';

async function fake(name) {
  const f = await startFake({ name, chain: 'solana', args: FROZEN });
  started.push(f);
  f.sol = async (body) => {
    const r = await fetch(`${f.url}/_control/sol`, { method: 'POST', body: JSON.stringify(body) });
    const j = await r.json();
    assert.ok(j.ok, JSON.stringify(j));
    return j;
  };
  return f;
}

async function gateway(fakes, server = {}) {
  const s = await startSluice({ workers: 1, server, networks: { solana: { chain: 'solana',
    lines: [`ranking: { probe_interval_ms: ${POLL_MS} }`], endpoints: fakes.map((f) => ({ id: f.name, url: f.url })) } } });
  started.push(s);
  return s;
}


const closeWeb3 = (connection) => { connection._rpcWebSocket.reconnect = false; connection._rpcWebSocket.close(); };
const k = (logs) => Number(/fp mention (\d+)/.exec(logs.logs[1])[1]);

test('onLogs through the derived URL: each transaction once, in order, none from before; a burst over the per-poll bound all arrives', async () => {
  const a = await fake('a');
  const s = await gateway([a]);
  const before = await a.sol({ mention: ADDR, count: 2 }); // history: never told
  const connection = new Connection(`http://127.0.0.1:${s.port}/solana`, 'confirmed');
  const got = [];
  const id = connection.onLogs(new PublicKey(ADDR), (logs, ctx) => got.push({ ...logs, slot: ctx.slot }), 'confirmed');
  await waitMetric(s, /sluice_subscriptions\{kind="sol_logs"\} 1\b/);
  await sleep(4 * POLL_MS);
  const three = (await a.sol({ mention: ADDR, count: 3 })).signatures;
  await a.sol({ mention: OTHER, count: 2 }); // another address: not told
  await fetch(`${a.url}/_control/chain`, { method: 'POST', body: JSON.stringify({ advance: 2 }) });
  const failed = (await a.sol({ mention: ADDR, count: 1, fail: true })).signatures;
  await waitFor(() => got.length >= 4, { what: 'four transactions' });
  assert.deepEqual(got.map((x) => x.signature), [...three, ...failed]);
  assert.ok(!got.some((x) => before.signatures.includes(x.signature)));
  assert.equal(got[0].err, null);
  assert.deepEqual(got[3].err, { InstructionError: [0, { Custom: 1 }] });
  assert.equal(got[0].logs.length, 3);
  assert.match(got[0].logs[0], /invoke \[1\]/);
  assert.deepEqual(got.map((x) => x.slot), [1000, 1000, 1000, 1002]);
  await fetch(`${a.url}/_control/reset`, { method: 'POST' });
  // 80 at once: 32 transactions per poll, the rest over the next polls
  const burst = (await a.sol({ mention: ADDR, count: 80 })).signatures;
  await waitFor(() => got.length >= 84, { what: 'the burst', timeoutMs: 15000 });
  await sleep(4 * POLL_MS);
  assert.equal(got.length, 84);
  assert.deepEqual(got.slice(4).map((x) => x.signature), burst);
  const ks = got.map(k);
  assert.ok(ks.every((x, i) => i === 0 || x > ks[i - 1]), `in order: ${ks}`);
  // each transaction fetched once; 32 a poll at most, so the 80 took three polls
  const st = await a.stats();
  assert.equal(st.methods.getTransaction, 80);
  assert.ok(st.methods.getSignaturesForAddress >= 3);
  // the source's upstream calls, counted: 84 getTransaction and its getSignaturesForAddress polls
  const calls = async () => Number(/sluice_subscription_upstream_calls_total\{network="[^"]+",kind="sol_logs"\} (\d+)/.exec((await adminGet(s, '/metrics')).text)?.[1] ?? 0);
  await waitFor(async () => (await calls()) >= 84 + 10, { what: 'the calls counted' });
  await connection.removeOnLogsListener(id);
  await waitMetric(s, /sluice_subscriptions\{kind="sol_logs"\} 0\b/);
  closeWeb3(connection);
});

test('a burst over the 256 signatures held in memory waits upstream and all arrives, once, in order', async () => {
  const a = await fake('a');
  const s = await gateway([a]);
  const c = openWs(`ws://127.0.0.1:${s.wsPort}/solana`);
  await c.opened;
  const sub = (await c.rpc('logsSubscribe', [{ mentions: [ADDR] }], 1)).result;
  await sleep(4 * POLL_MS);
  await a.reset();
  const sigs = (await a.sol({ mention: ADDR, count: 600 })).signatures;
  await waitFor(() => c.notes(sub).length >= 600, { what: '600 transactions', timeoutMs: 30000 });
  await sleep(4 * POLL_MS);
  assert.deepEqual(c.notes(sub).map((r) => r.value.signature), sigs);
  assert.equal((await a.stats()).methods.getTransaction, 600); // each fetched once
  c.ws.close();
});

test('logsSubscribe: the first of two endpoints killed mid-stream loses no transaction', async () => {
  const a = await fake('a'), b = await fake('b');
  const s = await gateway([a, b]);
  const both = async (body) => { const x = await a.sol(body); const y = await b.sol(body); assert.deepEqual(x, y); return x.signatures; };
  const c = openWs(`ws://127.0.0.1:${s.wsPort}/solana`);
  await c.opened;
  const sub = (await c.rpc('logsSubscribe', [{ mentions: [ADDR] }, { commitment: 'confirmed' }], 1)).result;
  assert.equal(typeof sub, 'number');
  await sleep(4 * POLL_MS);
  const sigs = [];
  for (let i = 0; i < 5; i++) {
    sigs.push(...await both({ mention: ADDR, count: 3 }));
    await sleep(POLL_MS / 2);
  }
  // the endpoint the polls go to is killed; the other goes on
  await Promise.all([a.reset(), b.reset()]);
  await sleep(3 * POLL_MS);
  const polls = async (f) => (await f.stats()).methods.getSignaturesForAddress ?? 0;
  const [dead, alive] = (await polls(a)) >= (await polls(b)) ? [a, b] : [b, a];
  assert.ok(await polls(dead) > 0);
  sigs.push(...await both({ mention: ADDR, count: 4 })); // told by the dead one, or by the other after it
  await dead.stop('SIGKILL');
  for (let i = 0; i < 5; i++) {
    sigs.push(...(await alive.sol({ mention: ADDR, count: 3 })).signatures);
    await sleep(POLL_MS / 2);
  }
  await waitFor(() => c.notes(sub).length >= sigs.length, { what: `${sigs.length} transactions`, timeoutMs: 15000 });
  await sleep(4 * POLL_MS);
  assert.deepEqual(c.notes(sub).map((r) => r.value.signature), sigs);
  // (a subscription_source_changed event is told when a poll's own call failed over; when the
  // probes saw the endpoint dead first, the poll just goes to the other: not asserted here)
  c.ws.close();
});

test('equal params share one source: two sockets, one poll upstream per interval, the same notifications', async () => {
  const a = await fake('a');
  const s = await gateway([a]);
  const c1 = openWs(`ws://127.0.0.1:${s.wsPort}/solana`), c2 = openWs(`ws://127.0.0.1:${s.wsPort}/solana`);
  await Promise.all([c1.opened, c2.opened]);
  const s1 = (await c1.rpc('logsSubscribe', [{ mentions: [ADDR] }], 1)).result;
  const s2 = (await c2.rpc('logsSubscribe', [{ mentions: [ADDR] }, { commitment: 'finalized' }], 1)).result;
  assert.notEqual(s1, s2);
  await sleep(3 * POLL_MS);
  await a.reset();
  await sleep(10 * POLL_MS);
  const polls = (await a.stats()).methods.getSignaturesForAddress;
  assert.ok(polls >= 3 && polls <= 14, `${polls} polls in 10 intervals`); // one source, not two
  const sigs = (await a.sol({ mention: ADDR, count: 5 })).signatures;
  await waitFor(() => c1.notes(s1).length === 5 && c2.notes(s2).length === 5, { what: 'five each' });
  assert.deepEqual(c1.notes(s1).map((r) => r.value.signature), sigs);
  assert.deepEqual(c2.notes(s2), c1.notes(s1));
  c1.ws.close();
  c2.ws.close();
});

test('bad params get -32602; "all" and "allWithVotes" say they need an endpoint with ws_url', async () => {
  const a = await fake('a');
  const s = await gateway([a]);
  const c = openWs(`ws://127.0.0.1:${s.wsPort}/solana`);
  await c.opened;
  let id = 0;
  const bad = async (method, params, re) => {
    const r = await c.rpc(method, params, ++id);
    assert.equal(r.error?.code, -32602, `${method} ${JSON.stringify(params)}: ${JSON.stringify(r)}`);
    if (re) assert.match(r.error.message, re);
  };
  await bad('logsSubscribe', ['all'], /need an endpoint with ws_url/);
  await bad('logsSubscribe', ['allWithVotes'], /need an endpoint with ws_url/);
  await bad('logsSubscribe', [{ mentions: [ADDR, OTHER] }], /exactly one address/);
  await bad('logsSubscribe', [{ mentions: ['0OIl'] }]);
  await bad('logsSubscribe', [{ mentions: [ADDR] }, { commitment: 'max' }]);
  await bad('logsSubscribe', []);
  await bad('programSubscribe', ['not base58!']);
  await bad('programSubscribe', [PROGRAM, { encoding: 'hex' }]);
  await bad('programSubscribe', [PROGRAM, { filters: [{ dataSize: -1 }] }]);
  await bad('programSubscribe', [PROGRAM, { filters: [{ memcmp: { offset: 0, bytes: '"}' } }] }]);
  await bad('programSubscribe', [PROGRAM, { filters: Array(5).fill({ dataSize: 1 }) }]);
  assert.equal(c.seen.filter((m) => m.method).length, 0);
  c.ws.close();
});

test('onProgramAccountChange: a changed or new account once; unchanged ones never; filters apply', async () => {
  const a = await fake('a');
  const s = await gateway([a]);
  const b64 = (bytes) => Buffer.from(bytes).toString('base64');
  await a.sol({ program: PROGRAM, account: ACC1, data: b64([1, 2, 3, 4]) });
  await a.sol({ program: PROGRAM, account: ACC2, data: b64([9, 9, 9, 9, 9, 9, 9, 9]) });
  await a.sol({ program: OTHER, account: ACC3, data: b64([7]) });
  const connection = new Connection(`http://127.0.0.1:${s.port}/solana`, 'confirmed');
  const got = [], small = [];
  const id = connection.onProgramAccountChange(new PublicKey(PROGRAM),
    (x, ctx) => got.push({ key: x.accountId.toBase58(), data: [...x.accountInfo.data], owner: x.accountInfo.owner.toBase58(), slot: ctx.slot }), 'confirmed');
  const id2 = connection.onProgramAccountChange(new PublicKey(PROGRAM), (x) => small.push(x.accountId.toBase58()),
    'confirmed', [{ dataSize: 4 }]);
  await waitMetric(s, /sluice_subscriptions\{kind="program"\} 2\b/);
  await sleep(4 * POLL_MS);
  assert.equal(got.length + small.length, 0); // where they stand is not a change
  await a.sol({ program: PROGRAM, account: ACC1, data: b64([5, 6, 7, 8]) });
  await waitFor(() => got.length >= 1 && small.length >= 1, { what: 'the change' });
  await a.sol({ program: PROGRAM, account: ACC3, data: b64([1]) }); // ACC3 is OTHER's: still not PROGRAM's
  await a.sol({ program: PROGRAM, account: 'SysvarRecentB1ockHashes11111111111111111111', data: b64([3, 3]) });
  await waitFor(() => got.length >= 2, { what: 'the new account' });
  await sleep(4 * POLL_MS);
  assert.deepEqual(got.map((x) => [x.key, x.data]), [[ACC1, [5, 6, 7, 8]], ['SysvarRecentB1ockHashes11111111111111111111', [3, 3]]]);
  assert.equal(got[0].owner, PROGRAM);
  assert.equal(got[0].slot, 1000);
  assert.deepEqual(small, [ACC1]); // dataSize 4 only
  await connection.removeProgramAccountChangeListener(id);
  await connection.removeProgramAccountChangeListener(id2);
  await waitMetric(s, /sluice_subscriptions\{kind="program"\} 0\b/);
  closeWeb3(connection);
});

test('a program whose accounts are too many to poll: the subscription ends with the documented error', async () => {
  const a = await fake('a');
  const s = await gateway([a]);
  await a.sol({ program: PROGRAM, fill: 1100, size: 3000 }); // ~4.4 MB of base64
  const c = openWs(`ws://127.0.0.1:${s.wsPort}/solana`);
  await c.opened;
  const sub = (await c.rpc('programSubscribe', [PROGRAM, { encoding: 'base64' }], 1)).result;
  assert.equal(typeof sub, 'number');
  const err = await c.next((m) => m.error && m.id === null, 10000);
  assert.equal(err.error.code, -32005);
  assert.match(err.error.message, /too many to poll; narrow it with filters/);
  assert.deepEqual(err.error.data, { subscription: sub, method: 'programSubscribe' });
  await waitMetric(s, /sluice_subscriptions\{kind="program"\} 0\b/);
  assert.equal((await c.rpc('programUnsubscribe', [sub], 2)).result, false); // over already
  // narrowed by a filter, the same program is served
  const sub2 = (await c.rpc('programSubscribe', [PROGRAM, { encoding: 'base64', filters: [{ dataSize: 8 }] }], 3)).result;
  await waitMetric(s, /sluice_subscriptions\{kind="program"\} 1\b/);
  await sleep(4 * POLL_MS);
  assert.equal(c.seen.filter((m) => m.id === null).length, 1);
  await c.rpc('programUnsubscribe', [sub2], 4);
  c.ws.close();
});

test('programSubscribe: an answer over server.max_response_bytes ends the subscription the same way', async () => {
  const a = await fake('a');
  const s = await gateway([a], { max_response_bytes: 1024 * 1024 });
  await a.sol({ program: PROGRAM, fill: 400, size: 3000 }); // ~1.6 MB of base64: over 1 MiB, under 4 MiB
  const c = openWs(`ws://127.0.0.1:${s.wsPort}/solana`);
  await c.opened;
  const sub = (await c.rpc('programSubscribe', [PROGRAM, { encoding: 'base64' }], 1)).result;
  const err = await c.next((m) => m.error && m.id === null, 10000);
  assert.equal(err.error.code, -32005);
  assert.match(err.error.message, /server\.max_response_bytes\) are too many to poll/);
  assert.equal(err.error.data.subscription, sub);
  await waitMetric(s, /sluice_subscriptions\{kind="program"\} 0\b/);
  // ended at the first such answer: not polled on until the endpoint's breaker opens for everyone
  await sleep(5 * POLL_MS);
  assert.doesNotMatch(s.logs(), /breaker closed -> open/);
  assert.equal((await post(s.url('solana'), call('getSlot', []))).json.result, 1000);
  c.ws.close();
});

test('server.ws_max_polled_sources_per_identity: polled programSubscribe / logsSubscribe are capped per caller (each polls every interval)', async () => {
  // issue 31: each distinct polled source costs one upstream poll per interval
  // forever and was charged once (300 of them: 150 getProgramAccounts a second)
  const a = await fake('a');
  const s = await gateway([a], { ws_max_polled_sources_per_identity: 3 });
  const c = openWs(`ws://127.0.0.1:${s.wsPort}/solana`);
  const other = openWs(`ws://127.0.0.1:${s.wsPort}/solana`, { localAddress: '127.0.0.21' });
  await c.opened; await other.opened;
  const prog = (n) => [PROGRAM, { encoding: 'base64', filters: [{ dataSize: n }] }];
  for (let n = 1; n <= 3; n++) assert.equal(typeof (await c.rpc('programSubscribe', prog(n), n)).result, 'number');
  const over = await c.rpc('programSubscribe', prog(4), 4);
  assert.equal(over.error?.code, -32005, JSON.stringify(over));
  assert.equal(over.error.data?.reason, 'polled_sources');
  assert.match(over.error.message, /server\.ws_max_polled_sources_per_identity/);
  const logs = await c.rpc('logsSubscribe', [{ mentions: [ADDR] }], 5);
  assert.equal(logs.error?.data?.reason, 'polled_sources', 'polled logs count too');
  // params already polled are joined at no cost; accounts are merged polls: not counted
  assert.equal(typeof (await c.rpc('programSubscribe', prog(1), 6)).result, 'number');
  assert.equal(typeof (await c.rpc('accountSubscribe', [ACC1, { encoding: 'base64' }], 7)).result, 'number');
  // another caller has its own
  assert.equal(typeof (await other.rpc('programSubscribe', prog(4), 1)).result, 'number');
  // the upstream sees 4 polls per interval (3 + 1), not one per subscription
  await sleep(3 * POLL_MS);
  const before = (await a.stats()).methods.getProgramAccounts ?? 0;
  await sleep(20 * POLL_MS);
  const polls = ((await a.stats()).methods.getProgramAccounts ?? 0) - before;
  assert.ok(polls <= 4 * 20 + 8, `getProgramAccounts ${polls} in 20 intervals`);
  // one unsubscribed (its only subscriber): room again
  assert.equal((await c.rpc('programUnsubscribe', [c.seen.find((m) => m.id === 2).result], 8)).result, true);
  assert.equal(typeof (await c.rpc('logsSubscribe', [{ mentions: [ADDR] }], 9)).result, 'number');
  c.ws.close(); other.ws.close();
});

test('getProgramAccounts of one program is polled once an interval for every filter on it; each subscription told only its own accounts', async () => {
  // issue 31: each distinct programSubscribe (program + filters) did its own
  // getProgramAccounts every interval (8 filters: 8 calls an interval)
  const a = await fake('a');
  const s = await gateway([a]);
  const b64 = (bytes) => Buffer.from(bytes).toString('base64');
  const b58one = { 1: '2', 2: '3', 3: '4', 4: '5', 5: '6', 6: '7', 7: '8' }; // base58 of the one byte k
  await a.sol({ program: PROGRAM, account: ACC1, data: b64([1, 0, 0, 0]) });
  await a.sol({ program: PROGRAM, account: ACC2, data: b64([2, 0, 0, 0, 0, 0, 0, 0]) });
  const c = openWs(`ws://127.0.0.1:${s.wsPort}/solana`);
  await c.opened;
  const subs = {};
  for (let k = 1; k <= 7; k++) // memcmp at 0 on the first byte k, with dataSize 4 or 8 in turn (base58 and base64 bytes)
    subs[k] = (await c.rpc('programSubscribe', [PROGRAM, { encoding: 'base64', filters: [
      k % 2 ? { memcmp: { offset: 0, bytes: b58one[k] } } : { memcmp: { offset: 0, bytes: b64([k]), encoding: 'base64' } },
      ...(k === 2 ? [{ dataSize: 8 }] : [])] }], k)).result;
  subs.all = (await c.rpc('programSubscribe', [PROGRAM, { encoding: 'base64' }], 8)).result;
  assert.ok(Object.values(subs).every((v) => typeof v === 'number'), JSON.stringify(subs));
  await waitMetric(s, /sluice_subscriptions\{kind="program"\} 8\b/);
  await sleep(3 * POLL_MS);
  const before = (await a.stats()).methods.getProgramAccounts ?? 0;
  await sleep(20 * POLL_MS);
  const polls = ((await a.stats()).methods.getProgramAccounts ?? 0) - before;
  assert.ok(polls <= 20 + 6, `getProgramAccounts ${polls} in 20 intervals for 8 filters (one poll an interval)`);
  const told = () => c.seen.filter((m) => m.method === 'programNotification');
  assert.equal(told().length, 0); // where they stand is not a change
  await a.sol({ program: PROGRAM, account: ACC1, data: b64([1, 5, 5, 5]) });
  await a.sol({ program: PROGRAM, account: ACC2, data: b64([2, 6, 6, 6, 6, 6, 6, 6]) });
  await a.sol({ program: PROGRAM, account: ACC3, data: b64([3, 7]) }); // new
  await waitFor(() => told().length >= 6, { what: 'the changes' });
  await sleep(4 * POLL_MS);
  const by = (sub) => told().filter((m) => m.params.subscription === sub).map((m) => m.params.result.value.pubkey).sort();
  assert.deepEqual(by(subs[1]), [ACC1]);
  assert.deepEqual(by(subs[2]), [ACC2]); // memcmp 2 and dataSize 8
  assert.deepEqual(by(subs[3]), [ACC3]);
  for (const k of [4, 5, 6, 7]) assert.deepEqual(by(subs[k]), []);
  assert.deepEqual(by(subs.all), [ACC1, ACC2, ACC3].sort());
  assert.equal(told().length, 6);
  const n1 = told().find((m) => m.params.subscription === subs[1]);
  assert.deepEqual(n1.params.result.value.account.data, [b64([1, 5, 5, 5]), 'base64']);
  c.ws.close();
});

test('one loose filter whose answer is too large ends only itself: the program\'s other filters are then polled one by one', async () => {
  const a = await fake('a');
  const s = await gateway([a]);
  const b64 = (bytes) => Buffer.from(bytes).toString('base64');
  await a.sol({ program: PROGRAM, fill: 1100, size: 3000 }); // ~4.4 MB of base64
  await a.sol({ program: PROGRAM, account: ACC1, data: b64([1, 2, 3, 4, 5, 6, 7, 8]) });
  const c = openWs(`ws://127.0.0.1:${s.wsPort}/solana`);
  await c.opened;
  const narrow = (await c.rpc('programSubscribe', [PROGRAM, { encoding: 'base64', filters: [{ dataSize: 8 }] }], 1)).result;
  const loose = (await c.rpc('programSubscribe', [PROGRAM, { encoding: 'base64' }], 2)).result;
  const err = await c.next((m) => m.error && m.id === null, 10000);
  assert.equal(err.error.data.subscription, loose);
  await waitMetric(s, /sluice_subscriptions\{kind="program"\} 1\b/);
  await sleep(3 * POLL_MS);
  await a.sol({ program: PROGRAM, account: ACC1, data: b64([8, 7, 6, 5, 4, 3, 2, 1]) });
  const n = await c.next((m) => m.method === 'programNotification', 5000);
  assert.equal(n.params.subscription, narrow);
  assert.equal(n.params.result.value.pubkey, ACC1);
  assert.equal(c.seen.filter((m) => m.id === null && m.error).length, 1);
  c.ws.close();
});
