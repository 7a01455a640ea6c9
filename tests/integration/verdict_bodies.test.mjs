// Verdicts read the whole answer: the body of an HTTP 429, 402 or 5xx is
// classified with its status, not thrown away. Infura's data.backoff_seconds
// in a 429 sets the rate-limit mark; OP-Stack's "sender is over rate limit"
// is the sender's own limit (every provider forwards to the same sequencer:
// returned as-is, the endpoint not marked); a node's "already known" or
// Solana's AlreadyProcessed behind a proxy that answers 5xx is a broadcast
// that happened, not an ambiguous write.
import { test, before, after, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { keccak256 } from 'viem';
import { startFake, startSluice, post, call, sleep, adminGet } from '../lib/harness.mjs';

const RAW_TX = '0x02f86b827a6980843b9aca00847735940082520894000000000000000000000000000000000000dead80c080a0aa';
let a, b, sluice;

before(async () => { [a, b] = await Promise.all(['a', 'b'].map((name) => startFake({ name }))); });
after(async () => { await Promise.all([a, b].map((f) => f.stop())); });
beforeEach(async () => {
  for (const f of [a, b]) { await f.setMode('ok'); await f.reset(); }
  sluice = await startSluice({
    workers: 1,
    networks: {
      eth: { lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: [{ id: 'a', url: a.url }, { id: 'b', url: b.url }] },
      one: { lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: [{ id: 'a', url: a.url }] },
    },
  });
});
afterEach(async () => { await sluice.stop(); });

const markedFor = async (net, id) => {
  await sleep(100);
  const e = (await adminGet(sluice, '/admin/endpoints')).json.find((x) => x.network === net && x.id === id);
  return e.rate_limited_until ? Date.parse(e.rate_limited_until) - Date.now() : 0;
};

test('Infura\'s backoff_seconds inside a 429 sets the mark (no Retry-After header)', async () => {
  await a.setMode('http429', { code: -32005, message: 'project ID request rate exceeded',
    data: { current_rps: 13.3, allowed_rps: 10.0, backoff_seconds: 4.0 } });
  let r = await post(sluice.url('one'), call('eth_getBalance', ['0x0000000000000000000000000000000000000000', 'latest'], 1));
  assert.equal(r.status, 429, r.text);
  assert.equal(r.json.error.data.retry_after_ms, 4000);
  assert.equal(r.headers.get('retry-after'), '4');
  const left = await markedFor('one', 'a');
  assert.ok(left > 2000 && left <= 4000, `marked for ${left} ms`);
  r = await post(sluice.url('one'), call('eth_chainId', [], 2));
  assert.equal(r.status, 429);
  assert.equal((await a.stats()).requests, 1, 'nothing sent while marked');
});

test('a 402 with a JSON-RPC body is a rate limit with the body\'s hint too', async () => {
  await a.setMode('http402', { code: -33000, message: 'daily request count exceeded, request rate limited', data: { backoff_seconds: 7 } });
  await post(sluice.url('eth'), call('eth_chainId'));
  const left = await markedFor('eth', 'a');
  assert.ok(left > 5000 && left <= 7000, `marked for ${left} ms`);
});

test('OP-Stack "sender is over rate limit" in a 429: the sender\'s limit, returned as-is, the endpoint not marked', async () => {
  await a.setMode('http429', { code: -32017, message: 'sender is over rate limit', method: 'eth_sendRawTransaction' });
  const r = await post(sluice.url('eth'), call('eth_sendRawTransaction', [RAW_TX], 'op'));
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.id, 'op');
  assert.equal(r.json.error.code, -32017);
  assert.equal(r.json.error.message, 'sender is over rate limit');
  assert.equal((await b.stats()).requests, 0, 'not sent to another provider (they share the sequencer)');
  assert.equal(await markedFor('eth', 'a'), 0, 'the endpoint is not rate-limited for everyone');
  const next = await post(sluice.url('eth'), call('eth_chainId', [], 2));
  assert.equal(next.headers.get('x-sluice-endpoint'), 'a');
});

test('"already known" in a 5xx body: the broadcast succeeded (its hash), not ambiguous_write', async () => {
  await a.setMode('http503', { code: -32000, message: 'already known', method: 'eth_sendRawTransaction' });
  const r = await post(sluice.url('eth'), call('eth_sendRawTransaction', [RAW_TX], 'tx'));
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.id, 'tx');
  assert.equal(r.json.result, keccak256(RAW_TX));
  assert.equal(r.headers.get('x-sluice-endpoint'), 'a');
  assert.equal((await b.stats()).requests, 0, 'never sent twice');
});

test('a plain JSON-RPC error in a 5xx is still transient: a read moves on, a write stays ambiguous', async () => {
  await a.setMode('http502', { code: -32603, message: 'internal error' });
  let r = await post(sluice.url('eth'), call('eth_chainId', [], 5));
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('x-sluice-endpoint'), 'b');
  r = await post(sluice.url('eth'), call('eth_sendRawTransaction', [RAW_TX], 6));
  assert.equal(r.status, 502);
  assert.equal(r.json.error.data.outcome, 'ambiguous_write');
  assert.equal((await b.stats()).methods.eth_sendRawTransaction ?? 0, 0);
});

// Solana: a duplicate broadcast behind a 5xx is AlreadyProcessed (data.err)
const B58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
function base58(bytes) {
  let n = BigInt('0x' + Buffer.from(bytes).toString('hex'));
  let s = '';
  while (n > 0n) { s = B58[Number(n % 58n)] + s; n /= 58n; }
  for (const x of bytes) { if (x !== 0) break; s = '1' + s; }
  return s;
}

test('Solana AlreadyProcessed in a 5xx body: the first signature, not ambiguous_write', async () => {
  const sa = await startFake({ name: 'sa', chain: 'solana' }), sb = await startFake({ name: 'sb', chain: 'solana' });
  const s = await startSluice({ workers: 1, networks: { sol: { chain: 'solana', lines: ['ranking: { probe_interval_ms: 0 }'],
    endpoints: [{ id: 'sa', url: sa.url }, { id: 'sb', url: sb.url }] } } });
  try {
    const sig = Uint8Array.from({ length: 64 }, (_, i) => i + 1);
    const tx = Buffer.concat([Buffer.from([1]), Buffer.from(sig), Buffer.alloc(40)]).toString('base64');
    await sa.setMode('http500', { code: -32002, method: 'sendTransaction',
      message: 'Transaction simulation failed: This transaction has already been processed',
      data: { err: 'AlreadyProcessed', logs: [], accounts: null, unitsConsumed: 0 } });
    const r = await post(s.url('sol'), call('sendTransaction', [tx, { encoding: 'base64' }], 9));
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.result, base58(sig));
    assert.equal((await sb.stats()).requests, 0, 'never sent twice');
  } finally {
    await s.stop();
    await Promise.all([sa.stop(), sb.stop()]);
  }
});
