// Leased probes (cluster:): an endpoint's health probe and chain probe are
// done by the one host holding the endpoint's lease in Redis; the others
// apply its results. Real redis-server, three sluice hosts, one fake
// provider; no client traffic: every call the fake sees is sluice's own.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { WebSocketServer } from 'ws';
import { startFake, startSluice, sleep, waitFor, adminGet, events, metricValue, workerPids } from '../lib/harness.mjs';
import { startRedis, redisAvailable } from '../lib/redis.mjs';

const skip = redisAvailable() ? false : 'redis-server is not installed';
const started = [];
after(async () => { for (const s of started) await s.stop().catch(() => {}); });

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
  const c = { blockNumber: m.eth_blockNumber || 0, blocks: m.eth_getBlockByNumber || 0, chainId: m.eth_chainId || 0 };
  return { ...c, total: c.blockNumber + c.blocks + c.chainId };
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

test('the holder stopped with SIGTERM hands its lease back: another host takes it at once, not a TTL later', { skip }, async () => {
  // probes every 5 s, no chain probe: a TTL of 15 s, renewed every 5 s, so a
  // lease left to lapse moves 10 s after the stop at the earliest
  const SLOW_PROBE_MS = 5000, SLOW_TTL_MS = 15000;
  const fake = await startFake({ name: 'g' });
  const redis = await startRedis();
  started.push(fake, redis);
  const conf = (name) => ({
    workers: 2,
    networks: { eth: { lines: [`ranking: { probe_interval_ms: ${SLOW_PROBE_MS} }`], endpoints: [{ id: 'a', url: fake.url }] } },
    extra: `cluster: { redis: "${redis.url()}", host: "${name}" }`,
  });
  const hosts = [];
  for (const name of ['s1', 's2']) hosts.push(await startSluice(conf(name)));
  started.push(...hosts);
  await settled(hosts);
  const roles = await Promise.all(hosts.map(async (s) => (await probesOf(s)).cluster.probes));
  assert.ok(roles.every((p) => p.expires_in_ms > SLOW_PROBE_MS), JSON.stringify(roles));
  const victim = hosts[roles.findIndex((p) => p.role === 'holder')];
  const other = hosts.find((s) => s !== victim);
  const stoppedAt = Date.now();
  await victim.stop('SIGTERM');
  assert.match(victim.logs(), /handed 1 probe lease\(s\) back/);
  const holderName = roles.find((p) => p.role === 'holder').holder;
  assert.ok(!redis.cli('GET', 'sluice:lease:eth/a').startsWith(`${holderName} `), 'no longer the stopped host\'s lease');
  await waitFor(async () => (await probesOf(other)).cluster.probes.role === 'holder',
    { timeoutMs: SLOW_TTL_MS, intervalMs: 50, what: 'the other host holding the lease' });
  const moveMs = Date.now() - stoppedAt;
  figures.lease_handed_back_ms = moveMs;
  // a lease left to lapse would take 10 s at least; room for a busy machine
  assert.ok(moveMs < SLOW_TTL_MS - SLOW_PROBE_MS - 2000, `took ${moveMs} ms`);
  await fake.reset();
  await sleep(SLOW_PROBE_MS + 1000);
  assert.ok((await ownCalls(fake)).blockNumber >= 1, 'the new holder probes');
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

// A small upstream: JSON-RPC over HTTP for the probes, a WebSocket server on the same port that
// pushes newHeads when the test advances its chain (as tests/integration/upstream_ws.test.mjs).
async function startUpstream() {
  const st = { head: 1000, socks: new Set() };
  const hex = (n) => '0x' + n.toString(16);
  const hashOf = (n) => '0x' + n.toString(16).padStart(64, '0');
  const block = (n) => ({ number: hex(n), hash: hashOf(n), parentHash: hashOf(n - 1), timestamp: hex(1700000000 + n) });
  const answer = (m) => ({ eth_chainId: '0x1', eth_blockNumber: hex(st.head), eth_getBlockByNumber: block(st.head) })[m.method] ?? null;
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      let m;
      try { m = JSON.parse(body); } catch { res.writeHead(400).end(); return; }
      const out = Array.isArray(m) ? m.map((x) => ({ jsonrpc: '2.0', id: x.id, result: answer(x) }))
        : { jsonrpc: '2.0', id: m.id, result: answer(m) };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(out));
    });
  });
  const wss = new WebSocketServer({ server });
  wss.on('connection', (ws) => {
    st.socks.add(ws);
    ws.on('close', () => st.socks.delete(ws));
    ws.on('error', () => {});
    ws.on('message', (d) => {
      const m = JSON.parse(String(d));
      if (m.method === 'eth_subscribe') ws.subscribed = true;
      ws.send(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: m.method === 'eth_subscribe' ? '0x9c' : answer(m) }));
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const port = server.address().port;
  const subscribed = () => [...st.socks].filter((x) => x.subscribed);
  return {
    st, subscribed, url: `http://127.0.0.1:${port}`, wsUrl: `ws://127.0.0.1:${port}/`,
    advance() {
      st.head++;
      const note = JSON.stringify({ jsonrpc: '2.0', method: 'eth_subscription', params: { subscription: '0x9c', result: block(st.head) } });
      for (const x of subscribed()) x.send(note);
    },
    stop: () => { for (const x of st.socks) x.terminate(); return new Promise((r) => server.close(r)); },
  };
}

test('the ws_url head stream: one socket for the fleet, every host\'s head follows it', { skip }, async () => {
  const up = await startUpstream();
  started.push(up);
  const redis = await startRedis();
  const hosts = [];
  for (const name of ['h1', 'h2', 'h3']) {
    hosts.push(await startSluice({
      workers: 2,
      // probes a minute apart: the heads below come from the stream (and the holder's relay) alone
      networks: { eth: { lines: ['ranking: { probe_interval_ms: 60000 }'],
        endpoints: [{ id: 'a', url: up.url, ws_url: `"${up.wsUrl}"` }] } },
      extra: `cluster: { redis: "${redis.url()}", host: "${name}" }`,
    }));
  }
  await settled(hosts);
  await waitFor(async () => up.subscribed().length === 1, { timeoutMs: 10000, what: 'one stream subscribed' });
  await sleep(1000);
  assert.equal(up.subscribed().length, 1, 'one ws_url stream for the three hosts');
  assert.equal(up.st.socks.size, 1, 'no other host keeps a socket open');
  const netHead = async (s) => (await adminGet(s, '/admin/networks')).json.find((n) => n.network === 'eth').head;
  for (let i = 0; i < 3; i++) {
    up.advance();
    for (const s of hosts) {
      await waitFor(async () => (await netHead(s)) === up.st.head, { timeoutMs: 3000, intervalMs: 20,
        what: `head ${up.st.head} on ${s.port}` });
    }
  }
});

test('the chain identity: asked by the holder alone, an endpoint on another chain excluded on every host', { skip }, async () => {
  const a = await startFake({ name: 'a' });
  const w = await startFake({ name: 'w', args: ['--chain-id', '0x5'] });
  started.push({ stop: () => a.stop() }, { stop: () => w.stop() });
  const redis = await startRedis();
  const hosts = [];
  for (const name of ['h1', 'h2', 'h3']) {
    hosts.push(await startSluice({
      workers: 2,
      networks: { eth: { lines: ['chain_id: 1', `ranking: { probe_interval_ms: ${PROBE_MS} }`],
        endpoints: [{ id: 'a', url: a.url }, { id: 'w', url: w.url }] } },
      extra: `cluster: { redis: "${redis.url()}", host: "${name}" }`,
    }));
  }
  for (const s of hosts) {
    await waitFor(async () => {
      const eps = (await adminGet(s, '/admin/endpoints')).json;
      const x = eps.find((e) => e.id === 'w');
      return x.excluded?.startsWith('wrong chain') && eps.every((e) => ['holder', 'follower'].includes(e.cluster.probes.role));
    }, { timeoutMs: 15000, what: `w excluded as on the wrong chain on ${s.port}` });
  }
  // asked by one host's workers, not by three hosts': an endpoint on the wrong chain is asked
  // every probe interval by each worker (to see it come back at once), so one host of two
  // workers asks it 2 * WINDOW_MS / PROBE_MS times; three hosts alone would ask three times that
  await sleep(PROBE_MS);
  await w.reset();
  await sleep(WINDOW_MS);
  const asked = (await w.stats()).methods?.eth_chainId || 0;
  figures.wrong_chain_asks_per_minute_3_hosts = Math.round(asked * 60000 / WINDOW_MS);
  const oneHost = 2 * WINDOW_MS / PROBE_MS;
  assert.ok(asked > 0 && asked <= 1.3 * oneHost, `eth_chainId asked ${asked} times in ${WINDOW_MS} ms (one host: ${oneHost})`);
  for (const s of hosts) {
    const x = (await adminGet(s, '/admin/endpoints')).json.find((e) => e.id === 'w');
    assert.equal(x.excluded, 'wrong chain (want 0x1)');
    assert.equal(x.usable, false);
  }
});
