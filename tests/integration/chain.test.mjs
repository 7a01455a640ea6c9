// The chain view in routing (issue 21): three fake providers at different,
// frozen heads. A `latest` read goes only to an endpoint within
// max_lag_blocks of the head, a call for a block only the highest endpoint
// has is answered by it, and eth_blockNumber never goes backwards.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startFake, startSluice, post, call, sleep, waitFor, adminGet, events } from '../lib/harness.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const TOP = 1000100;
const FAST = 'ranking: { probe_interval_ms: 200 }';
const ADDR = '0x000000000000000000000000000000000000dead';

const frozenAt = (name, head) => startFake({ name, args: ['--block', String(head), '--block-time-ms', '0'] });

async function endpointsView(s) {
  return Object.fromEntries((await adminGet(s, '/admin/endpoints')).json.map((e) => [e.id, e]));
}

// c is 5 blocks behind (within ranking.max_lag, beyond max_lag_blocks: 2) and
// the fastest, so the ranking alone would send it everything; b is 2 behind.
async function threeHeads() {
  const c = await frozenAt('c', TOP - 5), a = await frozenAt('a', TOP), b = await frozenAt('b', TOP - 2);
  started.push(a, b, c);
  await a.setMode('slow', { delay_ms: 40 });
  await b.setMode('slow', { delay_ms: 40 });
  const s = await startSluice({ workers: 2, networks: { eth: {
    lines: [FAST, 'hedge: { enabled: false }'],
    endpoints: [{ id: 'c', url: c.url }, { id: 'a', url: a.url }, { id: 'b', url: b.url }] } } });
  started.push(s);
  await waitFor(async () => { const v = await endpointsView(s); return v.c.score?.lag === 5 && v.b.score?.lag === 2 && v.c.position === 1; },
    { timeoutMs: 8000, what: 'probes saw the three heads, c ranked first' });
  await sleep(300); // both workers' ticks have fed the heads to their views
  return { a, b, c, s };
}

test('latest reads skip an endpoint past max_lag_blocks; a block only the top has is answered by it', async () => {
  const { a, b, c, s } = await threeHeads();
  await Promise.all([a.reset(), b.reset(), c.reset()]);
  // a read of a tag the view does not gate still follows the ranking: c
  const fin = await post(s.url('eth'), call('eth_getBlockByNumber', ['finalized', false]));
  assert.equal(fin.headers.get('x-sluice-endpoint'), 'c');
  const seen = {};
  for (let i = 0; i < 40; i++) {
    const r = await post(s.url('eth'), call('eth_getBalance', [ADDR, 'latest'], i));
    assert.equal(r.status, 200, r.text);
    const ep = r.headers.get('x-sluice-endpoint');
    seen[ep] = (seen[ep] ?? 0) + 1;
  }
  console.log('latest eth_getBalance answered by', JSON.stringify(seen));
  assert.equal(seen.c ?? 0, 0, 'no latest read from the endpoint 5 blocks behind');
  assert.equal((await c.stats()).methods.eth_getBalance ?? 0, 0, 'c was never sent one');

  const top = '0x' + TOP.toString(16);
  for (let i = 0; i < 5; i++) {
    const r = await post(s.url('eth'), call('eth_getBlockByNumber', [top, false], i));
    assert.equal(r.headers.get('x-sluice-endpoint'), 'a', r.text);
    assert.equal(r.json.result?.number, top, r.text);
  }
  const bm = (await b.stats()).methods.eth_getBlockByNumber ?? 0, cm = (await c.stats()).methods.eth_getBlockByNumber ?? 0;
  assert.equal(bm, 0, 'b (2 behind) was not asked for the top block');
  assert.equal(cm, 1, 'c got only the finalized read');
  // a block nobody has: everyone may try, and null is the answer
  const r = await post(s.url('eth'), call('eth_getBlockByNumber', ['0x' + (TOP + 50).toString(16), false]));
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.result, null);
});

// a has the head but takes two calls at a time: the rest spill to b and c
async function spillOver(a, b, c) {
  const s = await startSluice({ workers: 2, networks: { eth: {
    lines: [FAST, 'hedge: { enabled: false }'],
    endpoints: [{ id: 'a', url: a.url, max_inflight: 2 }, { id: 'b', url: b.url }, { id: 'c', url: c.url }] } } });
  started.push(s);
  return s;
}

// 200 eth_blockNumber calls, ten at a time (several connections: both
// workers serve), each wave after the last: an answer below one of an
// earlier wave went backwards.
async function blockNumberWaves(s) {
  const byEp = {}, heads = [];
  let floor = 0, backwards = 0;
  for (let wave = 0; wave < 20; wave++) {
    const rs = await Promise.all(Array.from({ length: 10 }, (_, i) => post(s.url('eth'), call('eth_blockNumber', [], wave * 10 + i))));
    let top = floor;
    for (const r of rs) {
      assert.equal(r.status, 200, r.text);
      const n = Number(BigInt(r.json.result));
      if (n < floor) backwards++;
      top = Math.max(top, n);
      heads.push(n);
      const ep = r.headers.get('x-sluice-endpoint');
      byEp[ep] = (byEp[ep] ?? 0) + 1;
    }
    floor = top;
  }
  return { byEp, heads, backwards };
}

test('200 eth_blockNumber calls over three endpoints at different heads never go backwards', async () => {
  const a = await frozenAt('a', TOP), b = await frozenAt('b', TOP - 1), c = await frozenAt('c', TOP - 2);
  started.push(a, b, c);
  await a.setMode('slow', { delay_ms: 30 });
  const s = await spillOver(a, b, c);
  await waitFor(async () => { const v = await endpointsView(s); return v.c.score?.lag === 2 && v.b.score?.lag === 1; },
    { timeoutMs: 8000, what: 'probes saw the three heads' });
  await sleep(300);
  const { byEp, heads, backwards } = await blockNumberWaves(s);
  console.log('eth_blockNumber answered by', JSON.stringify(byEp), 'heads seen', JSON.stringify([...new Set(heads)]));
  assert.equal(backwards, 0);
  assert.ok((byEp.b ?? 0) + (byEp.c ?? 0) > 0, 'some calls were answered by the lower endpoints');
  assert.deepEqual([...new Set(heads)], [TOP], 'every call got the network head');
  // the operator sees each endpoint's head, the network's, and the head served
  const v = await endpointsView(s);
  assert.deepEqual([v.a.head, v.b.head, v.c.head], [TOP, TOP - 1, TOP - 2]);
  assert.equal(v.a.finalized, null, 'finalized is not probed yet');
  const net = (await adminGet(s, '/admin/networks')).json.find((x) => x.network === 'eth');
  assert.equal(net.head, TOP);
  assert.equal(net.served_head, TOP);
});

test('heads that move: eth_blockNumber never goes backwards across two workers', async () => {
  // three chains a block apart, each moving on every 150 ms
  const moving = (name, head) => startFake({ name, args: ['--block', String(head), '--block-time-ms', '150'] });
  const a = await moving('a', TOP), b = await moving('b', TOP - 1), c = await moving('c', TOP - 2);
  started.push(a, b, c);
  await a.setMode('slow', { delay_ms: 20 });
  const s = await spillOver(a, b, c);
  await sleep(600);
  const { byEp, heads, backwards } = await blockNumberWaves(s);
  const first = heads[0], last = Math.max(...heads);
  console.log('moving heads: answered by', JSON.stringify(byEp), `heads ${first}..${last}`, `backwards ${backwards}`);
  assert.equal(backwards, 0, 'no answer below one served in an earlier wave');
  assert.ok(last > first, 'the head moved during the test');
});

test('Solana: minContextSlot goes to an endpoint that reached it; getSlot is the network slot', async () => {
  const SLOT = 300000000;
  const sol = (name, slot) => startFake({ name, chain: 'solana', args: ['--block', String(slot), '--block-time-ms', '0'] });
  const b = await sol('b', SLOT - 5), a = await sol('a', SLOT);
  started.push(a, b);
  await a.setMode('slow', { delay_ms: 40 }); // b, 5 slots behind (within max_lag_slots), ranks first
  const s = await startSluice({ workers: 2, networks: { sol: { chain: 'solana',
    lines: [FAST, 'hedge: { enabled: false }'], endpoints: [{ id: 'b', url: b.url }, { id: 'a', url: a.url }] } } });
  started.push(s);
  await waitFor(async () => { const v = await endpointsView(s); return v.b.position === 1 && v.a.head === SLOT && v.b.head === SLOT - 5; },
    { timeoutMs: 8000, what: 'probes saw both slots, b ranked first' });
  await sleep(300);
  const plain = await post(s.url('sol'), call('getBalance', ['11111111111111111111111111111111']));
  assert.equal(plain.headers.get('x-sluice-endpoint'), 'b', 'within max_lag_slots: the ranking decides');
  for (let i = 0; i < 5; i++) {
    const r = await post(s.url('sol'), call('getBalance', ['11111111111111111111111111111111', { minContextSlot: SLOT }], i));
    assert.equal(r.headers.get('x-sluice-endpoint'), 'a', r.text);
    assert.equal(r.json.error, undefined, r.text);
  }
  const slots = new Set();
  for (let i = 0; i < 10; i++) slots.add((await post(s.url('sol'), call('getSlot', [], i))).json.result);
  console.log('solana getSlot answers', JSON.stringify([...slots]));
  assert.deepEqual([...slots], [SLOT], "b's answers carry the network's slot");
});

test('an endpoint on another chain with a higher head never answers a client, and shows excluded with its event', async () => {
  const a = await frozenAt('a', TOP), b = await frozenAt('b', TOP - 1);
  const w = await startFake({ name: 'w', args: ['--chain-id', '0x5', '--block', String(TOP + 500), '--block-time-ms', '0'] });
  started.push(a, b, w);
  await a.setMode('slow', { delay_ms: 30 });
  await b.setMode('slow', { delay_ms: 30 }); // w, the fastest, would rank first
  const s = await startSluice({ workers: 2, networks: { eth: {
    lines: [FAST, 'hedge: { enabled: false }', 'chain_id: 1'],
    endpoints: [{ id: 'w', url: w.url }, { id: 'a', url: a.url }, { id: 'b', url: b.url }] } } });
  started.push(s);
  const v = await waitFor(async () => { const x = await endpointsView(s); return x.w.excluded?.startsWith('wrong chain') && x; },
    { timeoutMs: 3000, what: 'w excluded as on the wrong chain' });
  console.log('wrong chain excluded:', v.w.excluded, 'usable', v.w.usable);
  assert.equal(v.w.usable, false);
  await w.reset();
  const seen = {};
  for (let i = 0; i < 20; i++) {
    const r = await post(s.url('eth'), call(i % 2 ? 'eth_blockNumber' : 'eth_getBalance', i % 2 ? [] : [ADDR, 'latest'], i));
    assert.equal(r.status, 200, r.text);
    const ep = r.headers.get('x-sluice-endpoint');
    seen[ep] = (seen[ep] ?? 0) + 1;
    if (i % 2) assert.equal(Number(BigInt(r.json.result)), TOP, "the network's head, not the other chain's");
  }
  console.log('answered by', JSON.stringify(seen));
  assert.equal(seen.w ?? 0, 0, 'no client call answered by the wrong-chain endpoint');
  const st = await w.stats();
  assert.equal((st.methods.eth_getBalance ?? 0), 0, 'none sent to it');
  const evs = (await events(s)).filter((e) => e.kind === 'endpoint_wrong_chain');
  console.log('events', JSON.stringify(evs.map((e) => e.reason)));
  assert.equal(evs.length, 1, 'one event for the change');
  assert.equal(evs[0].endpoint, 'w');
  assert.match(evs[0].reason, /wrong chain: 0x5 \(want 0x1\)/);
});
