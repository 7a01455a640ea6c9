// The response cache (issue 23): answers that cannot change are kept in an
// LMDB environment of their own, shared by the workers and kept across a
// restart; X-Sluice-Cache says hit, miss or bypass. Real sluice, real fake
// providers counting what reaches them.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startFake, startSluice, post, call, sleep, adminGet, adminPost, events, waitFor, tempDir } from '../lib/harness.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const HEAD = 5000;
const methodCount = async (fake, m) => (await fake.stats()).methods[m] ?? 0;
// sluice asks each endpoint its eth_chainId at start (chain identity: the
// master, then each worker on its first tick): the calls counted are those
// after these asks (the count once it has not moved for 400 ms: a busy
// machine may run a worker's first tick late)
const startupAsks = async (fake) => {
  let last = -1, same = 0;
  for (;;) {
    const n = await methodCount(fake, 'eth_chainId');
    same = n === last ? same + 1 : 0;
    last = n;
    if (same >= 4) return n;
    await sleep(100);
  }
};

async function oneEndpoint(extra = '', statePath) {
  const f = await startFake({ name: 'f', args: ['--block', String(HEAD), '--block-time-ms', '0'] });
  started.push(f);
  const cfg = { cache: true, workers: 2, networks: { eth: { lines: ['hedge: { enabled: false }'], endpoints: [{ id: 'f', url: f.url }] } }, extra };
  if (statePath) cfg.statePath = statePath;
  const s = await startSluice(cfg);
  started.push(s);
  return { f, s };
}

// fresh connections, so both workers take calls
const postFresh = (url, body, headers = {}) => post(url, body, { connection: 'close', ...headers });

test('a constant of the chain reaches the provider once, from either worker; no-cache bypasses', async () => {
  const { f, s } = await oneEndpoint();
  const base = await startupAsks(f);
  const first = await postFresh(s.url('eth'), call('eth_chainId', [], 1));
  assert.equal(first.status, 200, first.text);
  assert.equal(first.headers.get('x-sluice-cache'), 'miss');
  for (let i = 2; i < 12; i++) {
    const r = await postFresh(s.url('eth'), call('eth_chainId', [], i));
    assert.equal(r.headers.get('x-sluice-cache'), 'hit', r.text);
    assert.equal(r.json.id, i, 'the client gets its own id back');
    assert.equal(r.json.result, first.json.result);
    assert.equal(r.headers.get('x-sluice-endpoint'), null, 'no endpoint answered it');
  }
  assert.equal(await methodCount(f, 'eth_chainId'), base + 1, 'one upstream call for eleven');
  const ids = ['"str-id"', 'null', '7'];
  for (const id of ids) {
    const r = await post(s.url('eth'), `{"jsonrpc":"2.0","id":${id},"method":"eth_chainId","params":[]}`);
    assert.equal(r.text.includes(`"id":${id}`), true, r.text);
  }
  const bypass = await post(s.url('eth'), call('eth_chainId'), { 'cache-control': 'no-cache' });
  assert.equal(bypass.headers.get('x-sluice-cache'), 'bypass');
  assert.equal(await methodCount(f, 'eth_chainId'), base + 2, 'no-cache went upstream');
  const uncacheable = await post(s.url('eth'), call('eth_blockNumber'));
  assert.equal(uncacheable.headers.get('x-sluice-cache'), 'miss');
});

test('a block by hash is kept; a null (not found) is not', async () => {
  const { f, s } = await oneEndpoint();
  const blk = await post(s.url('eth'), call('eth_getBlockByNumber', ['0x' + (HEAD - 10).toString(16), false]));
  const hash = blk.json.result.hash;
  for (let i = 0; i < 4; i++) {
    const r = await postFresh(s.url('eth'), call('eth_getBlockByHash', [hash, false], i));
    assert.equal(r.json.result.hash, hash);
    assert.equal(r.headers.get('x-sluice-cache'), i === 0 ? 'miss' : 'hit');
  }
  assert.equal(await methodCount(f, 'eth_getBlockByHash'), 1);
  const unknown = '0x' + 'ab'.repeat(32);
  for (let i = 0; i < 3; i++) {
    const r = await post(s.url('eth'), call('eth_getBlockByHash', [unknown, false], i));
    assert.equal(r.json.result, null);
    assert.equal(r.headers.get('x-sluice-cache'), 'miss');
  }
  assert.equal(await methodCount(f, 'eth_getBlockByHash'), 4, 'every null went upstream');
});

test('a batch mixes hits and misses: only the misses go upstream, as a smaller batch', async () => {
  const { f, s } = await oneEndpoint();
  await startupAsks(f); // a worker's late first tick asks eth_chainId upstream: not the batch's
  await post(s.url('eth'), call('eth_chainId'));
  await post(s.url('eth'), call('net_version'));
  await f.reset();
  const r = await post(s.url('eth'), [call('eth_chainId', [], 'a'), call('eth_gasPrice', [], 'b'), call('net_version', [], 'c')]);
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json.map((m) => m.id), ['a', 'b', 'c']);
  assert.ok(r.json.every((m) => m.result !== undefined), r.text);
  assert.equal(r.headers.get('x-sluice-cache'), 'miss');
  const st = await f.stats();
  assert.equal(st.methods.eth_chainId ?? 0, 0);
  assert.equal(st.methods.net_version ?? 0, 0);
  assert.equal(st.methods.eth_gasPrice, 1);
  const all = await post(s.url('eth'), [call('eth_chainId', [], 1), call('net_version', [], 2)]);
  assert.equal(all.headers.get('x-sluice-cache'), 'hit');
  assert.deepEqual(all.json.map((m) => m.id), [1, 2]);
});

test('entries outlive a restart; cache: { enabled: false } sends everything upstream', async () => {
  const { f, s } = await oneEndpoint();
  await post(s.url('eth'), call('eth_chainId'));
  await s.stop();
  const again = await startSluice({ cache: true, workers: 1, statePath: s.statePath,
    networks: { eth: { endpoints: [{ id: 'f', url: f.url }] } } });
  started.push(again);
  const base = await startupAsks(f);
  const r = await post(again.url('eth'), call('eth_chainId'));
  assert.equal(r.headers.get('x-sluice-cache'), 'hit', 'kept across the restart');
  assert.equal(await methodCount(f, 'eth_chainId'), base, 'not asked upstream');
  await again.stop();
  const off = await startSluice({ workers: 1, statePath: s.statePath, extra: 'cache: { enabled: false }',
    networks: { eth: { endpoints: [{ id: 'f', url: f.url }] } } });
  started.push(off);
  const offBase = await startupAsks(f);
  const o = await post(off.url('eth'), call('eth_chainId'));
  assert.equal(o.headers.get('x-sluice-cache'), 'bypass');
  assert.equal(await methodCount(f, 'eth_chainId'), offBase + 1);
});

test('the operator sees hits, misses and credits saved, and can purge (with an event)', async () => {
  const f = await startFake({ name: 'f', args: ['--block', String(HEAD), '--block-time-ms', '0'] });
  started.push(f);
  const s = await startSluice({ cache: true, workers: 2,
    networks: { eth: { endpoints: [{ id: 'f', url: f.url, cost_profile: 'infura' }] } } });
  started.push(s);
  const base = await startupAsks(f);
  for (let i = 0; i < 5; i++) await postFresh(s.url('eth'), call('eth_chainId', [], i));
  await sleep(400); // the workers' counters are flushed every ~100 ms
  const net = (await adminGet(s, '/admin/networks')).json.find((n) => n.network === 'eth');
  assert.equal(net.cache.hits, 4, JSON.stringify(net.cache));
  assert.equal(net.cache.misses, 1);
  assert.equal(net.cache.hit_ratio, 0.8);
  assert.equal(net.cache.credits_saved, 20, 'infura prices eth_chainId at 5 credits, four hits');
  const metrics = (await adminGet(s, '/metrics')).text;
  assert.match(metrics, /sluice_cache_lookups_total\{network="eth",method="eth_chainId",result="hit"\} 4/);
  assert.match(metrics, /sluice_cache_entries 1\b/);
  assert.match(metrics, /sluice_cache_credits_saved_total\{network="eth"\} [1-9]/);

  const nope = await adminPost(s, '/admin/cache/purge?network=nope');
  assert.equal(nope.status, 404);
  const purged = await adminPost(s, '/admin/cache/purge?network=eth');
  assert.equal(purged.status, 200, JSON.stringify(purged.json));
  assert.equal(purged.json.removed, 1);
  const evs = (await events(s)).filter((e) => e.kind === 'cache_purged');
  assert.equal(evs.length, 1);
  assert.equal(evs[0].network, 'eth');
  const after = await post(s.url('eth'), call('eth_chainId'));
  assert.equal(after.headers.get('x-sluice-cache'), 'miss', 'purged: asked upstream again');
  assert.equal(await methodCount(f, 'eth_chainId'), base + 2);
});

test('a cache filled far past cache.max_mb stays under it, and the client limits still hold', async () => {
  const f = await startFake({ name: 'f', args: ['--block', String(HEAD), '--block-time-ms', '0'] });
  started.push(f);
  // one caller fills the cache on purpose: its share of insertions (cache.caller_share_pct) is lifted
  const s = await startSluice({ cache: true, workers: 2, extra: 'cache: { max_mb: 1, caller_share_pct: 100 }\ntiers:\n  anonymous: { per_second: 100000 }',
    networks: { eth: { lines: ['hedge: { enabled: false }'], endpoints: [{ id: 'f', url: f.url }] } } });
  started.push(s);
  // ~1,500 blocks by hash of ~700 bytes each: about three times what 1 MB holds once LMDB's pages are counted
  const batch = 100;
  for (let from = 1; from <= 1500; from += batch) {
    const nums = Array.from({ length: batch }, (_, i) => call('eth_getBlockByNumber', ['0x' + (from + i).toString(16), false], i));
    const blocks = (await post(s.url('eth'), nums)).json;
    const byHash = blocks.map((b, i) => call('eth_getBlockByHash', [b.result.hash, false], i));
    const r = await post(s.url('eth'), byHash);
    assert.equal(r.status, 200);
    assert.ok(r.json.every((m, i) => m.result?.hash === blocks[i].result.hash), 'every answer is the block asked for');
  }
  const m = (await adminGet(s, '/metrics')).text;
  const used = Number(m.match(/sluice_cache_bytes\{of="used"\} (\d+)/)[1]);
  const max = Number(m.match(/sluice_cache_bytes\{of="max"\} (\d+)/)[1]);
  const evicted = Number(m.match(/sluice_cache_evictions_total (\d+)/)[1]);
  console.log(`cache after 1,500 blocks: ${used} of ${max} bytes used, ${evicted} evicted`);
  assert.equal(max, 1024 * 1024);
  assert.ok(used <= max, `pages take ${used} of ${max}`);
  assert.ok(evicted > 0, 'the oldest entries went: ' + s.logs().split('\n').filter((l) => /cache/.test(l)).slice(0, 5).join(' / '));
  // the state map (limits) never depended on it: a tight limit still refuses
  const limited = await startSluice({ cache: true, workers: 1, statePath: s.statePath + '-2',
    extra: 'cache: { max_mb: 1 }\ntiers:\n  anonymous: { per_minute: 3 }',
    networks: { eth: { endpoints: [{ id: 'f', url: f.url }] } } });
  started.push(limited);
  const hash = (await post(s.url('eth'), call('eth_getBlockByNumber', ['0x10', false]))).json.result.hash;
  const codes = [];
  for (let i = 0; i < 6; i++) codes.push((await post(limited.url('eth'), call('eth_getBlockByHash', [hash, false], i))).status);
  assert.deepEqual(codes, [200, 200, 200, 429, 429, 429], 'hits count against the client\'s limit as any call does');
});

// The fake's chain moved by hand: /_control/chain (head, advance, reorg).
const chainCtl = async (f, body) => (await fetch(`http://127.0.0.1:${f.port}/_control/chain`,
  { method: 'POST', body: JSON.stringify(body) })).json();
const hex = (n) => '0x' + n.toString(16);

async function withChainProbe(cacheLine) {
  const f = await startFake({ name: 'f', args: ['--block', String(HEAD), '--block-time-ms', '0'] });
  started.push(f);
  const s = await startSluice({ cache: true, workers: 2, extra: cacheLine,
    networks: { eth: { lines: ['hedge: { enabled: false }', 'chain_probe_ms: 100', 'ranking: { probe_interval_ms: 100 }'],
      endpoints: [{ id: 'f', url: f.url }] } } });
  started.push(s);
  await waitFor(async () => (await adminGet(s, '/admin/networks')).json[0].finalized !== null,
    { what: 'the chain probe reported finalized' });
  await sleep(250); // both workers' ticks fed it to their views
  return { f, s };
}

test('a finalized block by number is kept; one above finalized is not (unfinalized: off)', async () => {
  const { s } = await withChainProbe('cache: { unfinalized: off }');
  const fin = (await adminGet(s, '/admin/networks')).json[0].finalized;
  assert.equal(fin, HEAD - 64, 'the fake finalizes 64 blocks below its head');
  const below = hex(fin - 36), above = hex(HEAD - 3);
  const seen = [];
  for (let i = 0; i < 4; i++) {
    const r = await postFresh(s.url('eth'), call('eth_getBlockByNumber', [below, false], i));
    assert.equal(r.json.result.number, below);
    seen.push(r.headers.get('x-sluice-cache'));
  }
  assert.deepEqual(seen, ['miss', 'hit', 'hit', 'hit']);
  for (let i = 0; i < 3; i++) {
    const r = await postFresh(s.url('eth'), call('eth_getBlockByNumber', [above, false], i));
    assert.equal(r.headers.get('x-sluice-cache'), 'miss', 'above finalized: never kept by default');
  }
  // a receipt of an unknown transaction is null: never kept
  for (let i = 0; i < 2; i++) {
    const r = await post(s.url('eth'), call('eth_getTransactionReceipt', ['0x' + '12'.repeat(32)], i));
    assert.equal(r.json.result, null);
    assert.equal(r.headers.get('x-sluice-cache'), 'miss');
  }
});

test('unfinalized: head keeps a recent block under its hash and never serves it after a reorg', async () => {
  const { f, s } = await withChainProbe('cache: { unfinalized: head }');
  // walk the head on block by block, so the probes see each height's hash
  for (let i = 0; i < 8; i++) {
    await chainCtl(f, { advance: 1 });
    await sleep(250);
  }
  const head = (await chainCtl(f, {})).head;
  let h, before;
  for (const back of [3, 4, 5, 6]) { // a height the ring holds: the second read is a hit
    const a = await postFresh(s.url('eth'), call('eth_getBlockByNumber', [hex(head - back), false]));
    const b = await postFresh(s.url('eth'), call('eth_getBlockByNumber', [hex(head - back), false]));
    if (b.headers.get('x-sluice-cache') === 'hit') { h = head - back; before = a.json.result.hash; break; }
  }
  assert.ok(h !== undefined, 'a block above finalized was kept under its hash');
  await chainCtl(f, { reorg: 8 });
  const direct = await post(f.url, call('eth_getBlockByNumber', [hex(h), false]));
  const after = direct.json.result.hash;
  assert.notEqual(after, before, 'the reorg replaced the block');
  // until the probe sees the new hashes the old entry may be found; once it has, never again
  await waitFor(async () => (await adminGet(s, '/admin/networks')).json[0].reorgs >= 1, { what: 'the reorg seen' });
  await sleep(250);
  for (let i = 0; i < 6; i++) {
    const r = await postFresh(s.url('eth'), call('eth_getBlockByNumber', [hex(h), false], i));
    assert.equal(r.json.result.hash, after, `read ${i} after the reorg: ${r.headers.get('x-sluice-cache')}`);
  }
  // a latest read is kept only while the head is the same block
  const bal = () => postFresh(s.url('eth'), call('eth_getBalance', ['0x' + '00'.repeat(20), 'latest']));
  await bal();
  assert.equal((await bal()).headers.get('x-sluice-cache'), 'hit');
  await chainCtl(f, { advance: 1 });
  await sleep(300);
  assert.equal((await bal()).headers.get('x-sluice-cache'), 'miss', 'the head moved: the entry is not found');
});

test('a broken cache file is moved aside and an empty cache made; a cache that cannot open at all leaves sluice serving', async () => {
  const f = await startFake({ name: 'f', args: ['--block', String(HEAD), '--block-time-ms', '0'] });
  started.push(f);
  const dir = tempDir();
  const cachePath = path.join(dir, 'cache');
  mkdirSync(cachePath);
  writeFileSync(path.join(cachePath, 'data.mdb'), Buffer.alloc(64 * 1024, 0x5a)); // not an LMDB file
  const s = await startSluice({ cache: true, workers: 2, statePath: path.join(dir, 'state'),
    extra: `cache: { path: "${cachePath}" }`, networks: { eth: { endpoints: [{ id: 'f', url: f.url }] } } });
  started.push(s);
  assert.match(s.logs(), /cache: .*data\.mdb did not open: moved aside to .*data\.mdb\.broken; an empty cache is made/);
  assert.ok(existsSync(path.join(cachePath, 'data.mdb.broken')));
  assert.equal(readFileSync(path.join(cachePath, 'data.mdb.broken')).length, 64 * 1024, 'the broken file is kept as it was');
  // net_version: nobody asks it at start (eth_chainId is asked by each worker)
  assert.equal((await postFresh(s.url('eth'), call('net_version'))).headers.get('x-sluice-cache'), 'miss');
  const hit = await postFresh(s.url('eth'), call('net_version', [], 2));
  assert.equal(hit.headers.get('x-sluice-cache'), 'hit', 'the new cache keeps answers');
  assert.equal(hit.json.id, 2);
  assert.equal(await methodCount(f, 'net_version'), 1);

  // a cache folder that cannot be made (its parent is a file): sluice serves without it
  const file = path.join(dir, 'a-file');
  writeFileSync(file, 'x');
  const s2 = await startSluice({ cache: true, workers: 1, statePath: path.join(dir, 'state2'),
    extra: `cache: { path: "${file}/cache" }`, networks: { eth: { endpoints: [{ id: 'f', url: f.url }] } } });
  started.push(s2);
  assert.match(s2.logs(), /cache: cannot open .*a-file\/cache: sluice runs without its response cache/);
  for (let i = 0; i < 2; i++) {
    const r = await post(s2.url('eth'), call('net_version', [], i));
    assert.equal(r.status, 200);
    assert.equal(r.json.result, '1');
    assert.equal(r.headers.get('x-sluice-cache'), 'miss');
  }
  assert.equal(await methodCount(f, 'net_version'), 3, 'every call went upstream');
});
