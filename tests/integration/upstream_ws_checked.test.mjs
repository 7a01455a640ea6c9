// One endpoint's word is not the chain's (issue 30, the upstream WebSocket
// and learned-chain part): each upstream socket is asked its chain after the
// Upgrade and refused when it is another than the network's; a learned
// chain that every endpoint now contradicts heals at the next start; a
// pushed head that changes the ring is confirmed by an HTTP read first, and
// reorg events are one a minute per network. Real sluice processes over fake
// providers (tests/fakeprovider: --chain-id, its WebSocket, /_control/ws).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { startFake, startSluice, renderConfig, tempDir, post, call, sleep, waitFor, adminGet, events, SLUICE_BIN } from '../lib/harness.mjs';
import { openWs } from '../lib/wsclient.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const TOP = 1000100;
const txHash = (n) => '0x' + n.toString(16).padStart(64, 'e');

// A frozen fake with its WebSocket's /_control/ws.
async function upstream(name, more = []) {
  const f = await startFake({ name, args: ['--block', String(TOP), '--block-time-ms', '0', ...more] });
  started.push(f);
  const ctl = async (body) => (await fetch(`${f.url}/_control/ws`, { method: 'POST', body: body ? JSON.stringify(body) : '' })).json();
  return Object.assign(f, { ctl, wsUrl: `"${f.url.replace('http', 'ws')}/"`, push: (kind, result) => ctl({ push: kind, result }) });
}

const endpointsView = async (s) => Object.fromEntries((await adminGet(s, '/admin/endpoints')).json.map((e) => [e.id, e]));
const networkView = async (s) => (await adminGet(s, '/admin/networks')).json.find((n) => n.network === 'eth');
const kinds = async (s, kind) => (await events(s)).filter((e) => e.kind === kind);

test('a ws_url on another chain is refused: never subscribed, its heads and pending transactions reach nobody', async () => {
  const a = await upstream('a'), b = await upstream('b');
  const w = await upstream('w5', ['--chain-id', '0x5']); // a's ws_url: another chain's node
  const s = await startSluice({ workers: 2, networks: { eth: {
    lines: ['chain_id: 1', 'ranking: { probe_interval_ms: 500 }'],
    endpoints: [{ id: 'a', url: a.url, ws_url: w.wsUrl }, { id: 'b', url: b.url, ws_url: b.wsUrl }] } } });
  started.push(s);
  const ev = await waitFor(async () => (await kinds(s, 'upstream_ws_wrong_chain'))[0], { timeoutMs: 8000, what: 'upstream_ws_wrong_chain' });
  console.log('refused:', ev.reason);
  assert.equal(ev.endpoint, 'a');
  assert.match(ev.reason, /wrong chain: 0x5 \(want 0x1\)/);
  assert.doesNotMatch(ev.reason, /127\.0\.0\.1|ws:/, 'no URL in the event');
  await waitFor(async () => (await endpointsView(s)).a.ws.state === 'wrong_chain', { what: "a's ws shown as wrong_chain" });
  await waitFor(async () => (await endpointsView(s)).b.ws.state === 'connected', { what: "b's ws connected" });
  assert.equal((await endpointsView(s)).a.usable, true, "a's url is on the right chain: it still serves");

  // a client's newPendingTransactions: never on the refused socket
  const raw = openWs(`ws://127.0.0.1:${s.port}/eth`);
  started.push({ stop: async () => raw.ws.close() });
  await raw.opened;
  const sub = (await raw.rpc('eth_subscribe', ['newPendingTransactions'], 1)).result;
  assert.match(sub, /^0x[0-9a-f]{32}$/);
  await waitFor(async () => (await b.ctl()).live.pending === 1, { what: 'subscribed upstream at b' });
  for (let i = 1; i <= 3; i++) {
    await w.push('pending', txHash(100 + i)); // the other chain's
    await b.push('pending', txHash(i));
    await w.push('heads', { number: '0x' + (TOP + 500 + i).toString(16), hash: txHash(900 + i), parentHash: txHash(899 + i) });
  }
  await waitFor(() => raw.notes(sub).length === 3, { what: "b's three hashes" });
  await sleep(500);
  assert.deepEqual(raw.notes(sub), [1, 2, 3].map(txHash), "only b's: none of the other chain's");
  const wr = await w.ctl();
  console.log('the other chain\'s socket was asked:', JSON.stringify({ upgrades: wr.upgrades, subscribes: wr.subscribes }));
  assert.ok(wr.upgrades >= 1, 'its socket was opened (and asked its chain)');
  assert.equal(Object.values(wr.subscribes).reduce((x, y) => x + y, 0), 0, 'never subscribed to anything');
  assert.equal((await networkView(s)).head, TOP, 'its heads never moved the view');
  // retried as a lost socket is, one event until a socket is subscribed again
  await sleep(1500);
  assert.ok((await w.ctl()).upgrades >= 2, 'tried again after the backoff');
  assert.equal((await kinds(s, 'upstream_ws_wrong_chain')).filter((e) => e.endpoint === 'a').length <= 2, true,
    'one event per worker that tried it, not one per try');
});

test('Solana: a ws_url on another cluster (another genesis hash) is refused the same way', async () => {
  const OTHER = '4uhcVJyU9pJkvQyS88uRDiswHXSCkY3zQawwpjk2NsNY'; // testnet's
  const a = await startFake({ name: 'sa', chain: 'solana', args: ['--block', '5000', '--block-time-ms', '0'] });
  const w = await startFake({ name: 'sw', chain: 'solana', args: ['--block', '5000', '--block-time-ms', '0', '--genesis-hash', OTHER] });
  started.push(a, w);
  const s = await startSluice({ workers: 1, networks: { eth: { chain: 'solana',
    lines: ['ranking: { probe_interval_ms: 500 }'], endpoints: [{ id: 'a', url: a.url, ws_url: `"${w.url.replace('http', 'ws')}/"` }] } } });
  started.push(s);
  const ev = await waitFor(async () => (await kinds(s, 'upstream_ws_wrong_chain'))[0], { timeoutMs: 8000, what: 'upstream_ws_wrong_chain' });
  assert.match(ev.reason, new RegExp(`wrong chain: ${OTHER} \\(want 5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d\\)`));
  assert.equal((await endpointsView(s)).a.ws.state, 'wrong_chain');
  const wr = await (await fetch(`${w.url}/_control/ws`, { method: 'POST', body: '' })).json();
  assert.equal(wr.subscribes.slot, 0, 'never subscribed to slots');
});

function configFile(dir, endpoints) {
  const file = path.join(dir, `sluice-${endpoints.map((e) => e.id).join('')}.yaml`);
  writeFileSync(file, renderConfig({ workers: 1, statePath: path.join(dir, 'state'),
    networks: { eth: { lines: ['ranking: { probe_interval_ms: 300 }'], endpoints } } }));
  return file;
}

test('a learned chain heals: 2 of 3 URLs on the wrong chain at the first start, fixed later: re-learned, served again', async () => {
  const right = [await upstream('r1'), await upstream('r2'), await upstream('r3')];
  const wrong = [await upstream('x1', ['--chain-id', '0x5']), await upstream('x2', ['--chain-id', '0x5'])];
  const dir = tempDir();
  const statePath = path.join(dir, 'state');
  const first = await startSluice({ workers: 1, statePath, networks: { eth: {
    lines: ['ranking: { probe_interval_ms: 300 }'],
    endpoints: [{ id: 'a', url: wrong[0].url }, { id: 'b', url: wrong[1].url }, { id: 'c', url: right[0].url }] } } });
  started.push(first);
  assert.equal((await networkView(first)).chain_id, '0x5', 'the majority of the first start: the wrong chain, learned');
  await first.stop();
  started.splice(started.indexOf(first), 1);

  // the URLs fixed: --check --connect says the kept chain will be re-learned
  const fixed = [{ id: 'a', url: right[1].url }, { id: 'b', url: right[2].url }, { id: 'c', url: right[0].url }];
  const check = spawnSync(SLUICE_BIN, ['--check', '--connect', '-c', configFile(dir, fixed)], { encoding: 'utf8', timeout: 20000 });
  console.log('check:', check.stdout.trim().split('\n').filter((l) => /chain/.test(l)).join(' | '));
  assert.equal(check.status, 0, check.stdout + check.stderr);
  assert.match(check.stdout, /network eth: chain 0x5 was learned earlier and is kept in state, but every endpoint that answers now says 0x1 \(a gave 0x1, b gave 0x1, c gave 0x1\): it is re-learned at start/);

  const again = await startSluice({ workers: 1, statePath, networks: { eth: {
    lines: ['ranking: { probe_interval_ms: 300 }'], endpoints: fixed } } });
  started.push(again);
  assert.match(again.logs(), /network eth: chain 0x5 learned earlier; every endpoint that answers now says 0x1 \(a gave 0x1, b gave 0x1, c gave 0x1\): re-learned/);
  const line = again.logs().split('\n').find((l) => /re-learned/.test(l));
  assert.doesNotMatch(line, /127\.0\.0\.1|http/, 'endpoints named by id, never URL');
  const ev = (await kinds(again, 'chain_relearned'))[0];
  assert.ok(ev, 'the chain_relearned event');
  assert.match(ev.reason, /chain 0x5 learned earlier; every endpoint that answers now says 0x1/);
  const net = await networkView(again);
  assert.equal(net.chain_id, '0x1');
  assert.equal(net.chain_id_source, 'learned');
  const r = await waitFor(async () => { const x = await post(again.url('eth'), call('eth_blockNumber', [], 1)); return x.status === 200 && x; },
    { timeoutMs: 5000, what: 'served again' });
  assert.equal(Number(BigInt(r.json.result)), TOP);
  // a second restart: nothing to heal, one event in all
  await again.stop();
  started.splice(started.indexOf(again), 1);
  const third = await startSluice({ workers: 1, statePath, networks: { eth: {
    lines: ['ranking: { probe_interval_ms: 300 }'], endpoints: fixed } } });
  started.push(third);
  assert.match(third.logs(), /network eth: chain 0x1 \(learned earlier from its endpoints, kept in state\)/);
  assert.equal((await kinds(third, 'chain_relearned')).length, 1, 'the one event, kept in the log');
});

test('a learned chain heals from the probes: every endpoint moved to another chain while running; a ws_url left on the old one is refused then', async () => {
  const wrong = [await upstream('y1', ['--chain-id', '0x5']), await upstream('y2', ['--chain-id', '0x5'])];
  const right = [await upstream('z1'), await upstream('z2')];
  const statePath = path.join(tempDir(), 'state');
  // a's ws_url stays on y1 (the old chain) when its url is fixed
  const conf = (ups) => ({ workers: 1, statePath, networks: { eth: { lines: ['ranking: { probe_interval_ms: 300 }'],
    endpoints: ups.map((u, i) => ({ id: 'ab'[i], url: u.url, ...(i === 0 ? { ws_url: wrong[0].wsUrl } : {}) })) } } });
  const s = await startSluice(conf(wrong));
  started.push(s);
  assert.equal((await networkView(s)).chain_id, '0x5');
  await waitFor(async () => (await endpointsView(s)).a.ws?.state === 'connected', { what: "a's ws_url accepted on 0x5" });
  // the URLs fixed by a reload (SIGHUP): both endpoints now answer 0x1, slowly
  // enough that the new worker's ws_url stream is open (on 0x5) before the heal
  for (const z of right) await z.setMode('slow', { delay_ms: 2500, method: 'eth_chainId' });
  writeFileSync(s.file, renderConfig(conf(right)) + 'cache: { enabled: false }\n');
  s.child.kill('SIGHUP');
  const ev = await waitFor(async () => (await kinds(s, 'chain_relearned'))[0], { timeoutMs: 15000, what: 'chain_relearned from the probes' });
  console.log("a's ws when the chain healed:", (await endpointsView(s)).a.ws.state);
  console.log('relearned at run time:', ev.reason);
  assert.match(ev.reason, /chain 0x5 learned earlier; every endpoint that answers now says 0x1 \(2 of 2 endpoints, from the probes\)/);
  await waitFor(async () => (await networkView(s)).chain_id === '0x1', { what: 'the network shows 0x1' });
  const r = await waitFor(async () => { const x = await post(s.url('eth'), call('eth_blockNumber', [], 1)); return x.status === 200 && x; },
    { timeoutMs: 5000, what: 'served again' });
  assert.equal(Number(BigInt(r.json.result)), TOP);
  // the socket accepted on the old chain is asked again, and refused now
  const refused = await waitFor(async () => (await kinds(s, 'upstream_ws_wrong_chain'))[0], { timeoutMs: 8000, what: "a's ws_url refused on the new chain" });
  assert.match(refused.reason, /wrong chain: 0x5 \(want 0x1\)/);
  await waitFor(async () => (await endpointsView(s)).a.ws.state === 'wrong_chain', { what: "a's ws shown wrong_chain" });
});

const rnd = (i) => '0x' + createHash('sha256').update(`forged ${i}`).digest('hex');
const block = async (f, n) => (await post(f.url, call('eth_getBlockByNumber', ['0x' + n.toString(16), false], 1))).json.result;
const chainCmd = async (f, body) => (await fetch(`${f.url}/_control/chain`, { method: 'POST', body: JSON.stringify(body) })).json();

test('3,000 forged pushed heads: dropped unconfirmed, the ring and head unmoved, a few events; a real pushed reorg is confirmed and moves it', async () => {
  const a = await upstream('a');
  const s = await startSluice({ workers: 2, networks: { eth: {
    lines: ['chain_id: 1', 'ranking: { probe_interval_ms: 60000 }'], endpoints: [{ id: 'a', url: a.url, ws_url: a.wsUrl }] } } });
  started.push(s);
  const subscribed = () => waitFor(async () => (await endpointsView(s)).a.ws.state === 'connected' && (await a.ctl()).live.heads === 1,
    { timeoutMs: 40000, what: 'the stream subscribed' });
  await subscribed();
  const real = await block(a, TOP);
  await a.push('heads', real); // the ring holds TOP's real hash
  await waitFor(async () => (await endpointsView(s)).a.ws.heads_received >= 1, { what: 'the real head' });
  const before = (await events(s)).length;

  const t0 = Date.now();
  let sent = 0;
  for (let i = 0; i < 3000; i += 50) {
    await Promise.all(Array.from({ length: 50 }, (_, k) => {
      const n = i + k;
      // another block at the height held, a child of a block nobody has, or a height alone
      const forged = n % 10 === 5 ? { number: '0x' + (TOP + 50).toString(16) }
        : n % 2 === 0 ? { number: real.number, hash: rnd(n), parentHash: real.parentHash }
          : { number: '0x' + (TOP + 1 + (n % 7)).toString(16), hash: rnd(n), parentHash: rnd(n + 1e6) };
      return a.push('heads', forged).then((r) => { sent += r.sent ?? 0; });
    }));
  }
  console.log(`3000 forged heads pushed in ${Date.now() - t0} ms, ${sent} delivered to a subscribed socket`);
  await sleep(1000);
  const evs = (await events(s)).slice(before);
  console.log('events after them:', JSON.stringify(evs.map((e) => [e.kind, e.reason])));
  assert.ok(sent >= 1, 'at least one forged head reached sluice');
  assert.ok(evs.length <= 6, `a few events, not thousands (${evs.length})`);
  assert.equal(evs.filter((e) => e.kind === 'reorg').length, 0, 'no reorg event');
  const net = await networkView(s);
  assert.equal(net.head, TOP, 'the head did not move');
  assert.equal(net.reorgs, 0, 'the ring did not move');
  const ws = (await endpointsView(s)).a.ws;
  assert.ok(ws.heads_unconfirmed >= 1, JSON.stringify(ws));
  assert.ok(evs.some((e) => e.kind === 'upstream_ws_lost' && /that its url does not confirm/.test(e.reason)), 'the stream distrusted: closed');

  // a height alone (no hash) is read first too: no block there, dropped
  await subscribed();
  await sleep(300);
  assert.equal((await a.push('heads', { number: '0x' + (TOP + 50).toString(16) })).sent, 1);
  await sleep(500);
  assert.equal((await networkView(s)).head, TOP, 'a forged height alone did not move the head');

  // real reorgs, pushed and confirmed by the HTTP read: the ring moves, each
  // is counted, one reorg event (the minute's; the others folded into the next)
  for (let r = 1; r <= 3; r++) {
    await subscribed();
    await sleep(300); // a confirmation read at most every 250 ms per stream
    const c = await chainCmd(a, { reorg: 1 });
    const nb = await block(a, TOP);
    assert.equal(nb.hash, c.hash);
    await a.push('heads', nb);
    await waitFor(async () => (await networkView(s)).reorgs === r, { timeoutMs: 5000, what: `reorg ${r} confirmed and counted` });
  }
  const reorgs = (await events(s)).filter((e) => e.kind === 'reorg');
  console.log('reorg events:', JSON.stringify(reorgs.map((e) => [e.depth, e.reorgs, e.reason])));
  assert.equal(reorgs.length, 1, 'one reorg event a minute per network');
  assert.equal(reorgs[0].reorgs, 1);
  assert.match(reorgs[0].reason, new RegExp(`reorg of depth 1 at height ${TOP}`));
  assert.equal((await networkView(s)).head, TOP);
});
