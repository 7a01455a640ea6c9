// A split eth_getLogs is charged to its caller (issue 31): each sub-call
// against the caller's rate limit (before: 20 sub-calls charged as one call,
// 50 calls at a 5/s tier made 1,000 upstream calls), and its merged answer
// bounded by server.max_response_bytes (before: 186.7 MB with a 16 MiB
// limit), while another address is served.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { startFake, startSluice, post, postFresh, call, sleep, waitFor, adminGet } from '../lib/harness.mjs';
import { HEAD, hex, chainArgs, limited, filter as chainFilter } from '../lib/logchain.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const filter = (from, to) => chainFilter(hex(from), hex(to));
let a, b, u;

before(async () => {
  a = await limited('a');
  b = await limited('b');
  u = await startFake({ name: 'u', args: chainArgs });
  started.push(a, b, u);
});

const logsCalls = async () => (await Promise.all([a, b].map(async (f) => (await f.stats()).methods.eth_getLogs ?? 0)))
  .reduce((x, y) => x + y, 0);

async function gateway({ server = {}, extra = '', blocks = 1000 } = {}) {
  const ep = (f) => ({ id: f.name, url: f.url, max_logs_blocks: blocks });
  const s = await startSluice({ workers: 1, server, extra, networks: { eth: {
    lines: ['ranking: { probe_interval_ms: 200 }', 'hedge: { enabled: false }', 'pressure: { enabled: false }'],
    endpoints: [ep(a), ep(b)] } } });
  started.push(s);
  await waitFor(async () => (await adminGet(s, '/admin/endpoints')).json.every((e) => e.head === HEAD || e.head === hex(HEAD)),
    { timeoutMs: 8000, what: 'the probes saw every head' });
  return s;
}

// A call from address `from` (127.0.0.x: each its own identity).
const from = (s, addr, body) => postFresh(s.url('eth'), body, {}, { localAddress: addr });

test('each sub-call is charged to the caller\'s rate limit: a 5/s tier pays 5 for a 5,000-block call', async () => {
  const s = await gateway({ extra: 'tiers: { anonymous: { per_second: 5 } }' });
  await Promise.all([a.reset(), b.reset()]);
  const first = await from(s, '127.0.0.1', call('eth_getLogs', [filter(1, 5000)], 1));
  assert.equal(first.status, 200, first.text.slice(0, 300));
  assert.equal(first.json.result.length, 10000);
  assert.equal(await logsCalls(), 5);
  // its 5 are spent: 20 more sub-calls do not fit (before: charged as 1, they went)
  const second = await from(s, '127.0.0.1', call('eth_getLogs', [filter(5001, 25000)], 2));
  assert.equal(second.status, 429, second.text.slice(0, 300));
  assert.equal(second.json.error.code, -32005);
  assert.equal(await logsCalls(), 5, 'refused before any of its sub-calls went out');
  // another address: 6 sub-calls are more than a 5/s tier's burst, whatever the time
  const six = await from(s, '127.0.0.3', call('eth_getLogs', [filter(1, 6000)], 3));
  assert.equal(six.status, 429, six.text.slice(0, 300));
  assert.equal(await logsCalls(), 5);
  // a burst of 10 calls of 3 sub-calls from a fourth address: the limit, not the calls, decides what goes upstream
  const burst = await Promise.all(Array.from({ length: 10 },
    (_, i) => from(s, '127.0.0.4', call('eth_getLogs', [filter(1 + 3000 * i, 3000 * (i + 1))], i))));
  const ok = burst.filter((r) => r.status === 200).length;
  const upstream = (await logsCalls()) - 5;
  assert.ok(ok >= 1 && ok <= 2, `${ok} of 10 served at 5/s (statuses ${burst.map((r) => r.status)})`);
  assert.equal(upstream, 3 * ok, `${upstream} sub-calls upstream for ${ok} calls served`);
  console.log(`figures (charge): 10 calls of 3 sub-calls at a 5/s tier: ${ok} served, ${upstream} upstream calls ` +
    '(before: 5 served, 15 upstream calls)');
});

test('halves sent after every endpoint refused a range are charged too: past the limit the call ends with -32005', async () => {
  // configured for 2,000 blocks, the providers take 1,000: 3 parts planned (3 calls of a 4/min tier), the
  // two of 2,000 refused everywhere, and their halves (2 calls each) no longer fit
  const s = await gateway({ extra: 'tiers: { anonymous: { per_minute: 4 } }', blocks: 2000 });
  await Promise.all([a.reset(), b.reset()]);
  const r = await from(s, '127.0.0.5', call('eth_getLogs', [filter(1, 5000)], 'h'));
  assert.equal(r.status, 200, r.text.slice(0, 300));
  assert.equal(r.json.error?.code, -32005, r.text.slice(0, 300));
  assert.equal(r.json.error.data.reason, 'rate_limited');
  assert.equal(r.json.error.data.scope, 'logs_split');
  assert.match(r.json.error.message, /charged to this caller's rate limit/);
});

test('a split whose merged answer passes max_response_bytes stops with -32005 naming the bound; another address is served', async () => {
  const part = (await post(u.url, call('eth_getLogs', [filter(1, 1000)]))).text.length;
  const LIMIT = Math.round(3.5 * part); // four sub-answers pass it
  const s = await gateway({ server: { max_response_bytes: LIMIT } });
  await Promise.all([a.reset(), b.reset()]);
  // a bystander from another address, calling all along
  const statuses = [];
  let running = true;
  const bystander = (async () => {
    while (running) {
      const r = await postFresh(s.url('eth'), call('eth_blockNumber'), {}, { localAddress: '127.0.0.2' });
      statuses.push(r.status);
      await sleep(20);
    }
  })();
  // three at once, 20 sub-calls each (the network's max_logs_split), three times
  const big = [];
  for (let round = 0; round < 3; round++)
    big.push(...await Promise.all([0, 1, 2].map((i) => post(s.url('eth'), call('eth_getLogs', [filter(1, 20000)], i)))));
  running = false;
  await bystander;
  for (const r of big) {
    assert.equal(r.status, 200, r.text.slice(0, 300));
    assert.equal(r.json.error?.code, -32005, r.text.slice(0, 300));
    assert.equal(r.json.error.data.reason, 'max_response_bytes');
    assert.equal(r.json.error.data.limit_bytes, LIMIT);
    assert.ok(r.json.error.data.read_bytes > LIMIT);
    assert.match(r.json.error.message, /server\.max_response_bytes/);
  }
  const upstream = await logsCalls();
  // each job stops at its fourth answer; at most 4 more were in flight
  assert.ok(upstream <= 9 * 8, `${upstream} sub-calls upstream for 9 calls stopped at the bound (planned: 180)`);
  assert.ok(statuses.length >= 1 && statuses.every((x) => x === 200), `bystander statuses ${statuses}`);
  console.log(`figures (bytes): sub-answer ${part} bytes, bound ${LIMIT}; 9 calls of 20 sub-calls stopped after ` +
    `${upstream} upstream calls; bystander ${statuses.length} calls, all 200`);
});
