// Per-method routing (issue 35): an endpoint's methods: scope (allow / deny
// globs) decides which calls it is sent; a method no endpoint admits is a
// -32601 naming it, answered without an upstream call.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { startFake, startSluice, post, call, renderConfig, tempDir, SLUICE_BIN } from '../lib/harness.mjs';

let node, alchemy, infura, s;
// cache off: the test counts upstream calls per method; hedging off: a hedge
// would be a second call of the same read
const LINES = ['ranking: { probe_interval_ms: 0 }', 'hedge: { enabled: false }'];
const endpoints = () => [
  { id: 'node', url: node.url, methods: '{ allow: ["eth_*", "net_*", "trace_*", "debug_trace*"] }' },
  { id: 'alchemy', url: alchemy.url, methods: '{ deny: ["trace_*", "debug_*", "eth_getProof", "erigon_*"] }' },
  { id: 'infura', url: infura.url, methods: '{ deny: ["trace_*", "debug_*", "eth_getProof", "erigon_*"] }' },
];

before(async () => {
  [node, alchemy, infura] = await Promise.all(['node', 'alchemy', 'infura'].map((name) => startFake({ name })));
  s = await startSluice({ cache: false /* the fakes must see every read: which endpoint answers is the test */, workers: 1, networks: { eth: { lines: LINES, endpoints: endpoints() } } });
});
after(async () => { await Promise.all([s, node, alchemy, infura].filter(Boolean).map((p) => p.stop())); });

const count = async (fake, method) => (await fake.stats()).methods[method] || 0;

test('trace_* reaches only the endpoint whose scope allows it', async () => {
  for (let i = 0; i < 10; i++) {
    const r = await post(s.url(), call('trace_block', ['0x10'], i));
    assert.equal(r.status, 200, r.text);
  }
  assert.ok(await count(node, 'trace_block') >= 10, 'node got every trace_block');
  assert.equal(await count(alchemy, 'trace_block'), 0, 'alchemy denies trace_*');
  assert.equal(await count(infura, 'trace_block'), 0, 'infura denies trace_*');
});

test('a denied method never reaches that endpoint; others still spread', async () => {
  for (let i = 0; i < 10; i++) {
    const r = await post(s.url(), call('eth_getProof', ['0x' + '11'.repeat(20), [], 'latest'], i));
    assert.equal(r.status, 200, r.text);
  }
  assert.ok(await count(node, 'eth_getProof') >= 10);
  assert.equal(await count(alchemy, 'eth_getProof'), 0);
  assert.equal(await count(infura, 'eth_getProof'), 0);
  // a method everybody admits still goes down the ordinary plan
  const r = await post(s.url(), call('eth_gasPrice', [], 1));
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.result, '0x4a817c800');
});

test('a method no endpoint admits is a -32601 naming it, sent nowhere', async () => {
  const r = await post(s.url(), call('erigon_getHeaderByNumber', ['0x10'], 5));
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.error.code, -32601, r.text);
  assert.match(r.json.error.message, /erigon_getHeaderByNumber/);
  assert.equal(r.json.error.data.reason, 'no_endpoint_for_method');
  for (const f of [node, alchemy, infura]) assert.equal(await count(f, 'erigon_getHeaderByNumber'), 0, f.name);
  // in a batch, only that member is refused
  const b = await post(s.url(), [call('erigon_getHeaderByNumber', [], 1), call('eth_chainId', [], 2)]);
  assert.equal(b.status, 200, b.text);
  assert.equal(b.json.find((m) => m.id === 1).error.data.reason, 'no_endpoint_for_method');
  assert.equal(b.json.find((m) => m.id === 2).result, '0x1');
});

test('--check names a bad methods: glob with its line', async () => {
  const dir = tempDir();
  const file = path.join(dir, 'sluice.yaml');
  const bad = endpoints();
  bad[1].methods = '{ deny: ["tr*ace"] }';
  const text = renderConfig({ statePath: path.join(dir, 'state'), networks: { eth: { endpoints: bad } } });
  writeFileSync(file, text);
  const line = text.split('\n').findIndex((l) => l.includes('tr*ace')) + 1;
  const r = spawnSync(SLUICE_BIN, ['--check', '-c', file], { encoding: 'utf8' });
  assert.notEqual(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stderr + r.stdout, new RegExp(`:${line}\\b.*only at its end|only at its end.*${line}`), r.stderr + r.stdout);
  const empty = endpoints();
  empty[0].methods = '{ allow: [] }';
  writeFileSync(file, renderConfig({ statePath: path.join(dir, 'state'), networks: { eth: { endpoints: empty } } }));
  const e = spawnSync(SLUICE_BIN, ['--check', '-c', file], { encoding: 'utf8' });
  assert.notEqual(e.status, 0);
  assert.match(e.stderr + e.stdout, /empty allow list/);
});

test('a deep-history read goes only to the archive endpoint; a recent one down the ordinary plan', async () => {
  const fakes = await Promise.all(['full1', 'full2', 'arch'].map((name) => startFake({ name })));
  const [full1, full2, arch] = fakes;
  const a = await startSluice({ cache: false /* the fakes must see every read: which endpoint answers is the test */, workers: 1, networks: { eth: {
    lines: [...LINES, 'archive_depth: 100'],
    endpoints: [{ id: 'full1', url: full1.url, archive: 'false' }, { id: 'full2', url: full2.url },
                { id: 'arch', url: arch.url, archive: 'true' }] } } });
  try {
    const head = Number((await post(a.url(), call('eth_blockNumber', [], 1))).json.result);
    assert.ok(head > 1000, `head ${head}`);
    const who = '0x' + '22'.repeat(20);
    for (let i = 0; i < 6; i++) {
      const r = await post(a.url(), call('eth_getBalance', [who, '0x' + (head - 5000 - i).toString(16)], i));
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.result, '0x1bc16d674ec80000', r.text);
    }
    const earliest = await post(a.url(), call('eth_getBalance', [who, 'earliest'], 9));
    assert.equal(earliest.status, 200, earliest.text);
    assert.equal(await count(arch, 'eth_getBalance'), 7, 'every deep read at the archive endpoint');
    assert.equal(await count(full1, 'eth_getBalance'), 0, 'never at archive: false');
    assert.equal(await count(full2, 'eth_getBalance'), 0, 'unknown comes after archive');
    // the archive endpoint down: a deep read goes to the unknown one, never to archive: false
    await arch.setMode('http500');
    const r = await post(a.url(), call('eth_getBalance', [who, '0x10'], 10));
    assert.equal(r.json.result, '0x1bc16d674ec80000', r.text);
    assert.equal(await count(full1, 'eth_getBalance'), 0);
    assert.equal(await count(full2, 'eth_getBalance'), 1);
    await arch.setMode('ok');
    const archBefore = await count(arch, 'eth_getBalance');
    // recent reads: the ordinary plan (config order breaks the ranking's tie: full1 first)
    for (let i = 0; i < 5; i++) {
      const rr = await post(a.url(), call('eth_getBalance', [who, '0x' + (head - 10).toString(16)], 20 + i));
      assert.equal(rr.status, 200, rr.text);
    }
    assert.equal(await count(full1, 'eth_getBalance'), 5, 'recent reads ranked as usual');
    assert.equal(await count(arch, 'eth_getBalance'), archBefore, 'recent reads not sent to the archive endpoint');
  } finally {
    await Promise.all([a, ...fakes].map((p) => p.stop()));
  }
});

test('methods.<name>.timeout_ms bounds the request: an eth_call held 3 s upstream is a 504 within its 500 ms', async () => {
  const [x, y] = await Promise.all(['x', 'y'].map((name) => startFake({ name })));
  const t = await startSluice({ cache: false /* the fakes must see every read: which endpoint answers is the test */, workers: 1, networks: { eth: {
    lines: [...LINES, 'methods: { eth_call: { timeout_ms: 500 } }'],
    endpoints: [{ id: 'x', url: x.url }, { id: 'y', url: y.url }] } } });
  try {
    await Promise.all([x, y].map((f) => f.setMode('slow', { delay_ms: 3000, method: 'eth_call' })));
    const t0 = Date.now();
    const r = await post(t.url(), call('eth_call', [{ to: '0x' + '33'.repeat(20), data: '0x' }, 'latest'], 1));
    const took = Date.now() - t0;
    assert.equal(r.status, 504, r.text);
    assert.ok(took >= 450 && took < 1200, `answered in ${took} ms`);
    // other methods keep the network's timeouts
    const g = await post(t.url(), call('eth_getBalance', ['0x' + '22'.repeat(20), 'latest'], 2));
    assert.equal(g.status, 200, g.text);
  } finally {
    await Promise.all([t, x, y].map((p) => p.stop()));
  }
  const dir = tempDir();
  const file = path.join(dir, 'sluice.yaml');
  const text = renderConfig({ statePath: path.join(dir, 'state'), networks: { eth: {
    lines: ['methods: { eth_call: { timeout_ms: 0 } }'], endpoints: [{ id: 'x', url: 'http://127.0.0.1:1' }] } } });
  writeFileSync(file, text);
  const c = spawnSync(SLUICE_BIN, ['--check', '-c', file], { encoding: 'utf8' });
  assert.notEqual(c.status, 0, c.stdout + c.stderr);
  assert.match(c.stderr + c.stdout, /timeout_ms/);
});

test('X-Sluice-Trace: 1 lists each attempt as endpoint;role;outcome;ms (a failover)', async () => {
  const [p, q] = await Promise.all(['p', 'q'].map((name) => startFake({ name })));
  const t = await startSluice({ cache: false /* the fakes must see every read: which endpoint answers is the test */, workers: 1, networks: { eth: {
    lines: ['ranking: { probe_interval_ms: 0 }', 'hedge: { enabled: false }', 'breaker: { consecutive: 100 }'],
    endpoints: [{ id: 'p', url: p.url }, { id: 'q', url: q.url }] } } });
  try {
    const plain = await post(t.url(), call('eth_getBalance', ['0x' + '22'.repeat(20), 'latest'], 1));
    assert.equal(plain.headers.get('x-sluice-trace'), null, 'only when asked');
    await p.setMode('http500');
    const r = await post(t.url(), call('eth_getBalance', ['0x' + '22'.repeat(20), 'latest'], 2), { 'x-sluice-trace': '1' });
    assert.equal(r.status, 200, r.text);
    const trace = r.headers.get('x-sluice-trace');
    assert.match(trace, /^p;first;http_500;\d+, q;retry;answered;\d+(, credits;\d+)?$/, trace); // credits: what the attempts billed
  } finally {
    await Promise.all([t, p, q].map((x) => x.stop()));
  }
});
