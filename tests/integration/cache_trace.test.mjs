// A realistic trace replayed through the response cache (issue 23): a wallet
// refreshing balances at `latest` and asking eth_chainId, two indexers walking
// the same finalized blocks and their logs (the second 20 blocks behind, as a
// restarted one would), and a reorg injected mid-trace. Every answer the
// cache gives is compared with what the provider answers for the same call
// at that moment: none may differ. Prints the hit ratio and the credits
// saved (infura's prices).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startFake, startSluice, post, call, sleep, adminGet, waitFor } from '../lib/harness.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const HEAD = 20000;
const hex = (n) => '0x' + n.toString(16);
const chainCtl = async (f, body) => (await fetch(`http://127.0.0.1:${f.port}/_control/chain`,
  { method: 'POST', body: JSON.stringify(body) })).json();
const strip = (j) => JSON.stringify(j?.result ?? j?.error ?? null);

test('a trace: hits are never wrong, before or after a reorg; hit ratio and credits saved', async () => {
  const f = await startFake({ name: 'f', args: ['--block', String(HEAD), '--block-time-ms', '0', '--logs-per-block', '2'] });
  started.push(f);
  const s = await startSluice({ cache: true, workers: 2,
    networks: { eth: { lines: ['hedge: { enabled: false }', 'chain_probe_ms: 100'],
      endpoints: [{ id: 'f', url: f.url, cost_profile: 'infura' }] } } });
  started.push(s);
  await waitFor(async () => (await adminGet(s, '/admin/networks')).json[0].finalized !== null, { what: 'finalized known' });
  await sleep(250);
  const fin = (await adminGet(s, '/admin/networks')).json[0].finalized;
  const start = fin - 120;
  let hits = 0, calls = 0, wrong = [];
  async function ask(c) {
    const r = await post(s.url('eth'), c, { connection: 'close' });
    calls++;
    if (r.headers.get('x-sluice-cache') !== 'hit') return;
    hits++;
    const truth = await post(f.url, c);
    if (strip(r.json) !== strip(truth.json)) wrong.push(`${c.method} ${JSON.stringify(c.params)}`);
  }
  const ADDRS = ['0x' + '11'.repeat(20), '0x' + '22'.repeat(20), '0x' + '33'.repeat(20)];
  for (let round = 0; round < 60; round++) {
    if (round === 30) await chainCtl(f, { reorg: 5 }); // mid-trace: the unfinalized tip replaced
    for (const a of ADDRS) await ask(call('eth_getBalance', [a, 'latest'], round));
    await ask(call('eth_chainId', [], round));
    await ask(call('eth_blockNumber', [], round));
    for (const lag of [0, 20]) { // two indexers, the second 20 blocks behind
      const n = start + round - lag;
      await ask(call('eth_getBlockByNumber', [hex(n), false], round));
      await ask(call('eth_getLogs', [{ fromBlock: hex(n), toBlock: hex(n) }], round));
    }
    await ask(call('eth_getBlockByNumber', ['latest', false], round)); // a tag: never kept
  }
  await sleep(300); // the workers' counters flushed
  const net = (await adminGet(s, '/admin/networks')).json[0];
  console.log(`trace: ${calls} calls, ${hits} answered from the cache (${(100 * hits / calls).toFixed(1)}%); ` +
    `lookups ${net.cache.hits} hits / ${net.cache.misses} misses (hit ratio ${net.cache.hit_ratio.toFixed(2)}); ` +
    `${net.cache.credits_saved} infura credits saved; ${wrong.length} wrong`);
  assert.deepEqual(wrong, [], 'an answer from the cache differed from the provider\'s');
  // every repeat of what cannot change, and nothing else: eth_chainId after its first
  // call (59), and the second indexer's block and logs once the first has read them (40 x 2)
  assert.equal(hits, 59 + 80, `the trace's repeats were answered from the cache: ${hits} of ${calls}`);
  assert.ok(net.cache.credits_saved > 0);
});
