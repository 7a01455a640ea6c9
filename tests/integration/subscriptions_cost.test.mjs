// What subscriptions cost upstream is bounded per network, not by how many
// distinct subscriptions clients open: many logs filters share one
// eth_getLogs per block (each filtered in sluice by geth's rules, compared
// here with the provider's own filtered answer), many accountSubscribe are
// read with getMultipleAccounts, and one caller may start only so many
// distinct sources (server.ws_max_sources_per_identity). Real processes: the
// gateway and fake providers that count calls per method.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import bs58 from 'bs58';
import { startFake, startSluice, post, call, sleep, waitFor, adminGet } from '../lib/harness.mjs';
import { openWs, waitMetric } from '../lib/wsclient.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const POLL_MS = 100;
const FROZEN = ['--block', '1000', '--block-time-ms', '0'];

async function fake(name, { chain = 'ethereum', args = [] } = {}) {
  const f = await startFake({ name, chain, args: [...FROZEN, ...args] });
  started.push(f);
  f.chain = async (body) => (await fetch(`${f.url}/_control/chain`, { method: 'POST', body: JSON.stringify(body) })).json();
  f.stats = async () => (await fetch(`${f.url}/_control/stats`)).json();
  f.reset = async () => (await fetch(`${f.url}/_control/reset`, { method: 'POST' })).json();
  return f;
}

async function gateway(fakes, { chain = 'ethereum', net = 'eth', server = {}, extra = '' } = {}) {
  const s = await startSluice({ workers: 1, server, extra, networks: { [net]: { chain,
    lines: [`ranking: { probe_interval_ms: ${POLL_MS} }`], endpoints: fakes.map((f) => ({ id: f.name, url: f.url })) } } });
  started.push(s);
  return s;
}


const metric = async (s, re) => { const m = re.exec((await adminGet(s, '/metrics')).text); return m ? Number(m[1]) : NaN; };

// the fake's --logs-varied shapes: 4 addresses, Transfer or Approval, a second topic 0..4, a third on some
const ADDR = [0, 1, 2, 3].map((k) => `0x22222222222222222222222222222222222222${(0x20 + k).toString(16)}`);
const TRANSFER = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';
const APPROVAL = '0x8c5be1e5ebec7d5bd14f71427d1e84f3dd0314c0f7b2291e5b200ac8c7c3b925';
const T1 = (k) => `0x${'0'.repeat(62)}0${k}`;
const FF = `0x${'0'.repeat(62)}ff`;

// 50 distinct filters over geth's rules: one address or several (upper case too), none; topic positions
// with null wildcards, OR arrays, an OR holding a null (any), more positions than some logs have
function filters() {
  const addrs = [undefined, ADDR[0], ADDR[1].toUpperCase().replace('0X', '0x'), [ADDR[2], ADDR[3]], [ADDR[0], ADDR[1], ADDR[2]], []];
  const topics = [undefined, [TRANSFER], [APPROVAL], [null, T1(1)], [[TRANSFER, APPROVAL], T1(2)], [null, null, null],
    [TRANSFER, null, FF], [[APPROVAL, null]], [null, [T1(0), T1(3), T1(4)]]];
  const out = [];
  for (const a of addrs) for (const t of topics) {
    const f = {};
    if (a !== undefined) f.address = a;
    if (t !== undefined) f.topics = t;
    out.push(f);
  }
  return out.slice(0, 50);
}

test('50 distinct logs filters: one eth_getLogs per block for all of them, each client exactly its own logs', async () => {
  const a = await fake('a', { args: ['--logs-per-block', '12', '--logs-varied', '1'] });
  const s = await gateway([a]);
  const fs = filters();
  assert.equal(fs.length, 50);
  const socks = [0, 1, 2, 3, 4].map(() => openWs(`ws://127.0.0.1:${s.port}/eth`));
  for (const c of socks) await c.opened;
  const subs = [];
  for (let i = 0; i < fs.length; i++) {
    const c = socks[i % socks.length];
    const r = await c.rpc('eth_subscribe', ['logs', fs[i]], i + 1);
    assert.ok(r.result, JSON.stringify(r));
    subs.push({ c, id: r.result, filter: fs[i] });
  }
  await waitMetric(s, /sluice_subscriptions\{kind="logs"\} 50\b/);
  await sleep(5 * POLL_MS); // the head the sources started at, behind us
  await a.reset();
  const blocks = [];
  for (let k = 0; k < 4; k++) {
    const moved = await a.chain({ advance: 1 });
    blocks.push({ n: moved.head, hash: moved.hash });
    await sleep(4 * POLL_MS);
  }
  const sluiceCalls = async () => ((await a.stats()).methods.eth_getLogs ?? 0);
  const before = await sluiceCalls();
  // 4 blocks heard: one unfiltered call each (a failed one asked again at most)
  assert.ok(before >= 4 && before <= 5, `eth_getLogs ${before} for 4 blocks and 50 filters`);
  await waitFor(async () => await metric(s, /sluice_subscription_logs_shared\{network="eth"\} (\d+)/) === 1, { what: 'shared in /metrics' });
  // what the provider answers each filter, block by block (asked before the reorg replaces the last)
  const expected = async (blockHash, f) => {
    const r = await post(a.url, call('eth_getLogs', [{ blockHash, ...f }]));
    assert.ok(Array.isArray(r.json?.result), `${JSON.stringify(f)}: ${r.text ?? JSON.stringify(r.json)}`);
    return r.json.result;
  };
  const want = [];
  for (const sub of subs) {
    const w = [];
    for (const b of blocks) w.push(await expected(b.hash, sub.filter));
    want.push(w);
  }
  const asked = await sluiceCalls();
  // a reorg of the last block: its logs again as removed, the new block's once
  const re = await a.chain({ reorg: 1 });
  await sleep(6 * POLL_MS);
  const after = (await sluiceCalls()) - asked;
  assert.ok(after >= 1 && after <= 2, `eth_getLogs ${after} for the replacement block`);
  let total = 0;
  for (let i = 0; i < subs.length; i++) {
    const sub = subs[i];
    const all = [...blocks, { n: re.head, hash: re.hash }];
    const got = sub.c.notes(sub.id).filter((l) => all.some((b) => b.hash === l.blockHash));
    const w = [...want[i][0], ...want[i][1], ...want[i][2], ...want[i][3],
      ...[...want[i][3]].reverse().map((l) => ({ ...l, removed: true })), ...await expected(re.hash, sub.filter)];
    assert.deepEqual(got, w, `filter ${JSON.stringify(sub.filter)}`);
    const keys = got.filter((l) => !l.removed).map((l) => `${l.blockHash}/${l.logIndex}`);
    assert.equal(new Set(keys).size, keys.length, 'once per (blockHash, logIndex)');
    total += got.length;
  }
  assert.ok(total > 200, `only ${total} logs over 50 filters: the filters match too little to tell`);
  for (const c of socks) c.ws.close();
});

test('a few logs filters keep the filtered fetch (fewer bytes): one eth_getLogs per filter and block', async () => {
  const a = await fake('a', { args: ['--logs-per-block', '12', '--logs-varied', '1'] });
  const s = await gateway([a]);
  const c = openWs(`ws://127.0.0.1:${s.port}/eth`);
  await c.opened;
  const fs = filters().slice(1, 4);
  const ids = [];
  for (let i = 0; i < fs.length; i++) ids.push((await c.rpc('eth_subscribe', ['logs', fs[i]], i + 1)).result);
  await sleep(5 * POLL_MS);
  await a.reset();
  const moved = await a.chain({ advance: 1 });
  await waitFor(() => ids.every((id) => c.notes(id).some((l) => l.blockHash === moved.hash)), { what: 'the block\'s logs' });
  await sleep(3 * POLL_MS);
  assert.equal((await a.stats()).methods.eth_getLogs, 3);
  assert.equal(await metric(s, /sluice_subscription_logs_shared\{network="eth"\} (\d+)/), 0);
  c.ws.close();
});

test('a block whose unfiltered logs are over server.max_response_bytes: each source asks it with its filter', async () => {
  const a = await fake('a', { args: ['--logs-per-block', '12', '--logs-varied', '1'] });
  const s = await gateway([a], { server: { max_response_bytes: 3000 } }); // 12 logs: ~5.9 kB; 3 of them ~1.5 kB
  const c = openWs(`ws://127.0.0.1:${s.port}/eth`);
  await c.opened;
  const fs = [[0, [TRANSFER]], [1, [APPROVAL]], [2, [TRANSFER]], [3, [APPROVAL]], [0, [[TRANSFER, APPROVAL]]]]
    .map(([k, topics]) => ({ address: ADDR[k], topics }));
  const ids = [];
  for (let i = 0; i < fs.length; i++) ids.push((await c.rpc('eth_subscribe', ['logs', fs[i]], i + 1)).result);
  await sleep(5 * POLL_MS);
  const moved = await a.chain({ advance: 1 });
  for (let i = 0; i < fs.length; i++) {
    const want = (await post(a.url, call('eth_getLogs', [{ blockHash: moved.hash, ...fs[i] }]))).json.result;
    assert.ok(want.length > 0);
    await waitFor(() => c.notes(ids[i]).filter((l) => l.blockHash === moved.hash).length >= want.length,
      { what: `the logs of ${JSON.stringify(fs[i])}` });
    assert.deepEqual(c.notes(ids[i]).filter((l) => l.blockHash === moved.hash), want);
  }
  c.ws.close();
});

test('300 distinct accountSubscribe: getMultipleAccounts, at most 3 calls a round, no getAccountInfo', async () => {
  const a = await fake('a', { chain: 'solana' });
  const s = await gateway([a], { chain: 'solana', net: 'solana' });
  const c = openWs(`ws://127.0.0.1:${s.port}/solana`);
  await c.opened;
  const CLOCK = 'SysvarC1ock11111111111111111111111111111111';
  const keys = [CLOCK];
  while (keys.length < 300) keys.push(bs58.encode(randomBytes(32)));
  const ids = [];
  for (let i = 0; i < keys.length; i++) {
    const r = await c.rpc('accountSubscribe', [keys[i], { commitment: 'confirmed', encoding: 'base64' }], i + 1);
    assert.equal(typeof r.result, 'number', JSON.stringify(r));
    ids.push(r.result);
  }
  await waitMetric(s, /sluice_subscriptions\{kind="account"\} 300\b/);
  await sleep(3 * POLL_MS);
  await a.reset();
  const t0 = Date.now();
  const head = (await a.chain({ advance: 2 })).head;
  await waitFor(() => c.notes(ids[0]).some((n) => n.context.slot === head), { what: `the clock at ${head}` });
  await sleep(10 * POLL_MS);
  const rounds = (Date.now() - t0) / POLL_MS + 1;
  const st = await a.stats();
  const multi = st.methods.getMultipleAccounts ?? 0;
  assert.equal(st.methods.getAccountInfo ?? 0, 0);
  assert.ok(multi >= 3 && multi <= 3 * Math.ceil(rounds), `getMultipleAccounts ${multi} over ${rounds.toFixed(1)} rounds`);
  // notifications as before: the clock once per change, in getAccountInfo's shape; the others (null) never
  const clock = c.notes(ids[0]);
  assert.equal(clock.length, 1, JSON.stringify(clock));
  assert.equal(Buffer.from(clock[0].value.data[0], 'base64').readBigUInt64LE(0), BigInt(head));
  assert.equal(clock[0].value.owner, 'Sysvar1111111111111111111111111111111111111');
  assert.ok(ids.slice(1).every((id) => c.notes(id).length === 0));
  await waitFor(async () => await metric(s, /sluice_subscription_upstream_calls_total\{network="solana",kind="account"\} (\d+)/) >= multi,
    { what: 'the account calls in /metrics' });
  c.ws.close();
});

test('300 signatureSubscribe: getSignatureStatuses in 2 calls a round; the landed one notified once', async () => {
  const a = await fake('a', { chain: 'solana' });
  const s = await gateway([a], { chain: 'solana', net: 'solana' });
  const c = openWs(`ws://127.0.0.1:${s.port}/solana`);
  await c.opened;
  const tx = 'a transaction among many';
  const sig = bs58.encode(createHash('sha512').update(tx).digest());
  const sigs = [sig];
  while (sigs.length < 300) sigs.push(bs58.encode(randomBytes(64)));
  const ids = [];
  for (let i = 0; i < sigs.length; i++) ids.push((await c.rpc('signatureSubscribe', [sigs[i], { commitment: 'confirmed' }], i + 1).catch((e) => { throw new Error(`subscribe ${i}: ${e.message} ${s.logs().slice(-1500)}`); })).result);
  await waitMetric(s, /sluice_subscriptions\{kind="signature"\} 300\b/);
  await a.reset();
  const t0 = Date.now();
  assert.equal((await post(s.url('solana'), call('sendTransaction', [tx]))).json.result, sig);
  const got = await c.next((m) => m.method === 'signatureNotification').catch(async (e) => {
    throw new Error(`${e.message}: ${JSON.stringify((await a.stats()).methods)} ${c.seen.slice(-2).map((m) => JSON.stringify(m)).join(' ')}`);
  });
  assert.equal(got.params.subscription, ids[0]);
  assert.deepEqual(got.params.result.value, { err: null });
  await sleep(5 * POLL_MS);
  const rounds = (Date.now() - t0) / POLL_MS + 1;
  const st = await a.stats();
  const statuses = st.methods.getSignatureStatuses ?? 0;
  assert.ok(statuses >= 2 && statuses <= 2 * Math.ceil(rounds), `getSignatureStatuses ${statuses} over ${rounds.toFixed(1)} rounds`);
  assert.equal(c.notes(ids[0]).length, 1);
  await waitMetric(s, /sluice_subscriptions\{kind="signature"\} 299\b/);
  c.ws.close();
});

test('server.ws_max_sources_per_identity: a caller\'s distinct sources are capped, joining a running one is free', async () => {
  const a = await fake('a');
  const sha = (k) => createHash('sha256').update(k).digest('hex');
  const K1 = 'sl_sourcecapkey0123456789abcdef', K2 = 'sl_othercallerkey0123456789abcd';
  const s = await gateway([a], { server: { ws_max_sources_per_identity: 3 },
    extra: `tiers: { t: { per_second: 1000 } }\nkeys:\n  - { sha256: "${sha(K1)}", tier: t, name: one }\n  - { sha256: "${sha(K2)}", tier: t, name: two }` });
  const c1 = openWs(`ws://127.0.0.1:${s.port}/eth/${K1}`), c2 = openWs(`ws://127.0.0.1:${s.port}/eth/${K2}`);
  await c1.opened; await c2.opened;
  const f = (k) => ({ address: ADDR[k] });
  for (let k = 0; k < 3; k++) assert.ok((await c1.rpc('eth_subscribe', ['logs', f(k)], k + 1)).result);
  const over = await c1.rpc('eth_subscribe', ['logs', f(3)], 4);
  assert.equal(over.error?.code, -32005, JSON.stringify(over));
  assert.match(over.error.message, /server\.ws_max_sources_per_identity/);
  // the same filter again joins its running source: no new source, allowed
  assert.ok((await c1.rpc('eth_subscribe', ['logs', f(0)], 5)).result);
  // another caller still subscribes, to new sources and to the first caller's
  assert.ok((await c2.rpc('eth_subscribe', ['logs', f(3)], 1)).result);
  assert.ok((await c2.rpc('eth_subscribe', ['logs', f(1)], 2)).result);
  assert.ok((await c2.rpc('eth_subscribe', ['newHeads'], 3)).result);
  // a new filter of the first caller: refused again; one of its sources stops (its only subscriber goes): room
  const more = await c1.rpc('eth_subscribe', ['logs', { topics: [TRANSFER] }], 6);
  assert.equal(more.error?.code, -32005);
  const third = c1.seen.find((m) => m.id === 3).result;
  assert.equal((await c1.rpc('eth_unsubscribe', [third], 7)).result, true);
  assert.ok((await c1.rpc('eth_subscribe', ['logs', f(3)], 8)).result, 'joins the second caller\'s source');
  assert.ok((await c1.rpc('eth_subscribe', ['logs', { topics: [TRANSFER] }], 9)).result);
  // a source the first caller started and the second joined: when the first leaves it, the second is charged
  assert.equal((await c1.rpc('eth_subscribe', ['logs', { topics: [APPROVAL] }], 10)).error?.code, -32005);
  assert.ok((await c2.rpc('eth_subscribe', ['logs', f(0)], 4)).result);
  for (const id of [1, 5]) assert.equal((await c1.rpc('eth_unsubscribe', [c1.seen.find((m) => m.id === id).result], 20 + id)).result, true);
  assert.ok((await c1.rpc('eth_subscribe', ['logs', { topics: [APPROVAL] }], 11)).result, 'room again: f(0) is the second caller\'s now');
  await waitMetric(s, /sluice_subscriptions_refused_total 3\b/);
  c1.ws.close(); c2.ws.close();
});
