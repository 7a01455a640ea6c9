// The response cache's Redis tier (cache.redis: true with cluster:): a real
// redis-server, two sluice processes as two hosts of one cluster, one
// chain-model fake provider counting what reaches it.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { startFake, startSluice, post, call, sleep, adminGet, adminPost, waitFor, tempDir, SLUICE_BIN }
  from '../lib/harness.mjs';
import { startRedis, redisAvailable } from '../lib/redis.mjs';

const skip = redisAvailable() ? false : 'redis-server is not installed';
const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const HEAD = 5000;
const hex = (n) => '0x' + n.toString(16);
const methodCount = async (fake, m) => (await fake.stats()).methods[m] ?? 0;
const postFresh = (url, body, headers = {}) => post(url, body, { connection: 'close', ...headers });

// Two hosts of one cluster with the Redis tier; both know the finalized height.
async function twoHosts({ cacheLine = 'cache: { redis: true, redis_wait_ms: 200 }' } = {}) {
  const f = await startFake({ name: 'f', args: ['--block', String(HEAD), '--block-time-ms', '0'] });
  started.push(f);
  const redis = await startRedis({ extra: ['--maxmemory', '64mb', '--maxmemory-policy', 'volatile-lru'] });
  const hosts = [];
  for (const host of ['a', 'b']) {
    const s = await startSluice({ cache: true, workers: 2,
      extra: `${cacheLine}\ncluster: { redis: "${redis.url()}", host: "${host}" }`,
      networks: { eth: { lines: ['hedge: { enabled: false }', 'chain_probe_ms: 100', 'ranking: { probe_interval_ms: 100 }'],
        endpoints: [{ id: 'f', url: f.url }] } } });
    started.push(s);
    hosts.push(s);
  }
  for (const s of hosts) {
    await waitFor(async () => ((await adminGet(s, '/readyz')).json?.cluster || {}).mode === 'shared',
      { timeoutMs: 15000, what: 'the cluster shared' });
    await waitFor(async () => (await adminGet(s, '/admin/networks')).json[0].finalized !== null,
      { what: 'the chain probe reported finalized' });
  }
  await sleep(300); // every worker's view has it
  const fin = Math.min(...await Promise.all(hosts.map(async (s) => (await adminGet(s, '/admin/networks')).json[0].finalized)));
  return { f, redis, a: hosts[0], b: hosts[1], fin };
}

// The fake's chain moved by hand: /_control/chain (head, advance, reorg).
const chainCtl = async (f, body) => (await fetch(`http://127.0.0.1:${f.port}/_control/chain`,
  { method: 'POST', body: JSON.stringify(body) })).json();
// A kept answer is written to Redis after its client has it: another host
// finds it a moment later (longer on a slow build: ASan).
const written = () => sleep(300);
const cacheBlock = async (s) => (await adminGet(s, '/admin/networks')).json.find((n) => n.network === 'eth').cache;

test('a finalized block fetched by one host is a hit on the other, from Redis, then from its own store', { skip }, async () => {
  const { f, redis, a, b, fin } = await twoHosts();
  const n = fin - 5;
  const byNumber = call('eth_getBlockByNumber', [hex(n), false], 1);
  const first = await postFresh(a.url('eth'), byNumber);
  assert.equal(first.headers.get('x-sluice-cache'), 'miss', first.text);
  const hash = first.json.result.hash;
  await written();

  const onB = await postFresh(b.url('eth'), call('eth_getBlockByNumber', [hex(n), false], 'b1'));
  assert.equal(onB.headers.get('x-sluice-cache'), 'hit', 'host b found host a\'s answer in Redis');
  assert.equal(onB.json.id, 'b1', 'the client gets its own id back');
  assert.deepEqual(onB.json.result, first.json.result);

  // by hash: counted at the provider (its chain probe asks by number)
  const h1 = await postFresh(a.url('eth'), call('eth_getBlockByHash', [hash, false], 2));
  assert.equal(h1.headers.get('x-sluice-cache'), 'miss');
  await written();
  for (let i = 0; i < 4; i++) {
    const r = await postFresh(b.url('eth'), call('eth_getBlockByHash', [hash, false], 10 + i));
    assert.equal(r.headers.get('x-sluice-cache'), 'hit', r.text);
    assert.equal(r.json.result.hash, hash);
  }
  assert.equal(await methodCount(f, 'eth_getBlockByHash'), 1, 'one upstream call for both hosts');

  // entries live under the cluster's prefix, with the TTL (a day)
  const keys = redis.cli('--scan', '--pattern', 'sluice:cache:e:*').split('\n').filter(Boolean);
  assert.equal(keys.length, 2, keys.join(' '));
  const ttl = Number(redis.cli('TTL', keys[0]));
  assert.ok(ttl > 86000 && ttl <= 86400, `an entry expires in a day (${ttl} s)`);
  assert.equal(redis.cli('TTL', 'sluice:hosts'), '-1', 'the cluster\'s own records have no expiry (volatile-lru spares them)');

  await sleep(400); // the workers' counters are flushed every ~100 ms
  const cb = await cacheBlock(b);
  assert.equal(cb.tiers, 'local+redis');
  // the first lookup of each worker on b came from Redis, the rest from b's own store
  assert.ok(cb.hits_by_tier.redis >= 2 && cb.hits_by_tier.redis <= 3, JSON.stringify(cb));
  assert.equal(cb.hits_by_tier.local + cb.hits_by_tier.redis, 5, JSON.stringify(cb));
  assert.deepEqual(cb.redis, { timeouts: 0, errors: 0 });
  const m = (await adminGet(b, '/metrics')).text;
  assert.match(m, /sluice_cache_hits_total\{network="eth",tier="redis"\} [23]\b/);
  assert.match(m, /sluice_cache_hits_total\{network="eth",tier="local"\} [23]\b/);
  assert.match(m, /sluice_cache_redis_failures_total\{network="eth",kind="error"\} 0\b/);
});

test('Redis killed mid-test: both hosts keep answering, misses go upstream', { skip }, async () => {
  const { f, redis, a, b, fin } = await twoHosts();
  const r0 = await post(a.url('eth'), call('eth_getBlockByNumber', [hex(fin - 3), false]));
  assert.equal(r0.status, 200);
  await redis.kill();
  const base = await methodCount(f, 'eth_getBlockByHash');
  const bad = [];
  for (let i = 0; i < 12; i++) {
    const s = i % 2 ? b : a;
    const blk = await postFresh(s.url('eth'), call('eth_getBlockByNumber', [hex(fin - 20 - i), false], i));
    const r = await postFresh(s.url('eth'), call('eth_getBlockByHash', [blk.json?.result?.hash, false], i));
    if (blk.status !== 200 || r.status !== 200 || r.json.error || r.json.result?.hash !== blk.json.result.hash)
      bad.push(`${blk.status}/${r.status} ${r.text}`);
    await sleep(20);
  }
  assert.deepEqual(bad, [], 'every call answered while Redis is gone');
  assert.equal(await methodCount(f, 'eth_getBlockByHash'), base + 12, 'each went upstream');
  // each host's own store still answers
  const again = await postFresh(a.url('eth'), call('eth_getBlockByHash',
    [(await post(a.url('eth'), call('eth_getBlockByNumber', [hex(fin - 20), false]))).json.result.hash, false]));
  assert.equal(again.headers.get('x-sluice-cache'), 'hit');
  await sleep(400);
  const cb = await cacheBlock(b);
  assert.ok(cb.redis.errors + cb.redis.timeouts >= 1, `the lookups Redis could not answer are counted: ${JSON.stringify(cb)}`);
});

test('a purge on one host makes the other miss too', { skip }, async () => {
  const { f, redis, a, b, fin } = await twoHosts();
  const hash = (await post(a.url('eth'), call('eth_getBlockByNumber', [hex(fin - 7), false]))).json.result.hash;
  const q = call('eth_getBlockByHash', [hash, false]);
  assert.equal((await postFresh(a.url('eth'), q)).headers.get('x-sluice-cache'), 'miss');
  await written();
  for (let i = 0; i < 3; i++) assert.equal((await postFresh(b.url('eth'), q)).headers.get('x-sluice-cache'), 'hit');
  assert.equal(await methodCount(f, 'eth_getBlockByHash'), 1);

  const purged = await adminPost(a, '/admin/cache/purge?network=eth');
  assert.equal(purged.status, 200, JSON.stringify(purged.json));
  assert.equal(purged.json.redis, 'purged');
  assert.equal(redis.cli('GET', 'sluice:cache:gen:eth'), '1', 'the generation moved on');
  await sleep(300); // host b hears of it on the cluster's channel
  const onB = await postFresh(b.url('eth'), q);
  assert.equal(onB.headers.get('x-sluice-cache'), 'miss', 'host b misses: neither its store nor Redis has it now');
  assert.equal(await methodCount(f, 'eth_getBlockByHash'), 2);
  // and the answer b fetched is shared again, under the new generation
  await written();
  assert.equal((await postFresh(a.url('eth'), q)).headers.get('x-sluice-cache'), 'hit');
  assert.equal(await methodCount(f, 'eth_getBlockByHash'), 2);
});

test('a Redis that stops answering (SIGSTOP) costs a miss at most cache.redis_wait_ms late, never a stall', { skip }, async () => {
  const { f, redis, a, fin } = await twoHosts({ cacheLine: 'cache: { redis: true }' }); // the default wait: 10 ms
  const blocks = [];
  for (let i = 0; i < 6; i++) blocks.push((await post(a.url('eth'), call('eth_getBlockByNumber', [hex(fin - 30 - i), false]))).json.result.hash);
  const base = await methodCount(f, 'eth_getBlockByHash');
  redis.pause();
  const took = [];
  try {
    for (const [i, hash] of blocks.entries()) {
      const t0 = Date.now();
      const r = await post(a.url('eth'), call('eth_getBlockByHash', [hash, false], i));
      took.push(Date.now() - t0);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.result.hash, hash);
      assert.equal(r.headers.get('x-sluice-cache'), 'miss');
    }
  } finally {
    redis.resume();
  }
  assert.equal(await methodCount(f, 'eth_getBlockByHash'), base + 6, 'each went upstream');
  console.log(`misses with Redis stopped: ${took.join(', ')} ms`);
  // the first ones waited for Redis (10 ms, on 5 ms ticks), then the link went down (timeout_ms): no wait at all
  assert.ok(Math.max(...took) < 150, `no call waited long for a stopped Redis: ${took.join(', ')} ms`);
  await sleep(400);
  const cb = await cacheBlock(a);
  assert.ok(cb.redis.timeouts >= 1, `a lookup past its wait counts as a timeout: ${JSON.stringify(cb)}`);
});

test('unfinalized answers (keyed by block hash) stay on their host: never sent to Redis', { skip }, async () => {
  const { f, redis, a, b } = await twoHosts({ cacheLine: 'cache: { redis: true, redis_wait_ms: 200, unfinalized: head }' });
  for (let i = 0; i < 8; i++) { // block by block, so the probes see each height's hash
    await chainCtl(f, { advance: 1 });
    await sleep(250);
  }
  const head = (await chainCtl(f, {})).head;
  let h;
  for (const back of [3, 4, 5, 6]) {
    await postFresh(a.url('eth'), call('eth_getBlockByNumber', [hex(head - back), false]));
    const again = await postFresh(a.url('eth'), call('eth_getBlockByNumber', [hex(head - back), false]));
    if (again.headers.get('x-sluice-cache') === 'hit') { h = head - back; break; }
  }
  assert.ok(h !== undefined, 'host a kept a block above finalized under its hash');
  assert.equal(redis.cli('--scan', '--pattern', 'sluice:cache:e:*'), '', 'nothing of it went to Redis');
  const onB = await postFresh(b.url('eth'), call('eth_getBlockByNumber', [hex(h), false]));
  assert.equal(onB.headers.get('x-sluice-cache'), 'miss', 'host b does not get it');
});

test('cache.redis: true without cluster: is refused by --check', async () => {
  const dir = tempDir();
  const file = path.join(dir, 'sluice.yaml');
  writeFileSync(file, 'cache:\n  redis: true\nnetworks:\n  eth:\n    endpoints: ["http://127.0.0.1:1"]\n' +
    `state: { path: "${path.join(dir, 'state')}" }\n`);
  const r = spawnSync(SLUICE_BIN, ['--check', '-c', file], { encoding: 'utf8' });
  assert.notEqual(r.status, 0);
  assert.match(r.stdout + r.stderr, /sluice\.yaml:2: cache\.redis: true needs a cluster: section/);
});

test('--check --connect says whether Redis bounds the cache (maxmemory, volatile-lru)', { skip }, async () => {
  const f = await startFake({ name: 'f' });
  started.push(f);
  const bare = await startRedis();
  const bounded = await startRedis({ extra: ['--maxmemory', '64mb', '--maxmemory-policy', 'volatile-lru'] });
  const check = (redis) => {
    const dir = tempDir();
    const file = path.join(dir, 'sluice.yaml');
    writeFileSync(file, `cache: { redis: true }\ncluster: { redis: "${redis.url()}", host: "c" }\n` +
      `networks:\n  eth:\n    endpoints: ["${f.url}"]\nstate: { path: "${path.join(dir, 'state')}" }\n`);
    return spawnSync(SLUICE_BIN, ['--check', '--connect', '-c', file], { encoding: 'utf8' });
  };
  const warned = check(bare);
  assert.equal(warned.status, 0, 'a warning, not a refusal: ' + warned.stderr);
  assert.match(warned.stderr, /warning: cache\.redis: Redis has no maxmemory .*set maxmemory and maxmemory-policy volatile-lru/);
  const ok = check(bounded);
  assert.equal(ok.status, 0, ok.stderr);
  assert.match(ok.stdout, /cache\.redis: maxmemory 67108864 bytes, volatile-lru: only keys with an expiry are evicted/);
  assert.doesNotMatch(ok.stderr, /warning/);
});
