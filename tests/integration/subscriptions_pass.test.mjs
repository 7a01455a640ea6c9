// Subscriptions passed through from an upstream's WebSocket (issue 22,
// sub/sub_pass.c, pool/pool_wspass.c): newPendingTransactions and
// Solana's logsSubscribe / programSubscribe are subscribed to at an endpoint
// with a ws_url, and each notification's result goes to every client with
// sluice's own id. The upstreams are fake providers (real processes): their
// WebSocket on the same port serves the subscriptions, and /_control/ws
// pushes notifications, drops the sockets and counts subscribes.
// viem's watchPendingTransactions gets the hashes; two clients with the same
// params share one upstream subscription; the endpoint holding it killed,
// the subscription moves to the other one (subscription_source_changed) and
// notifications resume; a network without ws_url refuses with -32601; bad
// params get -32602; @solana/web3.js onLogs through the derived port + 1 URL.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicClient, webSocket } from 'viem';
import { Connection } from '@solana/web3.js';
import { startFake, startSluice, call, sleep, waitFor, adminGet, adminPost, events, metricValue } from '../lib/harness.mjs';
import { openWs, waitMetric } from '../lib/wsclient.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const hex = (n) => '0x' + n.toString(16);
const hashOf = (n) => '0x' + n.toString(16).padStart(64, '0');

// A fake provider (tests/fakeprovider, its WebSocket: fp_ws.c) and its
// /_control/ws: pushes, drops, and what it was asked.
async function startUpstream(name, { solana = false } = {}) {
  const f = await startFake({ name, chain: solana ? 'solana' : 'ethereum', args: ['--block', '1000', '--block-time-ms', '0'] });
  const ctl = async (body) => (await fetch(`${f.url}/_control/ws`, { method: 'POST', body: body ? JSON.stringify(body) : '' })).json();
  return {
    name, url: f.url,
    wsUrl: `"${f.url.replace('http', 'ws')}/"`,
    ctl,
    live: async (kind) => (await ctl()).live[kind],
    subscribes: async (kind) => (await ctl()).subscribes[kind],
    unsubscribes: async () => (await ctl()).unsubscribes,
    push: (kind, result) => ctl({ push: kind, result }),
    drop: () => ctl({ drop: true }),
    stop: () => f.stop(),
  };
}


async function gateway(ups, { chain = 'ethereum', net = 'eth', plain } = {}) {
  const networks = { [net]: { chain, lines: ['ranking: { probe_interval_ms: 200 }'],
    endpoints: ups.map((u) => ({ id: u.name, url: u.url, ws_url: u.wsUrl })) } };
  if (plain) networks.plain = { chain, lines: ['ranking: { probe_interval_ms: 200 }'], endpoints: [{ id: 'p', url: plain.url }] };
  const s = await startSluice({ workers: 1, networks });
  started.push(s);
  return s;
}


const txHash = (n) => '0x' + n.toString(16).padStart(64, 'f');

test('newPendingTransactions: viem gets the hashes; one upstream subscription shared; failover to the second ws endpoint', async () => {
  const a = await startUpstream('a');
  const b = await startUpstream('b');
  started.push(a, b);
  const s = await gateway([a, b], { plain: a });
  const client = createPublicClient({ transport: webSocket(`ws://127.0.0.1:${s.port}/eth`, { reconnect: false }) });
  const got = [];
  const unwatch = client.watchPendingTransactions({ onTransactions: (hs) => got.push(...hs), poll: false });
  started.push({ stop: async () => { unwatch(); (await client.transport.getRpcClient()).close(); } });
  const raw = openWs(`ws://127.0.0.1:${s.port}/eth`);
  await raw.opened;
  const both = async () => (await a.live('pending')) + (await b.live('pending'));
  await waitFor(async () => (await both()) === 1, { what: 'viem subscribed upstream' });
  const sub = (await raw.rpc('eth_subscribe', ['newPendingTransactions'], 1)).result;
  assert.match(sub, /^0x[0-9a-f]{32}$/);
  const sub2 = (await raw.rpc('eth_subscribe', ['newPendingTransactions', false], 2)).result;
  assert.notEqual(sub, sub2);
  await sleep(200);
  const all = async () => (await a.subscribes('pending')) + (await b.subscribes('pending'));
  assert.equal(await all(), 1, 'three subscriptions with the same params: one upstream subscription');
  const first = (await a.live('pending')) === 1 ? a : b;
  const second = first === a ? b : a;
  assert.notEqual(sub, '0x00000000000000000000000000000001', 'the client never sees the upstream id');

  for (let i = 1; i <= 5; i++) await first.push('pending', txHash(i));
  await waitFor(() => got.length === 5, { what: 'viem got 5 hashes' });
  assert.deepEqual(got, [1, 2, 3, 4, 5].map(txHash));
  await waitFor(() => raw.notes(sub).length === 5 && raw.notes(sub2).length === 5, { what: 'the raw subscriptions' });

  // full transactions: other params, another upstream subscription
  const full = (await raw.rpc('eth_subscribe', ['newPendingTransactions', true], 3)).result;
  await waitFor(async () => (await all()) === 2, { what: 'a second upstream subscription' });
  const lastParams = [(await a.ctl()).last_params, (await b.ctl()).last_params]; // (at the plan's first now)
  assert.ok(lastParams.some((p) => JSON.stringify(p) === '["newPendingTransactions",true]'), JSON.stringify(lastParams));
  assert.equal((await raw.rpc('eth_unsubscribe', [full], 4)).result, true);
  await waitFor(async () => (await a.unsubscribes()) + (await b.unsubscribes()) === 1,
    { what: 'the last subscriber gone: unsubscribed upstream' });
  await waitFor(async () => (await metricValue(s, 'sluice_subscription_passthrough_sources')) === 1,
    { what: 'one passthrough source left (the counters flush a moment behind)' });

  // the endpoint holding it dies: the other one gets the subscription
  const t0 = performance.now();
  await first.stop();
  await waitFor(async () => (await second.live('pending')) === 1, { intervalMs: 5, what: 'subscribed again at the other endpoint' });
  console.log('the holder killed -> subscribed at the other endpoint, ms:', (performance.now() - t0).toFixed(1));
  for (let i = 6; i <= 8; i++) await second.push('pending', txHash(i));
  await waitFor(() => got.length === 8, { what: 'viem got 8 hashes' });
  assert.deepEqual(got.slice(5), [6, 7, 8].map(txHash));
  await waitFor(() => raw.notes(sub).length === 8, { what: 'the raw subscriber resumed' });
  const ev = (await events(s)).filter((e) => e.kind === 'subscription_source_changed');
  assert.ok(ev.some((e) => e.endpoint === second.name && e.reason.includes(`was ${first.name}`) &&
    /not backfilled/.test(e.reason)), JSON.stringify(ev));
  assert.ok(!ev.some((e) => /127\.0\.0\.1|ws:/.test(e.reason)), 'no URL in the event');
  await waitFor(async () => (await metricValue(s, 'sluice_subscription_passthrough_failovers_total')) >= 1,
    { what: 'the failover counted' });
  await waitFor(async () => (await metricValue(s, 'sluice_subscription_passthrough_relayed_total')) === 8,
    { what: 'the 8 notifications relayed counted once each' });

  // a network without ws_url: refused clearly; bad params: -32602
  const plain = openWs(`ws://127.0.0.1:${s.port}/plain`);
  await plain.opened;
  const refused = await plain.rpc('eth_subscribe', ['newPendingTransactions'], 1);
  assert.equal(refused.error.code, -32601);
  assert.match(refused.error.message, /needs an endpoint with ws_url/);
  const bad = await raw.rpc('eth_subscribe', ['newPendingTransactions', { full: 1 }], 5);
  assert.equal(bad.error.code, -32602);
  const bad2 = await raw.rpc('eth_subscribe', ['newPendingTransactions', true, 1], 6);
  assert.equal(bad2.error.code, -32602);

  unwatch();
  raw.ws.close();
  plain.ws.close();
  await waitFor(async () => (await second.live('pending')) === 0, { what: 'unsubscribed at the end' });
});

test('every ws endpoint gone: the client stays subscribed, counted, and resumes when one is back', async () => {
  const a = await startUpstream('a');
  started.push(a);
  const s = await gateway([a]);
  const raw = openWs(`ws://127.0.0.1:${s.port}/eth`);
  await raw.opened;
  const sub = (await raw.rpc('eth_subscribe', ['newPendingTransactions'], 1)).result;
  await waitFor(async () => (await a.live('pending')) === 1, { what: 'subscribed upstream' });
  await a.drop(); // the sockets die; the endpoint still answers HTTP
  await waitFor(async () => (await a.subscribes('pending')) === 2 && (await a.live('pending')) === 1,
    { what: 'subscribed again at the same endpoint after its backoff' });
  await a.push('pending', txHash(42));
  await raw.next((m) => m.params?.subscription === sub && m.params.result === txHash(42));
  const unsourced = async () => Number((await adminGet(s, '/metrics')).text
    .match(/^sluice_subscription_passthrough_unsourced_seconds_total ([\d.]+)$/m)?.[1]);
  await waitFor(async () => (await unsourced()) > 0,
    { what: 'the time without a source counted' });
  const ev = (await events(s)).filter((e) => e.kind === 'subscription_source_changed');
  assert.ok(ev.some((e) => e.endpoint === 'none' && /was a/.test(e.reason)), JSON.stringify(ev));
  assert.ok(ev.some((e) => e.endpoint === 'a' && /was a/.test(e.reason)), JSON.stringify(ev));
  raw.ws.close();
});

test('the endpoint holding the subscription drained: it moves to the other one', async () => {
  const a = await startUpstream('a');
  const b = await startUpstream('b');
  started.push(a, b);
  const s = await gateway([a, b]);
  const raw = openWs(`ws://127.0.0.1:${s.port}/eth`);
  await raw.opened;
  const sub = (await raw.rpc('eth_subscribe', ['newPendingTransactions'], 1)).result;
  await waitFor(async () => (await a.live('pending')) + (await b.live('pending')) === 1, { what: 'subscribed upstream' });
  const first = (await a.live('pending')) === 1 ? a : b;
  const second = first === a ? b : a;
  assert.equal((await adminPost(s, `/admin/endpoints/eth/${first.name}/drain`)).status, 200);
  await waitFor(async () => (await second.live('pending')) === 1, { what: 'subscribed at the other endpoint' });
  await second.push('pending', txHash(7));
  await raw.next((m) => m.params?.subscription === sub && m.params.result === txHash(7));
  const ev = (await events(s)).filter((e) => e.kind === 'subscription_source_changed');
  assert.ok(ev.some((e) => e.endpoint === second.name && e.reason.includes(`was ${first.name}`)), JSON.stringify(ev));
  raw.ws.close();
});

test('Solana: onLogs through the derived port + 1 URL is passed through; programSubscribe too', async () => {
  const a = await startUpstream('a', { solana: true });
  started.push(a);
  const s = await gateway([a], { chain: 'solana', net: 'solana', plain: a });
  const connection = new Connection(`http://127.0.0.1:${s.port}/solana`, 'confirmed');
  // web3.js keeps its socket and reconnects forever: not past this test, even failed
  started.unshift({ stop: async () => { connection._rpcWebSocket.reconnect = false; connection._rpcWebSocket.close(); } });
  assert.equal(connection._rpcWsEndpoint, `ws://127.0.0.1:${s.port + 1}/solana`);
  const logs = [];
  const id = connection.onLogs('all', (l) => logs.push(l), 'confirmed');
  await waitFor(async () => (await a.live('logs')) === 1, { what: 'logsSubscribe upstream' });
  assert.deepEqual((await a.ctl()).last_params, ['all', { commitment: 'confirmed' }]);
  const value = { signature: '5'.repeat(88), err: null, logs: ['Program 11111111111111111111111111111111 invoke [1]'] };
  await a.push('logs', { context: { slot: 1001 }, value });
  await waitFor(() => logs.length === 1, { what: 'onLogs called' });
  assert.deepEqual(logs[0], value);

  const raw = openWs(`ws://127.0.0.1:${s.port}/solana`);
  await raw.opened;
  const prog = (await raw.rpc('programSubscribe', ['11111111111111111111111111111111', { encoding: 'base64' }], 1)).result;
  assert.equal(typeof prog, 'number');
  await waitFor(async () => (await a.live('program')) === 1, { what: 'programSubscribe upstream' });
  await a.push('program', { context: { slot: 1002 }, value: { pubkey: 'x', account: {} } });
  await raw.next((m) => m.method === 'programNotification' && m.params.subscription === prog);
  const bad = await raw.rpc('logsSubscribe', [5], 2);
  assert.equal(bad.error.code, -32602);
  // one caller holds at most 64 distinct upstream subscriptions in a worker (the sockets' room is shared)
  const mention = (i) => ['all', { commitment: 'confirmed', x: i }];
  // (this caller, 127.0.0.1, holds two already: web3.js's onLogs and the programSubscribe)
  for (let i = 0; i < 62; i++) assert.equal(typeof (await raw.rpc('logsSubscribe', mention(i), 100 + i)).result, 'number');
  const over = await raw.rpc('logsSubscribe', mention(62), 200);
  assert.equal(over.error?.code, -32005, JSON.stringify(over));
  assert.match(over.error.message, /distinct passed-through subscriptions/);
  assert.equal(typeof (await raw.rpc('logsSubscribe', mention(0), 201)).result, 'number', 'params already held: shared');
  const plain = openWs(`ws://127.0.0.1:${s.port}/plain`);
  await plain.opened;
  // without ws_url, logsSubscribe is polled (sub_sol_logs.c), which cannot follow "all"
  const refused = await plain.rpc('logsSubscribe', ['all'], 1);
  assert.equal(refused.error.code, -32602);
  assert.match(refused.error.message, /ws_url/);
  plain.ws.close();
  await connection.removeOnLogsListener(id);
  await waitFor(async () => (await a.unsubscribes()) >= 1, { what: 'logsUnsubscribe upstream' });
  raw.ws.close(); // its 63 subscriptions end: unsubscribed upstream
  await waitFor(async () => (await a.live('logs')) === 0 && (await a.live('program')) === 0,
    { what: 'every upstream subscription gone' });
});

test('the sockets\' room: a second upstream socket opens when the first is full; a caller\'s share is a quarter of what is left; no room left is -32005, never a silent id', async () => {
  // issue 31: four callers x 64 distinct subscriptions filled the endpoint's
  // socket (256) and a fifth got an id that delivered nothing; then it was
  // refused with -32005: now a second socket per endpoint takes 256 more
  const a = await startUpstream('a', { solana: true });
  started.push(a);
  const s = await gateway([a], { chain: 'solana', net: 'solana' });
  const mention = (i, j) => ['all', { commitment: 'confirmed', x: i * 1000 + j }];
  const counts = [], socks = [];
  let roomRefusal;
  // the socket open first (while its address is being looked up, a new source would be polled)
  const warm = openWs(`ws://127.0.0.1:${s.port}/solana`, { localAddress: '127.0.0.9' });
  await warm.opened;
  assert.equal(typeof (await warm.rpc('logsSubscribe', mention(999, 0), 1)).result, 'number');
  await waitFor(async () => (await a.live('logs')) === 1, { what: 'the upstream socket open' });
  assert.equal((await warm.rpc('logsUnsubscribe', [warm.seen.find((m) => m.id === 1).result], 2)).result, true);
  await waitFor(async () => (await a.live('logs')) === 0, { what: 'unsubscribed' });
  for (let i = 0; i < 40 && roomRefusal === undefined; i++) {
    const c = openWs(`ws://127.0.0.1:${s.port}/solana`, { localAddress: `127.0.0.${10 + i}` });
    socks.push(c);
    await c.opened;
    let n = 0;
    for (;;) {
      const r = await c.rpc('logsSubscribe', mention(i, n), 1000 + n);
      if (typeof r.result === 'number') { n++; continue; }
      assert.equal(r.error?.code, -32005, JSON.stringify(r));
      if (r.error.data?.reason === 'passthrough_room') roomRefusal = r;
      else assert.equal(r.error.data?.reason, 'passthrough_share', JSON.stringify(r));
      break;
    }
    counts.push(n);
  }
  assert.ok(roomRefusal, `the room never ran out: ${counts}`);
  // a quarter of what is left (512 on two sockets), at most 64 a caller
  assert.deepEqual(counts.slice(0, 9), [64, 64, 64, 64, 64, 48, 36, 27, 20], String(counts));
  assert.equal(counts.reduce((x, y) => x + y, 0), 512, String(counts));
  assert.match(roomRefusal.error.message, /no room for another upstream subscription/);
  // every id given is an upstream subscription, none waits for a socket
  await waitFor(async () => (await a.live('logs')) === 512, { what: '512 upstream subscriptions' });
  await waitFor(async () => (await metricValue(s, 'sluice_subscription_upstream_sockets')) === 2, { what: 'two upstream sockets' });
  // the fifth caller's (on the second socket) are told what the upstream pushes
  const fifth = socks[4];
  const subFifth = fifth.seen.find((m) => m.id === 1000).result;
  await a.push('logs', { context: { slot: 1 }, value: { signature: 'x', err: null, logs: ['fifth'] } });
  const told = await fifth.next((m) => m.params?.subscription === subFifth, 5000);
  assert.deepEqual(told.params.result.value.logs, ['fifth']);
  // params someone holds are still shared when the room is gone
  const last = socks[socks.length - 1];
  assert.equal(typeof (await last.rpc('logsSubscribe', mention(0, 0), 1)).result, 'number');
  // room freed by an unsubscribe is there again
  socks[0].ws.close();
  await waitFor(async () => (await a.live('logs')) === 449, { what: 'the first caller\'s 63 not shared unsubscribed' });
  assert.equal(typeof (await last.rpc('logsSubscribe', mention(99, 0), 2)).result, 'number');
  for (const c of [warm, ...socks]) c.ws.close();
});
