// The response cache is shared by every caller, so no one caller may take it
// over (hardening round three): an answer over cache.max_entry_kb is never
// kept, a large one only on its second ask, and a caller inserts at most
// cache.caller_share_pct of the map a minute. Before: three 56 MB eth_getLogs
// answers evicted every other client's entries. Here one caller (127.0.0.2)
// floods the cache with large eth_getLogs answers, twice each, while
// another's 300 small entries must all stay.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startFake, startSluice, post, postFresh, call } from '../lib/harness.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const HEAD = 5000000;
const ATTACKER = { localAddress: '127.0.0.2' };

test('one caller flooding the cache with large answers evicts none of another caller\'s entries', async () => {
  const f = await startFake({ name: 'f', args: ['--block', String(HEAD), '--block-time-ms', '0'] });
  started.push(f);
  const s = await startSluice({ workers: 1, cache: true, networks: { eth: { endpoints: [{ id: 'f', url: f.url }] } },
    extra: 'cache: { max_mb: 64 }' });
  started.push(s);
  // the bystander's 300 blocks, by hash: kept for ever
  const hashes = [];
  for (let i = 0; i < 300; i++)
    hashes.push((await post(f.url, call('eth_getBlockByNumber', [`0x${(HEAD - 1000 + i).toString(16)}`, false]))).json.result.hash);
  for (const [i, h] of hashes.entries()) {
    const r = await post(s.url('eth'), call('eth_getBlockByHash', [h, false], i));
    assert.equal(r.headers.get('x-sluice-cache'), 'miss', r.text);
  }
  // answers of 1.9 MB (4,000 logs): over the 1 MiB cap, never kept however often asked
  await f.setMode('ok', { logs: 4000 });
  let hugeKept = 0;
  for (let i = 0; i < 30; i++)
    for (let ask = 0; ask < 3; ask++) {
      const r = await postFresh(s.url('eth'), call('eth_getLogs', [{ blockHash: hashes[i] }], ask), {}, ATTACKER);
      assert.equal(r.status, 200, r.text.slice(0, 200));
      hugeKept += r.headers.get('x-sluice-cache') === 'hit';
    }
  // answers of 470 KB (1,000 logs), each asked twice: kept up to the caller's share only
  await f.setMode('ok', { logs: 1000 });
  let kept = 0;
  for (let i = 30; i < 90; i++) {
    for (let ask = 0; ask < 2; ask++)
      await postFresh(s.url('eth'), call('eth_getLogs', [{ blockHash: hashes[i] }], ask), {}, ATTACKER);
    const r = await postFresh(s.url('eth'), call('eth_getLogs', [{ blockHash: hashes[i] }], 9), {}, ATTACKER);
    kept += r.headers.get('x-sluice-cache') === 'hit';
  }
  console.log(`huge answers served from the cache: ${hugeKept}; 470 KB answers kept: ${kept} of 60`);
  assert.equal(hugeKept, 0, 'an answer over cache.max_entry_kb is never kept');
  const share = Math.floor((64 * 0.12 * 1048576) / 470000);
  assert.ok(kept >= 1 && kept <= share + 1, `the caller kept about its share (${kept}, share ~${share})`);
  // every one of the bystander's entries is still there
  let hits = 0;
  for (const [i, h] of hashes.entries()) {
    const r = await post(s.url('eth'), call('eth_getBlockByHash', [h, false], i));
    hits += r.headers.get('x-sluice-cache') === 'hit';
  }
  assert.equal(hits, 300, 'the bystander\'s entries survived');
});
