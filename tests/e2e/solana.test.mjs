// @solana/web3.js (1.x) through sluice in front of two fake Solana providers:
// the client's strict response schemas accept what sluice relays, and when the
// first provider fails (HTTP 503, connection reset) the reads still work,
// answered by the second. Transfers: a write is never sent twice, so an HTTP
// 503 (the provider may have acted on it) ends in sluice's ambiguous-write
// error, while a 429 (provably not acted on) moves it to the second provider.
//
// The fakes start at different slots (A ~300M, B ~400M, +1 per second) so a
// slot tells which provider answered.
import { test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import {
  Connection, Keypair, PublicKey, SystemProgram, Transaction, LAMPORTS_PER_SOL,
} from '@solana/web3.js';
import { startFake, startSluice, post, call, waitFor } from '../lib/harness.mjs';
import { base58, stopSluiceCleanly } from '../lib/e2e.mjs';

const SLOT_A = 300_000_000;
const SLOT_B = 400_000_000;
const SLOTS_PER_EPOCH = 432_000;
const READS = ['getSlot', 'getBalance', 'getLatestBlockhash', 'getVersion', 'getEpochInfo'];

// One network per scenario, all in front of the same two fakes: what sluice
// learns about a in one scenario (its breaker opens after a few failures in a
// row, a 429 marks it rate limited) stays in that scenario's network.
const SCENARIOS = ['sol', 'sol-http503', 'sol-reset', 'tx-http503', 'tx-http429'];
let a, b, sluice;
const conns = {};

before(async () => {
  [a, b] = await Promise.all([
    startFake({ name: 'a', chain: 'solana', args: ['--block', String(SLOT_A)] }),
    startFake({ name: 'b', chain: 'solana', args: ['--block', String(SLOT_B)] }),
  ]);
  const networks = {};
  for (const name of SCENARIOS) {
    networks[name] = {
      chain: 'solana',
      // the two fakes sit 100M slots apart on purpose (the slot says who answered):
      // with head probes on, the ranking would rightly exclude the one behind
      lines: ['timeouts: { connect_ms: 500, first_byte_ms: 1000, attempt_ms: 2000, request_ms: 5000 }',
        'ranking: { probe_interval_ms: 0 }'],
      endpoints: [{ id: 'a', url: a.url }, { id: 'b', url: b.url, tier: 'fallback' }],
    };
  }
  sluice = await startSluice({ workers: 2, networks });
  // no client-side retry on 429: only sluice may fail over
  for (const name of SCENARIOS) conns[name] = new Connection(sluice.url(name), { commitment: 'confirmed', disableRetryOnRateLimit: true });
});

after(async () => {
  const trouble = sluice ? await stopSluiceCleanly(sluice) : [];
  await Promise.all([a, b].filter(Boolean).map((f) => f.stop()));
  assert.deepEqual(trouble, [], 'sluice ran and stopped cleanly');
});

beforeEach(async () => {
  for (const f of [a, b]) {
    await f.setMode('ok');
    await f.reset();
  }
});

const near = (slot, base) => slot >= base && slot < base + 600;   // a test run lasts well under 10 minutes

// The five reads; asserts every field against what a provider starting at `base` answers.
async function readAll(conn, base) {
  const owner = Keypair.generate().publicKey;
  const slot = await conn.getSlot();
  assert.equal(typeof slot, 'number');
  assert.ok(near(slot, base), `slot ${slot} is not from the provider at ${base}`);

  assert.equal(await conn.getBalance(owner), LAMPORTS_PER_SOL);

  const { blockhash, lastValidBlockHeight } = await conn.getLatestBlockhash();
  assert.equal(new PublicKey(blockhash).toBytes().length, 32, 'a base58 32-byte hash');
  assert.ok(near(lastValidBlockHeight - 150, base), `lastValidBlockHeight ${lastValidBlockHeight}`);

  assert.deepEqual(await conn.getVersion(), { 'solana-core': '1.18.22', 'feature-set': 3241752014 });

  const epoch = await conn.getEpochInfo();
  assert.ok(near(epoch.absoluteSlot, base), JSON.stringify(epoch));
  assert.equal(epoch.epoch, Math.floor(epoch.absoluteSlot / SLOTS_PER_EPOCH));
  assert.equal(epoch.slotIndex, epoch.absoluteSlot % SLOTS_PER_EPOCH);
  assert.equal(epoch.slotsInEpoch, SLOTS_PER_EPOCH);
  assert.equal(epoch.blockHeight, epoch.absoluteSlot);
  assert.equal(typeof epoch.transactionCount, 'number');
}

const countOf = (stats, methods) => methods.reduce((n, m) => n + (stats.methods?.[m] || 0), 0);

test('web3.js reads through sluice: getSlot, getBalance, getLatestBlockhash, getVersion, getEpochInfo', async () => {
  await readAll(conns.sol, SLOT_A);
  const sa = await a.stats(), sb = await b.stats();
  assert.equal(countOf(sa, READS), 5, JSON.stringify(sa.methods));
  for (const m of READS) assert.equal(sa.methods[m], 1, m);
  assert.equal(countOf(sb, READS), 0);

  const r = await post(sluice.url('sol'), call('getSlot', [{ commitment: 'confirmed' }], 9));
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('x-sluice-endpoint'), 'a');
  assert.ok(near(r.json.result, SLOT_A));
});

for (const mode of ['http503', 'reset']) {
  test(`first provider "${mode}": web3.js reads still work, answered by the second`, async () => {
    const net = `sol-${mode}`;
    await a.setMode(mode);
    await readAll(conns[net], SLOT_B);
    const sa = await a.stats(), sb = await b.stats();
    assert.equal(countOf(sb, READS), 5, JSON.stringify(sb.methods));
    for (const m of READS) assert.equal(sb.methods[m], 1, m);
    // a was tried and failed (after a few failures in a row its breaker may keep it out)
    assert.ok(sa.faults >= 1, `a faulted ${sa.faults} times`);
    const line = await waitFor(() => sluice.accessLines().find((l) => l.network === net && l.upstream.length > 1),
      { timeoutMs: 3000, what: 'a failover in the access log' });
    assert.equal(line.status, 200);
    assert.deepEqual(line.upstream.map((u) => u.endpoint), ['a', 'b'], JSON.stringify(line));
    assert.equal(line.upstream[0].result, mode === 'http503' ? 'answered' : 'RESET', JSON.stringify(line));
    assert.equal(line.upstream[1].result, 'answered');

    const r = await post(sluice.url(net), call('getEpochInfo', [], 'e'));
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get('x-sluice-endpoint'), 'b');
    assert.ok(near(r.json.result.absoluteSlot, SLOT_B));
  });
}

function signedTransfer(blockhash) {
  const payer = Keypair.generate();
  const tx = new Transaction({ feePayer: payer.publicKey, recentBlockhash: blockhash })
    .add(SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: Keypair.generate().publicKey, lamports: 1000 }));
  tx.sign(payer);
  return tx;
}

test('a 503 to a transfer is ambiguous: web3.js gets sluice\'s error and the second provider never sees it', async () => {
  const txConn = conns['tx-http503'];
  const tx = signedTransfer((await txConn.getLatestBlockhash()).blockhash);   // from a
  await a.setMode('http503');
  await assert.rejects(txConn.sendRawTransaction(tx.serialize()), (e) => {
    assert.match(e.message, /ambiguous_write/);
    assert.match(e.message, /look it up by hash before sending it again/);
    return true;
  });
  assert.equal((await a.stats()).methods.sendTransaction, 1);
  assert.equal((await b.stats()).methods.sendTransaction, undefined);
});

test('a signed transfer while the first provider is rate limited goes to the second, once; its status is found', async () => {
  const txConn = conns['tx-http429'];
  await a.setMode('http429', { retry_after: 1 });
  const { blockhash } = await txConn.getLatestBlockhash();
  const tx = signedTransfer(blockhash);
  const sig = await txConn.sendRawTransaction(tx.serialize());
  assert.equal(sig, base58(tx.signature), 'the signature the client computed');
  assert.equal((await b.stats()).methods.sendTransaction, 1, 'b got it once');

  // through sluice, getSignatureStatuses finds it (at b: a is still rate limited)
  const status = await waitFor(async () => (await txConn.getSignatureStatus(sig)).value, { timeoutMs: 4000, intervalMs: 200, what: 'the signature status' });
  assert.equal(status.err, null);
  assert.equal(status.confirmationStatus, 'finalized');
  assert.ok(near(status.slot, SLOT_B));
  assert.equal((await b.stats()).methods.sendTransaction, 1, 'and only once');
});
