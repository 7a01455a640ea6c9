// One endpoint's word is not the chain's (issue 30), tried from outside with
// sluice on its defaults (cache on, probes at their default intervals):
// - three providers one block apart, each moving a block a second on its own
//   timer, the top one sometimes slow enough to be hedged and sometimes
//   failing: 500 eth_blockNumber over HTTP, batches and WebSocket, none below
//   an answer given before it;
// - a provider claiming a head 9 (then 100) blocks ahead of two honest ones
//   that agree: it gets no `latest` read and no write, the head served stays
//   the honest one, and nothing goes back when it dies;
// - a provider reporting finalized = head: its word makes no tip block final,
//   so after a reorg on every provider the new block is served, not a cached
//   replaced one.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startFake, startSluice, post, call, sleep, waitFor, adminGet, events } from '../lib/harness.mjs';
import { openWs } from '../lib/wsclient.mjs';
import { startRedis, redisAvailable } from '../lib/redis.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const TOP = 3000000;
const ADDR = '0x000000000000000000000000000000000000dead';

async function chain(fake, body) {
  const r = await fetch(`${fake.url}/_control/chain`, { method: 'POST', body: JSON.stringify(body) });
  return r.json();
}

const fake = async (name, args) => { const f = await startFake({ name, args }); started.push(f); return f; };
const frozen = (name, head, more = []) => fake(name, ['--block', String(head), '--block-time-ms', '0', ...more]);
const num = (r) => Number(BigInt(r.result));
const endpoint = async (s, id) => (await adminGet(s, '/admin/endpoints')).json.find((e) => e.id === id);

// Asks block n of url four times: [hash, answering endpoint, cache] each.
async function askBlock(url, n) {
  const out = [];
  for (let i = 0; i < 4; i++) {
    const r = await post(url, call('eth_getBlockByNumber', [n, false], i));
    out.push([r.json.result.hash, r.headers.get('x-sluice-endpoint'), r.headers.get('x-sluice-cache')]);
  }
  return out;
}

// The honest ones healthy again, a reorg of 3 on every provider: block n's new hash.
async function reorgEverywhere(x, a, b, n) {
  await a.setMode('ok');
  await b.setMode('ok');
  for (const f of [x, a, b]) await chain(f, { reorg: 3 });
  return (await post(a.url, call('eth_getBlockByNumber', [n, false]))).json.result.hash;
}

async function sluiceOver(fakes, lines = []) {
  const s = await startSluice({ cache: true, workers: 2,
    networks: { eth: { lines, endpoints: fakes.map((f) => ({ id: f.name, url: f.url })) } } });
  started.push(s);
  return s;
}

test('500 eth_blockNumber over HTTP, batches and WebSocket, from three moving providers with the top one slow and failing: none backwards', async () => {
  // each moves on its own 1 s timer, started a moment apart: the lead changes hands
  const a = await fake('a', ['--block', String(TOP), '--block-time-ms', '1000']);
  await sleep(330);
  const b = await fake('b', ['--block', String(TOP - 1), '--block-time-ms', '1000']);
  await sleep(330);
  const c = await fake('c', ['--block', String(TOP - 2), '--block-time-ms', '1000']);
  const s = await sluiceOver([a, b, c]);
  await waitFor(async () => (await adminGet(s, '/admin/endpoints')).json.every((e) => e.head >= TOP - 2),
    { timeoutMs: 15000, what: 'the probes saw every head' });
  // b and c a little slower: a, the top one, ranks first; then a is slow
  // (hedged past), failing (failed over) and healthy in turn
  await b.setMode('slow', { delay_ms: 8 });
  await c.setMode('slow', { delay_ms: 8 });
  const faults = { stop: false };
  faults.done = (async () => {
    const modes = [['ok', {}, 400], ['slow', { delay_ms: 120, method: 'eth_blockNumber' }, 150], ['ok', {}, 300],
      ['http503', { count: 1 }, 100], ['ok', {}, 300], ['slow', { delay_ms: 40 }, 150]];
    for (let i = 0; !faults.stop; i++) {
      const [mode, opts, ms] = modes[i % modes.length];
      await a.setMode(mode, opts);
      await sleep(ms);
    }
    await a.setMode('ok');
  })();
  const ws = openWs(`ws://127.0.0.1:${s.wsPort ?? s.port}/eth`);
  await ws.opened;
  const seen = []; // [how, n, endpoint]
  let low = [];
  for (let i = 0; i < 500; i++) {
    await sleep(12); // ~10 s in all: the chain moves ten blocks or so
    const how = ['http', 'batch', 'ws'][i % 3];
    let nums = [], ep = null;
    if (how === 'http') {
      const r = await post(s.url('eth'), call('eth_blockNumber', [], i));
      assert.equal(r.status, 200, r.text);
      nums = [num(r.json)];
      ep = r.headers.get('x-sluice-endpoint');
    } else if (how === 'batch') {
      const r = await post(s.url('eth'), [call('eth_blockNumber', [], `${i}a`), call('eth_chainId', [], `${i}b`),
        call('eth_blockNumber', [], `${i}c`)]);
      assert.equal(r.status, 200, r.text);
      nums = r.json.filter((m) => m.id !== `${i}b`).map(num);
    } else {
      nums = [num(await ws.rpc('eth_blockNumber', [], i))];
    }
    for (const n of nums) {
      const before = seen.length ? Math.max(...seen.map((x) => x[1])) : 0;
      if (n < before) low.push(`${how} #${i}: ${n} after ${before}`);
      seen.push([how, n, ep]);
    }
  }
  faults.stop = true;
  await faults.done;
  ws.ws.close();
  const ns = seen.map((x) => x[1]);
  const by = seen.reduce((m, x) => ({ ...m, [x[2] ?? '-']: (m[x[2] ?? '-'] ?? 0) + 1 }), {});
  console.log(`${seen.length} answers, heads ${Math.min(...ns)}..${Math.max(...ns)}, http answered by ${JSON.stringify(by)}`);
  assert.deepEqual(low, [], 'no eth_blockNumber answer below an earlier one');
  assert.ok(Math.max(...ns) - Math.min(...ns) >= 3, 'the chain moved during the run');
});

test('a provider claiming a head 9, then 100 ahead of two that agree: no latest read, no write, the head stays honest, nothing goes back when it dies', async () => {
  const x = await frozen('x', TOP); // first in the config: the ranking's tie-break favours it
  const a = await frozen('a', TOP), b = await frozen('b', TOP);
  const s = await sluiceOver([x, a, b]);
  await waitFor(async () => (await adminGet(s, '/admin/endpoints')).json.every((e) => e.head === TOP),
    { timeoutMs: 15000, what: 'the probes saw every head' });
  let last = 0;
  for (const lead of [9, 100]) {
    await chain(x, { head: TOP + lead });
    const v = await waitFor(async () => {
      const e = await endpoint(s, 'x');
      return e.head === TOP + lead && e.excluded?.startsWith('head ahead of every other endpoint') && e;
    }, { timeoutMs: 15000, what: `x shown as unconfirmed at +${lead}` });
    console.log(`+${lead}: x excluded: ${v.excluded}`);
    await Promise.all([x.reset(), a.reset(), b.reset()]);
    for (let i = 0; i < 10; i++) {
      const reads = await post(s.url('eth'), [call('eth_getBalance', [ADDR, 'latest'], 1),
        call('eth_getBlockByNumber', ['latest', false], 2), call('eth_blockNumber', [], 3)]);
      assert.equal(reads.status, 200, reads.text);
      const head = num(reads.json.find((m) => m.id === 3));
      assert.equal(head, TOP, `the served head is the one two endpoints agree on (+${lead})`);
      assert.equal(Number(BigInt(reads.json.find((m) => m.id === 2).result.number)), TOP);
      last = Math.max(last, head);
      const w = await post(s.url('eth'), call('eth_sendRawTransaction', [`0x02f8${lead}${i}aa`], 4));
      assert.equal(w.status, 200, w.text);
    }
    const sx = await x.stats();
    console.log(`+${lead}: x asked ${JSON.stringify(sx.methods)}, a ${JSON.stringify((await a.stats()).methods)}`);
    assert.equal(sx.methods.eth_getBalance ?? 0, 0, 'no latest read went to x');
    assert.equal(sx.methods.eth_getBlockByNumber ?? 0, 0, 'no block read went to x');
    assert.deepEqual(sx.sent_raw, [], 'no write went to x');
  }
  await x.stop();
  for (let i = 0; i < 10; i++) {
    const r = await post(s.url('eth'), call('eth_blockNumber', [], i));
    assert.ok(num(r.json) >= last, `nothing goes back when x dies (${num(r.json)} after ${last})`);
  }
  // below max_head_lead (128) nobody is told with an event: only shown
  const evs = await events(s);
  assert.equal(evs.filter((e) => e.kind === 'endpoint_head_implausible').length, 0);
});

test('a provider reporting finalized = head makes nothing final: after a reorg on every provider the new block is served', async () => {
  const x = await frozen('x', TOP, ['--finalized-depth', '0']); // a dev node, a misconfigured one, a liar
  const a = await frozen('a', TOP), b = await frozen('b', TOP);
  // the chain probe learns safe and finalized; 1 s here instead of 30 s so the test does not wait
  const s = await sluiceOver([x, a, b], ["chain_probe_ms: 1000"]);
  await waitFor(async () => (await adminGet(s, '/admin/endpoints')).json.every((e) => e.finalized > 0),
    { timeoutMs: 15000, what: 'every finalized height known' });
  // the honest ones are slow to answer blocks: x answers them (hedges included)
  await a.setMode('slow', { delay_ms: 300, method: 'eth_getBlockByNumber' });
  await b.setMode('slow', { delay_ms: 300, method: 'eth_getBlockByNumber' });
  const n = `0x${(TOP - 1).toString(16)}`;
  await sleep(2500); // the workers' views take the finalized heights from the shared records at their tick
  const before = await askBlock(s.url('eth'), n);
  console.log('before the reorg', JSON.stringify(before));
  assert.ok(before.some((x) => x[1] === 'x'), 'x answered the block');
  const want = await reorgEverywhere(x, a, b, n);
  assert.notEqual(want, before[0][0], 'the reorg replaced the block');
  for (let i = 0; i < 4; i++) {
    const r = await post(s.url('eth'), call('eth_getBlockByNumber', [n, false], i));
    assert.equal(r.json.result.hash, want, `the new block is served (cache ${r.headers.get('x-sluice-cache')})`);
  }
  const e = (await adminGet(s, '/admin/networks')).json;
  console.log('network', JSON.stringify(e.find?.((y) => y.name === 'eth')?.finalized ?? e));
});

test('with cache.redis, one endpoint\'s finalized = head reaches no other host: after a reorg the second host serves the new block',
  { skip: redisAvailable() ? false : 'redis-server is not installed' }, async () => {
    const x = await frozen('x', TOP, ['--finalized-depth', '0']);
    const a = await frozen('a', TOP), b = await frozen('b', TOP);
    const redis = await startRedis();
    const hosts = [];
    for (const host of ['h1', 'h2']) {
      const s = await startSluice({ workers: 2, extra: `cache: { redis: true, redis_wait_ms: 200 }\ncluster: { redis: "${redis.url()}", host: "${host}" }`,
        networks: { eth: { lines: ['chain_probe_ms: 1000'], endpoints: [x, a, b].map((f) => ({ id: f.name, url: f.url })) } } });
      started.push(s);
      hosts.push(s);
    }
    for (const s of hosts) {
      await waitFor(async () => ((await adminGet(s, '/readyz')).json?.cluster || {}).mode === 'shared',
        { timeoutMs: 15000, what: 'the cluster shared' });
      await waitFor(async () => (await adminGet(s, '/admin/endpoints')).json.every((e) => e.finalized > 0),
        { timeoutMs: 15000, what: 'every finalized height known' });
    }
    await sleep(2500); // the workers' views take the finalized heights from the shared records at their tick
    await a.setMode('slow', { delay_ms: 300, method: 'eth_getBlockByNumber' });
    await b.setMode('slow', { delay_ms: 300, method: 'eth_getBlockByNumber' });
    const n = `0x${(TOP - 1).toString(16)}`;
    const old = await askBlock(hosts[0].url('eth'), n);
    assert.ok(old.some((o) => o[1] === 'x'), `x answered the block on h1 (${JSON.stringify(old)})`);
    await sleep(300); // a kept answer is written to Redis after its client has it
    const want = await reorgEverywhere(x, a, b, n);
    assert.notEqual(want, old[0][0], 'the reorg replaced the block');
    for (let i = 0; i < 3; i++) {
      const r = await post(hosts[1].url('eth'), call('eth_getBlockByNumber', [n, false], i));
      assert.equal(r.json.result.hash, want, `h2 serves the new block (cache ${r.headers.get('x-sluice-cache')})`);
    }
  });
