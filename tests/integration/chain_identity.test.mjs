// Chain identity learned from the endpoints' majority, safe and finalized
// heads, and reorgs (issue 21): real sluice processes over fake providers
// that model a chain (tests/fakeprovider: --chain-id, /_control/chain).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { startFake, startSluice, renderConfig, tempDir, post, call, sleep, waitFor, waitLog, adminGet, events, metricValue, SLUICE_BIN } from '../lib/harness.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const TOP = 1000100;
const ADDR = '0x000000000000000000000000000000000000dead';
const frozen = (name, head, more = []) =>
  startFake({ name, args: ['--block', String(head), '--block-time-ms', '0', ...more] });

async function endpointsView(s) {
  return Object.fromEntries((await adminGet(s, '/admin/endpoints')).json.map((e) => [e.id, e]));
}
const networkView = async (s, name = 'eth') => (await adminGet(s, '/admin/networks')).json.find((n) => n.network === name);

function configFile(networks) {
  const dir = tempDir();
  const file = path.join(dir, 'sluice.yaml');
  writeFileSync(file, renderConfig({ networks, statePath: path.join(dir, 'state') }));
  return file;
}

test('no chain_id: the majority is learned, the endpoint on another chain with a higher head is excluded and never answers', async () => {
  const a = await frozen('a', TOP), b = await frozen('b', TOP - 1);
  const w = await frozen('w', TOP + 500, ['--chain-id', '0x5']);
  started.push(a, b, w);
  await a.setMode('slow', { delay_ms: 30 });
  await b.setMode('slow', { delay_ms: 30 }); // w, the fastest, would rank first
  const s = await startSluice({ workers: 2, networks: { eth: {
    lines: ['ranking: { probe_interval_ms: 1000 }', 'hedge: { enabled: false }'],
    endpoints: [{ id: 'w', url: w.url }, { id: 'a', url: a.url }, { id: 'b', url: b.url }] } } });
  started.push(s);
  const t0 = Date.now();
  const v = await waitFor(async () => { const x = await endpointsView(s); return x.w.excluded?.startsWith('wrong chain') && x; },
    { timeoutMs: 1000, what: 'w excluded as on the wrong chain within one probe interval' });
  console.log(`excluded after ${Date.now() - t0} ms:`, v.w.excluded);
  assert.equal(v.w.excluded, 'wrong chain (want 0x1)');
  await waitFor(async () => (await events(s)).some((e) => e.kind === 'endpoint_wrong_chain'), { timeoutMs: 1000, what: 'its event' });
  assert.equal(v.w.usable, false);
  assert.match(s.logs(), /network eth: chain 0x1 learned from its endpoints \(w gave 0x5, a gave 0x1, b gave 0x1\)/);
  await w.reset();
  const seen = {};
  for (let i = 0; i < 20; i++) {
    const r = await post(s.url('eth'), call(i % 2 ? 'eth_blockNumber' : 'eth_getBalance', i % 2 ? [] : [ADDR, 'latest'], i));
    assert.equal(r.status, 200, r.text);
    seen[r.headers.get('x-sluice-endpoint')] = (seen[r.headers.get('x-sluice-endpoint')] ?? 0) + 1;
    if (i % 2) assert.equal(Number(BigInt(r.json.result)), TOP, "the network's head, not the other chain's");
  }
  assert.equal(seen.w ?? 0, 0, 'no client call answered by the wrong-chain endpoint');
  assert.equal((await w.stats()).methods.eth_getBalance ?? 0, 0, 'none sent to it');
  const evs = (await events(s)).filter((e) => e.kind === 'endpoint_wrong_chain');
  assert.equal(evs.length, 1, 'one event');
  assert.equal(evs[0].endpoint, 'w');
  assert.match(evs[0].reason, /wrong chain: 0x5 \(want 0x1\)/);
  const net = await networkView(s);
  assert.equal(net.chain_id, '0x1');
  assert.equal(net.chain_id_source, 'learned');

  // a restart with every endpoint down still knows the chain it learned
  await s.stop();
  started.splice(started.indexOf(s), 1);
  const again = await startSluice({ workers: 1, networks: { eth: {
    lines: ['ranking: { probe_interval_ms: 1000 }'],
    endpoints: [{ id: 'x', url: 'http://127.0.0.1:1' }] } }, statePath: s.statePath });
  started.push(again);
  assert.match(again.logs(), /network eth: chain 0x1 \(learned earlier from its endpoints, kept in state\)/);
  assert.equal((await networkView(again)).chain_id, '0x1');
});

test('1 against 1 with no chain_id: sluice refuses to start, and --check --connect says the same', async () => {
  const a = await frozen('a', TOP), w = await frozen('w', TOP, ['--chain-id', '5']);
  started.push(a, w);
  const networks = { eth: { endpoints: [{ id: 'a', url: `${a.url}/v2/SECRETKEY` }, { id: 'w', url: w.url }] } };
  const file = configFile(networks);
  const run = spawnSync(SLUICE_BIN, ['-c', file], { encoding: 'utf8', timeout: 15000 });
  console.log('refused:', run.stderr.trim().split('\n').pop());
  assert.notEqual(run.status, 0, 'non-zero exit');
  assert.match(run.stderr, /network eth: its endpoints disagree on the chain and no chain_id is configured \(a gave 0x1, w gave 0x5\)/);
  assert.doesNotMatch(run.stderr, /listening on/);
  assert.doesNotMatch(run.stderr, /SECRETKEY/, 'no URL, no key');
  const check = spawnSync(SLUICE_BIN, ['--check', '--connect', '-c', file], { encoding: 'utf8', timeout: 15000 });
  assert.equal(check.status, 1, check.stdout + check.stderr);
  assert.match(check.stderr, /a gave 0x1, w gave 0x5/);
  assert.doesNotMatch(check.stderr + check.stdout, /SECRETKEY/);
  // agreeing endpoints: --check --connect reports the chain
  const b = await frozen('b', TOP);
  started.push(b);
  const good = configFile({ eth: { endpoints: [{ id: 'a', url: a.url }, { id: 'b', url: b.url }] } });
  const ok = spawnSync(SLUICE_BIN, ['--check', '--connect', '-c', good], { encoding: 'utf8', timeout: 15000 });
  assert.equal(ok.status, 0, ok.stdout + ok.stderr);
  assert.match(ok.stdout, /network eth: chain 0x1, by 2 of 2 endpoints/);
});

test('every endpoint unreachable at start: sluice starts, and learns the chain from the probes later', async () => {
  const a = await frozen('a', TOP), b = await frozen('b', TOP);
  const ports = [a.port, b.port];
  await a.stop(); await b.stop();
  // the ports are closed now: nothing answers at start
  const s = await startSluice({ workers: 2, networks: { eth: {
    lines: ['ranking: { probe_interval_ms: 200 }'],
    endpoints: [{ id: 'a', url: a.url }, { id: 'b', url: b.url }] } } });
  started.push(s);
  assert.match(s.logs(), /network eth: no endpoint answered its chain id: starting/);
  assert.equal((await networkView(s)).chain_id, null);
  for (const [i, port] of ports.entries())
    started.push(await frozen(['a', 'b'][i], TOP, ['--listen', `127.0.0.1:${port}`]));
  const t0 = Date.now();
  const net = await waitFor(async () => { const n = await networkView(s); return n.chain_id === '0x1' && n; },
    { timeoutMs: 5000, what: 'the chain learned from the probes' });
  assert.equal(net.chain_id_source, 'learned');
  console.log(`learned from the probes ${Date.now() - t0} ms after the endpoints came up`);
  await waitLog(s, /network eth: chain 0x1 learned from its endpoints \(2 of 2 agree\)/);
});

const chainCmd = async (f, body) => (await fetch(`${f.url}/_control/chain`, { method: 'POST', body: JSON.stringify(body) })).json();

test('safe and finalized per endpoint and per network advance with the chain; a reorg is one event with its depth (two workers)', async () => {
  const a = await frozen('a', TOP), b = await frozen('b', TOP);
  started.push(a, b);
  const s = await startSluice({ workers: 2, networks: { eth: {
    lines: ['ranking: { probe_interval_ms: 200 }', 'chain_probe_ms: 300'],
    endpoints: [{ id: 'a', url: a.url }, { id: 'b', url: b.url }] } } });
  started.push(s);
  let v = await waitFor(async () => { const x = await endpointsView(s); return x.a.finalized && x.b.finalized && x; },
    { timeoutMs: 5000, what: 'finalized probed' });
  assert.deepEqual([v.a.head, v.a.safe, v.a.finalized], [TOP, TOP - 32, TOP - 64]);
  assert.deepEqual([v.b.safe, v.b.finalized], [TOP - 32, TOP - 64]);
  // the chain moves one block at a time, each seen by a chain probe (the ring
  // then holds every height's hash: what a reorg's depth is measured by)
  for (let i = 1; i <= 5; i++) {
    await Promise.all([chainCmd(a, { advance: 1 }), chainCmd(b, { advance: 1 })]);
    await waitFor(async () => { const x = await endpointsView(s); return x.a.finalized === TOP + i - 64 && x.b.finalized === TOP + i - 64; },
      { timeoutMs: 3000, what: `finalized at ${TOP + i - 64}` });
    // each worker's ring takes the height from the shared record at its next
    // tick: a slow one (ASan on a busy machine) must not miss it, or the
    // reorg's depth below is measured on a ring with a gap
    await sleep(1000);
  }
  const net = await networkView(s);
  assert.deepEqual([net.head, net.safe, net.finalized], [TOP + 5, TOP + 5 - 32, TOP + 5 - 64]);
  assert.equal(await metricValue(s, 'sluice_chain_finalized{network="eth"}'), TOP + 5 - 64);
  assert.equal(await metricValue(s, 'sluice_chain_head{network="eth"}'), TOP + 5);
  assert.equal(await metricValue(s, 'sluice_endpoint_lag_blocks{network="eth",endpoint="a"}'), 0);
  assert.equal((await events(s)).filter((e) => e.kind === 'reorg').length, 0, 'no reorg while the chain only grew');

  const before = await chainCmd(a, {});
  const after = (await Promise.all([chainCmd(a, { reorg: 3 }), chainCmd(b, { reorg: 3 })]))[0];
  assert.notEqual(after.hash, before.hash);
  await waitFor(async () => (await events(s)).some((e) => e.kind === 'reorg'), { timeoutMs: 5000, what: 'the reorg event' });
  await sleep(1500); // both workers, both endpoints have seen it by now
  const reorgs = (await events(s)).filter((e) => e.kind === 'reorg');
  console.log('reorg events', JSON.stringify(reorgs.map((e) => [e.endpoint, e.pid, e.depth, e.reason])));
  assert.equal(reorgs.length, 1, 'one event for one reorg, whichever workers and endpoints saw it');
  assert.equal(reorgs[0].network, 'eth');
  assert.equal(reorgs[0].depth, 3);
  assert.match(reorgs[0].reason, new RegExp(`reorg of depth 3 at height ${TOP + 3}: 0x[0-9a-f]{64} replaced by 0x[0-9a-f]{64}`));
  assert.equal(await metricValue(s, 'sluice_chain_reorgs_total{network="eth"}'), 1);
  assert.equal(await metricValue(s, 'sluice_chain_reorg_depth{network="eth"}'), 3);
  assert.equal((await networkView(s)).reorgs, 1);
});

test('Solana: the genesis hash is learned; confirmed and finalized slots show as safe and finalized', async () => {
  const SLOT = 300000000;
  const sol = (name) => startFake({ name, chain: 'solana', args: ['--block', String(SLOT), '--block-time-ms', '0', '--safe-depth', '2', '--finalized-depth', '5'] });
  const a = await sol('a'), b = await sol('b');
  started.push(a, b);
  const s = await startSluice({ workers: 2, networks: { sol: { chain: 'solana',
    lines: ['ranking: { probe_interval_ms: 200 }', 'chain_probe_ms: 300'],
    endpoints: [{ id: 'a', url: a.url }, { id: 'b', url: b.url }] } } });
  started.push(s);
  const v = await waitFor(async () => { const x = await endpointsView(s); return x.a.finalized && x.b.safe && x; },
    { timeoutMs: 5000, what: 'the chain probe answered' });
  assert.deepEqual([v.a.safe, v.a.finalized, v.b.safe, v.b.finalized], [SLOT - 2, SLOT - 5, SLOT - 2, SLOT - 5]);
  const net = await networkView(s, 'sol');
  assert.equal(net.chain_id_source, 'learned');
  assert.match(net.chain_id, /^[1-9A-HJ-NP-Za-km-z]{43,44}$/);
  assert.deepEqual([net.safe, net.finalized], [SLOT - 2, SLOT - 5]);
});
