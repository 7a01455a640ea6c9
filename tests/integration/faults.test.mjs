// Fallback transport: every fault mode of the first endpoint still yields the
// right answer from the second; when every endpoint fails the client gets the
// documented status and error; writes are never sent twice. Each test gets a
// fresh sluice (its own shared state): a fault opens breakers and leaves
// rate-limit marks that would otherwise carry over.
import { test, before, after, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { startFake, startSluice, post, call, waitFor, events } from '../lib/harness.mjs';

let a, b, c, sluice;
const TIMEOUTS = 'timeouts: { connect_ms: 500, first_byte_ms: 400, attempt_ms: 800, request_ms: 4000 }';
// fallback semantics, not ranking: config order (no probes), one attempt per endpoint
const ORDER = ['ranking: { probe_interval_ms: 0 }', 'max_attempts: 3'];
const RAW_TX = '0x02f86b827a6980843b9aca00847735940082520894000000000000000000000000000000000000dead80c080a0aa';

before(async () => {
  [a, b, c] = await Promise.all(['a', 'b', 'c'].map((name) => startFake({ name })));
});

after(async () => {
  await Promise.all([a, b, c].filter(Boolean).map((f) => f.stop()));
});

afterEach(async () => {
  await sluice?.stop();
  sluice = undefined;
});

beforeEach(async () => {
  for (const f of [a, b, c]) {
    await f.setMode('ok');
    await f.reset();
  }
  sluice = await startSluice({
    server: { max_response_bytes: 1048576 },
    networks: {
      eth: {
        lines: [TIMEOUTS, ...ORDER],
        endpoints: [
          { id: 'a', url: `${a.url}/v2/secretkey0123456789abcdef` },
          { id: 'b', url: b.url },
          { id: 'c', url: c.url },
        ],
      },
      two: { lines: [TIMEOUTS, 'ranking: { probe_interval_ms: 0 }', 'max_attempts: 2'], endpoints: [{ id: 'a', url: a.url }, { id: 'b', url: b.url }] },
    },
  });
});

const faults = [
  ['http429', { retry_after: 1 }],
  ['rpc_limit', {}],
  ['http500', {}],
  ['http502', {}],
  ['http503', {}],
  ['reset', {}],
  ['hang', {}],
  ['accept_hang', {}],
  ['slow_body', { delay_ms: 3000 }],
  ['slow', { delay_ms: 3000 }],
  ['garbage', {}],
  ['truncated', {}],
  ['huge', { size: 2 * 1024 * 1024 }],
  ['wrong_id', {}],
];

for (const [mode, opts] of faults) {
  test(`first endpoint "${mode}": the answer comes from the second`, async () => {
    await a.setMode(mode, opts);
    const r = await post(sluice.url('eth'), call('eth_blockNumber', [], 41));
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.id, 41);
    assert.match(r.json.result, /^0x[0-9a-f]+$/);
    assert.equal(r.headers.get('x-sluice-endpoint'), 'b');
    assert.equal(r.headers.get('x-sluice-attempts'), '2');
    assert.equal((await b.stats()).calls, 1);
  });
}

test('a refused connection fails over at once', async () => {
  const dead = await startFake({ name: 'dead' });
  await dead.stop();
  const s = await startSluice({ workers: 1, networks: { eth: {
    lines: ['timeouts: { connect_ms: 3000 }'], endpoints: [{ id: 'dead', url: dead.url }, { id: 'b', url: b.url }] } } });
  try {
    const t0 = Date.now();
    const r = await post(s.url('eth'), call('eth_chainId'));
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('x-sluice-endpoint'), 'b');
    assert.equal(r.headers.get('x-sluice-attempts'), '2');
    assert.ok(Date.now() - t0 < 3000, 'refused, not waited out');
  } finally {
    await s.stop();
  }
});

test('calls that moved on from an endpoint become one failover event, with their count; none for the others', async () => {
  await a.setMode('http500');
  for (let i = 0; i < 4; i++) {
    const r = await post(sluice.url('eth'), call('eth_blockNumber', [], i));
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get('x-sluice-endpoint'), 'b');
  }
  // the master sums the workers' counters into events every 10 s
  const fo = await waitFor(async () => (await events(sluice)).find((e) => e.kind === 'failover' && e.endpoint === 'a'),
    { timeoutMs: 15000, intervalMs: 250, what: 'a failover event for a' });
  assert.equal(fo.network, 'eth');
  assert.ok(fo.count >= 1 && fo.count <= 4, JSON.stringify(fo));
  assert.match(fo.reason, new RegExp(`^${fo.count} call\\(s\\) moved on from this endpoint in the last \\d+ s$`));
  assert.doesNotMatch(JSON.stringify(fo), /secretkey/);
  assert.deepEqual((await events(sluice)).filter((e) => e.kind === 'failover' && e.endpoint !== 'a'), []);
});

test('batch: members failing at the first endpoint are retried at the next', async () => {
  await a.setMode('http503');
  const r = await post(sluice.url('eth'), [call('eth_chainId', [], 'x'), call('eth_blockNumber', [], 'y')]);
  assert.equal(r.status, 200);
  assert.deepEqual(r.json.map((m) => m.id).sort(), ['x', 'y']);
  assert.ok(r.json.every((m) => m.result !== undefined));
});

test('batch: a per-member rate limit moves only that member', async () => {
  await a.setMode('rpc_limit', { method: 'eth_blockNumber' });
  const r = await post(sluice.url('eth'), [call('eth_chainId', [], 1), call('eth_blockNumber', [], 2)]);
  assert.equal(r.status, 200);
  assert.ok(r.json.every((m) => m.result !== undefined), r.text);
  const sa = await a.stats(), sb = await b.stats();
  assert.equal(sa.calls, 2);
  assert.equal(sb.calls, 1, 'only the rate-limited member went to b');
  assert.equal(sb.methods.eth_blockNumber, 1);
});

test('a deterministic error comes back as-is and no other endpoint is asked', async () => {
  await a.setMode('rpc_error', { code: 3, message: 'execution reverted: nope', data: '0x08c379a0' });
  const r = await post(sluice.url('eth'), call('eth_call', [{ to: '0x0000000000000000000000000000000000000001', data: '0x' }, 'latest'], 5));
  assert.equal(r.status, 200);
  assert.equal(r.json.id, 5);
  assert.equal(r.json.error.code, 3);
  assert.equal(r.json.error.message, 'execution reverted: nope');
  assert.equal(r.json.error.data, '0x08c379a0');
  assert.equal((await b.stats()).calls, 0);
  assert.equal((await c.stats()).calls, 0);
});

test('every endpoint rate limited: 429, Retry-After, -32005 with scope upstream', async () => {
  for (const f of [a, b, c]) await f.setMode('http429', { retry_after: 3 });
  const r = await post(sluice.url('eth'), call('eth_getBalance', ['0x0000000000000000000000000000000000000000', 'latest'], 8));
  assert.equal(r.status, 429);
  assert.equal(r.headers.get('retry-after'), '3');
  assert.equal(r.json.id, 8);
  assert.equal(r.json.error.code, -32005);
  assert.equal(r.json.error.data.scope, 'upstream');
  assert.equal(r.json.error.data.retry_after_ms, 3000);
  assert.equal(r.json.result, undefined, 'never a masked balance');
});

test('every endpoint timed out: 504', async () => {
  for (const f of [a, b]) await f.setMode('hang');
  const r = await post(sluice.url('two'), call('eth_chainId', [], 9));
  assert.equal(r.status, 504);
  assert.equal(r.json.id, 9);
  assert.equal(r.json.error.data.outcome, 'timeout');
});

test('every endpoint failed otherwise: 502 listing each attempt by endpoint id (URLs only in the access log)', async () => {
  await a.setMode('http500');
  await b.setMode('garbage');
  await c.setMode('reset');
  const r = await post(sluice.url('eth'), call('eth_chainId', [], 10));
  assert.equal(r.status, 502);
  assert.equal(r.json.error.data.scope, 'upstream');
  const attempts = r.json.error.data.attempts;
  assert.deepEqual(attempts.map((x) => x.endpoint), ['a', 'b', 'c']);
  assert.equal(attempts[0].status, 500);
  assert.ok(!r.text.includes('secretkey0123456789abcdef'), 'the key in the URL is redacted');
  assert.equal(attempts[0].url, undefined, 'no upstream URL in a client-facing body');
  assert.ok(!r.text.includes(String(a.port)), r.text);
  // operators find the redacted URL in the access log
  const line = await waitFor(() => sluice.accessLines().find((l) => l.status === 502), { what: 'the access line' });
  assert.match(line.upstream[0].url, /^http:\/\/127\.0\.0\.1:\d+\/v2\/\*\*\*$/);
  assert.ok(!JSON.stringify(line).includes('secretkey0123456789abcdef'));
});

test('timeouts.request_ms bounds the whole request across attempts: 504', async () => {
  const s = await startSluice({
    workers: 1,
    networks: {
      eth: {
        // one attempt at a time (a hedge would reach b early and c at 400 ms)
        lines: ['timeouts: { connect_ms: 300, first_byte_ms: 400, attempt_ms: 400, request_ms: 600 }', ...ORDER,
          'hedge: { enabled: false }'],
        endpoints: [{ id: 'a', url: a.url }, { id: 'b', url: b.url }, { id: 'c', url: c.url }],
      },
    },
  });
  try {
    for (const f of [a, b, c]) await f.setMode('hang');
    const t0 = Date.now();
    const r = await post(s.url('eth'), call('eth_chainId', [], 16));
    const took = Date.now() - t0;
    assert.equal(r.status, 504);
    assert.equal(r.json.error.data.outcome, 'timeout');
    assert.ok(took >= 550 && took < 2500, `took ${took} ms`); // the 600 ms deadline, not 3 attempts of 400
    assert.equal((await c.stats()).requests, 0, 'the deadline ran out before the third endpoint');
  } finally {
    await s.stop();
  }
});

test('no upstream key ever appears in sluice logs', async () => {
  await a.setMode('http500');
  await post(sluice.url('eth'), call('eth_chainId'));
  await new Promise((r) => setTimeout(r, 200));
  assert.ok(!sluice.logs().includes('secretkey0123456789abcdef'));
});

test('write: a timeout after sending is never followed by a second send', async () => {
  await a.setMode('hang', { method: 'eth_sendRawTransaction' });
  const r = await post(sluice.url('eth'), call('eth_sendRawTransaction', [RAW_TX], 11));
  assert.ok(r.status === 504 || r.status === 502, `status ${r.status}`);
  assert.equal(r.json.error.data.outcome, 'ambiguous_write');
  assert.equal((await a.stats()).methods.eth_sendRawTransaction, 1);
  assert.equal((await b.stats()).calls, 0, 'not re-sent to b');
  assert.equal((await c.stats()).calls, 0, 'not re-sent to c');
});

test('write: a reset after sending is never followed by a second send', async () => {
  await a.setMode('reset', { method: 'eth_sendRawTransaction' });
  const r = await post(sluice.url('eth'), call('eth_sendRawTransaction', [RAW_TX], 12));
  assert.equal(r.status, 502);
  assert.equal((await b.stats()).calls, 0);
});

test('write: a 5xx is ambiguous too', async () => {
  await a.setMode('http502', { method: 'eth_sendRawTransaction' });
  const r = await post(sluice.url('eth'), call('eth_sendRawTransaction', [RAW_TX], 13));
  assert.equal(r.status, 502);
  assert.equal((await b.stats()).calls, 0);
});

test('write: HTTP 429 provably did not reach the node, so the next endpoint gets it', async () => {
  await a.setMode('http429', { method: 'eth_sendRawTransaction' });
  const r = await post(sluice.url('eth'), call('eth_sendRawTransaction', [RAW_TX], 14));
  assert.equal(r.status, 200);
  assert.match(r.json.result, /^0x[0-9a-f]{64}$/);
  assert.equal((await b.stats()).sent_raw.length, 1);
});

test('write: a refused connection provably did not reach the node', async () => {
  const dead = await startFake({ name: 'dead' });
  await dead.stop();
  const s = await startSluice({ workers: 1, networks: { eth: { endpoints: [{ id: 'dead', url: dead.url }, { id: 'b', url: b.url }] } } });
  try {
    const r = await post(s.url('eth'), call('eth_sendRawTransaction', [RAW_TX], 15));
    assert.equal(r.status, 200);
    assert.equal((await b.stats()).sent_raw.length, 1);
  } finally {
    await s.stop();
  }
});

test('methods: overrides the table; a method made a write is never re-sent after a timeout', async () => {
  const s = await startSluice({
    workers: 1,
    networks: {
      eth: {
        lines: [TIMEOUTS, ...ORDER, 'methods: { eth_sendPrivateTransaction: { class: write, priority: high } }'],
        endpoints: [{ id: 'a', url: a.url }, { id: 'b', url: b.url }],
      },
    },
  });
  try {
    await a.setMode('hang', { method: 'eth_sendPrivateTransaction' });
    const r = await post(s.url('eth'), call('eth_sendPrivateTransaction', [{ tx: RAW_TX }], 17));
    assert.equal(r.json.error.data.outcome, 'ambiguous_write');
    assert.equal((await b.stats()).calls, 0, 'not re-sent');
    // without the override an unknown method is a retry-safe read
    await a.setMode('hang', { method: 'eth_somethingElse' });
    const r2 = await post(s.url('eth'), call('eth_somethingElse', [], 18));
    assert.equal(r2.headers.get('x-sluice-endpoint'), 'b');
  } finally {
    await s.stop();
  }
});

// A batch answered with one JSON-RPC error object (HTTP 200) was read by the
// upstream: its write member may have been broadcast, so it is not sent on;
// its read member is.
test('write in a batch: a batch-level error at HTTP 200 is ambiguous, the read moves on', async () => {
  const http = await import('node:http');
  let got = 0;
  const srv = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      got++;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}');
    });
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const s = await startSluice({
    networks: { eth: { lines: [TIMEOUTS, ...ORDER], endpoints: [
      { id: 'x', url: `http://127.0.0.1:${srv.address().port}` }, { id: 'b', url: b.url }] } },
  });
  try {
    const r = await post(s.url('eth'), [call('eth_sendRawTransaction', [RAW_TX], 1), call('eth_chainId', [], 2)]);
    assert.equal(r.status, 200);
    const byId = Object.fromEntries(r.json.map((m) => [m.id, m]));
    assert.equal(byId[1].error.data.outcome, 'ambiguous_write');
    assert.equal(byId[2].result, '0x1');
    assert.equal(got, 1);
    const st = await b.stats();
    assert.equal(st.methods.eth_sendRawTransaction ?? 0, 0, 'the write was not re-sent to b');
    assert.equal(st.methods.eth_chainId, 1, 'the read was');
  } finally {
    await s.stop();
    srv.close();
  }
});
