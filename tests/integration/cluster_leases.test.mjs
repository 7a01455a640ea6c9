// Leased probes (cluster:): an endpoint's health probe and chain probe are
// done by the one host holding the endpoint's lease in Redis; the others
// apply its results. Real redis-server, three sluice hosts, one fake
// provider; no client traffic: every call the fake sees is sluice's own.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startFake, startSluice, sleep, waitFor, adminGet, events, metricValue, workerPids } from '../lib/harness.mjs';
import { startRedis, redisAvailable } from '../lib/redis.mjs';

const skip = redisAvailable() ? false : 'redis-server is not installed';

const PROBE_MS = 500;
const CHAIN_MS = 1000;
const TTL_MS = 3000; // policy_joblease_ttl_ms(500, 1000): 3 intervals, at least 3 s
const WINDOW_MS = 10000;

function hostConfig(fake, url, host) {
  return {
    workers: 2,
    networks: { eth: { lines: [`ranking: { probe_interval_ms: ${PROBE_MS} }`, `chain_probe_ms: ${CHAIN_MS}`],
      endpoints: [{ id: 'a', url: fake.url }] } },
    extra: `cluster: { redis: "${url}", host: "${host}" }`,
  };
}

const probesOf = async (s) => (await adminGet(s, '/admin/endpoints')).json[0];

// What the fake saw of sluice's own periodic calls since its last reset.
async function ownCalls(fake) {
  const m = (await fake.stats()).methods || {};
  return { blockNumber: m.eth_blockNumber || 0, blocks: m.eth_getBlockByNumber || 0,
    total: (m.eth_blockNumber || 0) + (m.eth_getBlockByNumber || 0) };
}

async function settled(hosts) {
  await waitFor(async () => {
    const roles = [];
    for (const s of hosts) roles.push((await probesOf(s)).cluster?.probes?.role);
    return roles.filter((r) => r === 'holder').length === 1 && roles.every((r) => r === 'holder' || r === 'follower');
  }, { timeoutMs: 20000, what: 'one holder, the others following' });
}

async function measure(fake) {
  await sleep(PROBE_MS); // a probe sent before the reset must not count after it
  await fake.reset();
  await sleep(WINDOW_MS);
  return ownCalls(fake);
}

async function killHost(s) {
  const pids = [s.child.pid, ...(await workerPids(s.child.pid))];
  for (const pid of pids) { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } }
  await s.exited;
}

const figures = {};
after(() => console.log('lease figures:', JSON.stringify(figures)));

test('three hosts probe no more than one: the provider sees about one host\'s probes', { skip }, async () => {
  const fake = await startFake({ name: 'f' });
  const redis = await startRedis();
  const h1 = await startSluice(hostConfig(fake, redis.url(), 'h1'));
  await settled([h1]);
  const one = await measure(fake);
  const h2 = await startSluice(hostConfig(fake, redis.url(), 'h2'));
  await settled([h1, h2]);
  const two = await measure(fake);
  const h3 = await startSluice(hostConfig(fake, redis.url(), 'h3'));
  await settled([h1, h2, h3]);
  const three = await measure(fake);
  const perMin = (c) => Math.round(c.total * 60000 / WINDOW_MS);
  figures.calls_per_minute = { hosts1: perMin(one), hosts2: perMin(two), hosts3: perMin(three) };
  assert.ok(one.blockNumber >= 5 && one.blocks >= 3, `one host probes (${JSON.stringify(one)})`);
  assert.ok(three.total <= 1.3 * one.total, `3 hosts ${JSON.stringify(three)} vs 1 host ${JSON.stringify(one)}`);
  assert.ok(two.total <= 1.3 * one.total, `2 hosts ${JSON.stringify(two)} vs 1 host ${JSON.stringify(one)}`);

  // every host knows the holder, and the followers have its results: a head and the chain probe's safe block
  const eps = [];
  for (const s of [h1, h2, h3]) eps.push(await probesOf(s));
  const holder = eps.find((e) => e.cluster.probes.role === 'holder').cluster.probes.holder;
  for (const e of eps) {
    assert.equal(e.cluster.probes.holder, holder);
    assert.ok(e.head > 0 && e.safe > 0 && e.finalized > 0, `heads applied on every host: ${JSON.stringify(e)}`);
    assert.ok(e.probe.latency_ms > 0, 'the latency measured by the holder');
    assert.equal(e.breaker.state, 'closed');
  }
  // the first holder said so once for the fleet
  const moved = (await events(h1)).filter((e) => e.kind === 'lease_moved');
  assert.ok(moved.length >= 1 && moved.every((e) => e.endpoint === 'a'), JSON.stringify(moved));
  assert.ok(moved.some((e) => e.host === holder), 'logged by the host that took it');
});

test('the holder killed: another host takes the lease within a TTL, heads stay fresh', { skip }, async () => {
  const fake = await startFake({ name: 'f' });
  const redis = await startRedis();
  const hosts = [];
  for (const name of ['h1', 'h2', 'h3']) hosts.push(await startSluice(hostConfig(fake, redis.url(), name)));
  await settled(hosts);
  let holderName;
  for (const s of hosts) {
    const p = (await probesOf(s)).cluster.probes;
    if (p.role === 'holder') holderName = p.holder;
  }
  const victim = hosts[Number(holderName.slice(1)) - 1];
  const rest = hosts.filter((s) => s !== victim);
  const killedAt = Date.now();
  await killHost(victim);
  const took = await waitFor(async () => {
    for (const s of rest) if ((await probesOf(s)).cluster.probes.role === 'holder') return s;
    return null;
  }, { timeoutMs: TTL_MS + 10000, intervalMs: 50, what: 'a new holder' });
  const moveMs = Date.now() - killedAt;
  figures.lease_move_ms = moveMs;
  // within a TTL of the kill (the lease was renewed before it), with room for a busy machine
  assert.ok(moveMs <= TTL_MS + 1500, `took ${moveMs} ms (ttl ${TTL_MS})`);
  const newName = (await probesOf(took)).cluster.probes.holder;
  assert.notEqual(newName, holderName);
  await fake.reset();
  // the new holder probes, and both survivors' heads are fresh, breakers closed
  await sleep(3 * PROBE_MS + 500);
  assert.ok((await ownCalls(fake)).blockNumber >= 2, 'the new holder probes');
  for (const s of rest) {
    const e = await probesOf(s);
    assert.equal(e.cluster.probes.holder, newName);
    assert.equal(e.breaker.state, 'closed');
    const age = Date.now() - Date.parse(e.probe.head_at);
    assert.ok(age < 4 * PROBE_MS + 1000, `head ${age} ms old on ${e.cluster.counters}`);
  }
  const moved = (await events(took)).filter((e) => e.kind === 'lease_moved' && e.host === newName);
  assert.ok(moved.length >= 1 && moved.some((e) => e.reason.includes(`was ${holderName}`)), JSON.stringify(moved));
});

test('Redis stopped: every host probes for itself and says so', { skip }, async () => {
  const fake = await startFake({ name: 'f' });
  const redis = await startRedis();
  const hosts = [];
  for (const name of ['h1', 'h2', 'h3']) hosts.push(await startSluice(hostConfig(fake, redis.url(), name)));
  await settled(hosts);
  await redis.kill();
  for (const s of hosts) {
    await waitFor(async () => (await probesOf(s)).cluster.probes.role === 'local', { timeoutMs: 15000, what: 'local' });
  }
  await sleep(PROBE_MS); // the probes sent before count for nothing below
  await fake.reset();
  await sleep(3000);
  const calls = await ownCalls(fake);
  // three hosts alone: about three times one host's probes (a window of 3 s: 6 each)
  assert.ok(calls.blockNumber >= 10, `every host probes: ${JSON.stringify(calls)}`);
  for (const s of hosts) {
    const e = await probesOf(s);
    assert.deepEqual(e.cluster.probes, { role: 'local', holder: e.cluster.counters });
    assert.ok(await metricValue(s, 'sluice_state_degraded_workers{part="leases"}') >= 1, 'degraded, by the metric');
    assert.ok(await metricValue(s, 'sluice_state_local_decisions_total{part="leases"}') >= 1, 'its own probes counted');
  }
  await redis.restart();
  await settled(hosts);
});
