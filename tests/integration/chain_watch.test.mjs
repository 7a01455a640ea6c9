// viem's watchBlockNumber (HTTP polling) through sluice (issue 21): three fake
// providers at different heads, moved by the test at different paces
// (/_control/chain), two workers; a provider that jumps to a head nobody
// confirms; two hosts of a cluster sharing one redis-server.
//
// viem drops a number below the last one it emitted, so a head going
// backwards does not show in onBlockNumber: every eth_blockNumber answer is
// also recorded as it comes off the wire (the transport's fetchFn), and that
// sequence must never go down. Each poll goes on a new connection, so the
// kernel spreads them over both workers (and the cluster case alternates
// hosts).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicClient, http as viemHttp } from 'viem';
import { startFake, startSluice, postFresh, post, call, sleep, waitFor, adminGet, events } from '../lib/harness.mjs';
import { startRedis, redisAvailable } from '../lib/redis.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const TOP = 2000000;
const ADDR = '0x000000000000000000000000000000000000dead';

const frozenAt = (name, head) => startFake({ name, args: ['--block', String(head), '--block-time-ms', '0'] });

async function chain(fake, body) {
  const r = await fetch(`${fake.url}/_control/chain`, { method: 'POST', body: JSON.stringify(body) });
  return r.json();
}

// Moves each fake on one block every paces[i] ms until stopped, but never
// more than `spread` blocks ahead of the slowest: the lead changes hands and
// the heads stay a block or two apart, as providers' do.
function drive(fakes, paces, spread = 2) {
  const st = { stop: false };
  const heads = new Array(fakes.length).fill(0); // blocks moved
  st.done = Promise.all(fakes.map(async (f, i) => {
    while (!st.stop) {
      await sleep(paces[i]);
      if (st.stop || heads[i] - Math.min(...heads) >= spread) continue;
      heads[i]++;
      await chain(f, { advance: 1 });
    }
  }));
  return st;
}

// A viem client whose every request goes on a new connection to urls[k]
// (round robin); each eth_blockNumber answer is recorded as received.
function watcher(urls) {
  const wire = []; // { n, endpoint, host }
  let k = 0;
  const fetchFn = async (_url, init) => {
    const host = k++ % urls.length;
    const r = await postFresh(urls[host], init.body);
    const body = JSON.parse(init.body);
    if (body.method === 'eth_blockNumber' && r.json?.result)
      wire.push({ n: Number(BigInt(r.json.result)), endpoint: r.headers.get('x-sluice-endpoint'), host });
    return new Response(r.text, { status: r.status, headers: { 'content-type': 'application/json' } });
  };
  const client = createPublicClient({ cacheTime: 0, transport: viemHttp(urls[0], { fetchFn, retryCount: 0, timeout: 5000 }) });
  return { client, wire };
}

// Watches for ms: what viem emitted and what came off the wire.
async function watchFor(urls, ms) {
  const { client, wire } = watcher(urls);
  const emitted = [], errors = [];
  const unwatch = client.watchBlockNumber({ pollingInterval: 40, emitOnBegin: true,
    onBlockNumber: (n) => emitted.push(Number(n)), onError: (e) => errors.push(String(e)) });
  await sleep(ms);
  unwatch();
  await sleep(100);
  return { emitted, wire, errors };
}

// The places where the wire sequence went down.
function backwards(wire) {
  const out = [];
  for (let i = 1; i < wire.length; i++)
    if (wire[i].n < wire[i - 1].n) out.push(`${wire[i - 1].n}(h${wire[i - 1].host} ${wire[i - 1].endpoint}) -> ${wire[i].n}(h${wire[i].host} ${wire[i].endpoint})`);
  return out;
}

function assertMonotonic({ emitted, wire, errors }, what, polls = 40) {
  assert.deepEqual(errors, [], `${what}: no poll failed`);
  assert.ok(wire.length >= polls, `${what}: many polls (${wire.length})`);
  assert.deepEqual(backwards(wire), [], `${what}: no eth_blockNumber answer below an earlier one`);
  for (let i = 1; i < emitted.length; i++)
    assert.ok(emitted[i] > emitted[i - 1], `${what}: viem emitted ${emitted[i - 1]} then ${emitted[i]}`);
  assert.ok(emitted.length >= 5, `${what}: the head moved (${emitted.length} numbers)`);
}

const byEndpoint = (wire) => wire.reduce((m, x) => ({ ...m, [x.endpoint]: (m[x.endpoint] ?? 0) + 1 }), {});

async function threeMoving() {
  const a = await frozenAt('a', TOP), b = await frozenAt('b', TOP), c = await frozenAt('c', TOP);
  started.push(a, b, c);
  await a.setMode('slow', { delay_ms: 30 }); // b and c rank first; a leads most of the time
  return [a, b, c];
}

const net = (fakes, probeMs = 200) => ({ eth: { lines: [`ranking: { probe_interval_ms: ${probeMs} }`, 'hedge: { enabled: false }'],
  endpoints: fakes.map((f) => ({ id: f.name, url: f.url })) } });

test('viem watchBlockNumber over three providers moving at different paces: no number twice, none backwards', async () => {
  const fakes = await threeMoving();
  const s = await startSluice({ workers: 2, networks: net(fakes) });
  started.push(s);
  await sleep(600);
  const car = drive(fakes, [90, 120, 150]);
  const seen = await watchFor([s.url('eth')], 6000);
  car.stop = true;
  await car.done;
  const nums = seen.wire.map((x) => x.n);
  console.log(`polls ${seen.wire.length}, heads ${Math.min(...nums)}..${Math.max(...nums)}, emitted ${seen.emitted.length},`,
    'answered by', JSON.stringify(byEndpoint(seen.wire)));
  assertMonotonic(seen, 'one host');
});

test('a provider that jumps to a head nobody confirms: clients never see it, latest reads stay on honest endpoints', async () => {
  const [a, b, c] = await threeMoving();
  await b.setMode('slow', { delay_ms: 25 });
  await c.setMode('slow', { delay_ms: 25 });
  const x = await frozenAt('x', TOP); // the fastest: the ranking's first choice
  started.push(x);
  const s = await startSluice({ workers: 2, networks: net([a, b, c, x]) });
  started.push(s);
  await waitFor(async () => (await adminGet(s, '/admin/endpoints')).json.every((e) => e.head >= TOP - 3),
    { timeoutMs: 8000, what: 'probes saw every head' });
  const car = drive([a, b, c, x], [120, 150, 170, 150]);
  await sleep(500);
  const LIE = 1000000000;
  await chain(x, { head: LIE });
  const v = await waitFor(async () => {
    const e = (await adminGet(s, '/admin/endpoints')).json.find((y) => y.id === 'x');
    return e.excluded?.startsWith('head ahead of every other endpoint by') && e;
  }, { timeoutMs: 3000, what: 'x shown with its implausible head' });
  console.log('x:', v.excluded, 'usable', v.usable);
  assert.equal(v.usable, false);
  await Promise.all([a.reset(), b.reset(), c.reset(), x.reset()]);
  const seen = await watchFor([s.url('eth')], 3000);
  const reads = {};
  for (let i = 0; i < 30; i++) {
    const r = await postFresh(s.url('eth'), call('eth_getBalance', [ADDR, 'latest'], i));
    assert.equal(r.status, 200, r.text);
    reads[r.headers.get('x-sluice-endpoint')] = (reads[r.headers.get('x-sluice-endpoint')] ?? 0) + 1;
  }
  car.stop = true;
  await car.done;
  const nums = seen.wire.map((y) => y.n);
  console.log(`polls ${seen.wire.length}, heads ${Math.min(...nums)}..${Math.max(...nums)}, answered by`,
    JSON.stringify(byEndpoint(seen.wire)), 'latest reads by', JSON.stringify(reads));
  assert.ok(Math.max(...nums) < TOP + 200, 'no client saw the lying head');
  assertMonotonic(seen, 'lying head', 20);
  assert.equal(reads.x ?? 0, 0, 'no latest read answered by x');
  assert.equal((await x.stats()).methods.eth_getBalance ?? 0, 0, 'none sent to x');
  const m = (await adminGet(s, '/metrics')).text;
  assert.match(m, /sluice_endpoint_head_implausible\{network="eth",endpoint="x"\} 1/);
  assert.match(m, /sluice_endpoint_head_implausible\{network="eth",endpoint="a"\} 0/);
  const floor = Number(m.match(/sluice_chain_floor\{network="eth",kind="latest"\} (\d+)/)?.[1]);
  assert.ok(floor >= TOP && floor < TOP + 200, `the floor served is the honest head (${floor})`);
  // x comes back to the chain: trusted again, one event each way
  const honest = (await chain(a, {})).head;
  await chain(x, { head: honest });
  await waitFor(async () => (await adminGet(s, '/admin/endpoints')).json.find((y) => y.id === 'x').excluded === null,
    { timeoutMs: 3000, what: 'x trusted again' });
  const evs = (await events(s)).filter((e) => e.kind === 'endpoint_head_implausible');
  console.log('events', JSON.stringify(evs.map((e) => [e.endpoint, e.reason])));
  assert.equal(evs.length, 2, 'one event per change');
  assert.equal(evs[0].endpoint, 'x');
  assert.match(evs[0].reason, /^head 1000000000 ahead of every other endpoint by \d+ \(max_head_lead 128\)/);
});

test('two hosts of a cluster, a client alternating between them: eth_blockNumber never goes backwards',
  { skip: redisAvailable() ? false : 'redis-server is not installed' }, async () => {
    const fakes = await threeMoving();
    const redis = await startRedis();
    const hosts = [];
    // h2 probes every 5 s: its own view of the heads is fed mostly by the
    // answers it serves, and alone it would answer a lower head than h1 just did
    for (const [h, probeMs] of [['h1', 200], ['h2', 5000]]) {
      const s = await startSluice({ workers: 2, networks: net(fakes, probeMs),
        extra: `cluster: { redis: "${redis.url()}", host: "${h}" }` });
      started.push(s);
      hosts.push(s);
    }
    await waitFor(async () => {
      for (const s of hosts) if ((await adminGet(s, '/readyz')).json?.cluster?.mode !== 'shared') return false;
      return true;
    }, { timeoutMs: 10000, what: 'both hosts shared' });
    await sleep(400);
    const car = drive(fakes, [90, 120, 150]);
    const seen = await watchFor(hosts.map((s) => s.url('eth')), 6000);
    car.stop = true;
    await car.done;
    const nums = seen.wire.map((x) => x.n);
    const perHost = [0, 1].map((h) => seen.wire.filter((x) => x.host === h).length);
    console.log(`polls ${seen.wire.length} (per host ${perHost}), heads ${Math.min(...nums)}..${Math.max(...nums)},`,
      'answered by', JSON.stringify(byEndpoint(seen.wire)));
    assert.ok(perHost[0] > 15 && perHost[1] > 15, 'both hosts answered');
    assertMonotonic(seen, 'two hosts', 35);
    // step by step: an endpoint other than h2's first choice moves 2 blocks
    // ahead (as far as a lead nobody confirms is believed: max_lag_blocks);
    // h1's probes see it and h1 serves it; h2's view has not seen it, its
    // first choice (2 behind) answers there: without the cluster's floor h2
    // would answer 2 blocks back
    const first = (await adminGet(hosts[1], '/admin/endpoints')).json.find((e) => e.position === 1).id;
    const jumper = fakes.find((f) => f.name !== first);
    console.log(`h2's first choice ${first}, ${jumper.name} jumps`);
    for (let round = 0; round < 3; round++) {
      const H = Math.max(...(await Promise.all(fakes.map((f) => chain(f, {})))).map((r) => r.head));
      for (const f of fakes) await chain(f, { head: H });
      await sleep(300);
      await chain(jumper, { head: H + 2 });
      await waitFor(async () => Number(BigInt((await postFresh(hosts[0].url('eth'), call('eth_blockNumber'))).json.result)) === H + 2,
        { timeoutMs: 2000, intervalMs: 20, what: 'h1 serves the new head' });
      // the guarantee is "once one Redis relay has passed" (docs/guide/chain.md): the raise
      // h1 sent before its answer reaches h2's workers through pub/sub, a
      // message their loops may take a moment after the client's next call
      await sleep(50);
      const r = await postFresh(hosts[1].url('eth'), call('eth_blockNumber'));
      console.log(`round ${round}: h1 served ${H + 2}, then h2 ${Number(BigInt(r.json.result))} (answered by ${r.headers.get('x-sluice-endpoint')})`);
      assert.equal(Number(BigInt(r.json.result)), H + 2, 'h2 answers the head h1 served, not one below');
    }
    // the floor is the cluster's: each host's record and Redis agree (at rest)
    await sleep(1200);
    const floors = [];
    for (const s of hosts)
      floors.push(Number((await adminGet(s, '/metrics')).text.match(/sluice_chain_floor\{network="eth",kind="latest"\} (\d+)/)[1]));
    const inRedis = Number(redis.cli('HGET', 'sluice:floor:eth', 'k0').trim());
    console.log('floors', floors, 'redis', inRedis);
    assert.equal(floors[0], inRedis);
    assert.equal(floors[1], inRedis);
    assert.ok(inRedis >= Math.max(...nums), 'every head served is in the cluster floor');
  });
