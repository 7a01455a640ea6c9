// Dispatch policies of the method tables (issue 35): dispatch: not_null (a
// null result tries the next usable endpoint; the null is the answer if
// nobody has better), on by default for transaction and receipt lookups, and
// turned off per network with dispatch: first.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { startFake, startSluice, post, call, renderConfig, tempDir, SLUICE_BIN } from '../lib/harness.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

// cache off: each lookup goes upstream; hedging off: a hedge would ask the
// second endpoint anyway
const LINES = ['ranking: { probe_interval_ms: 0 }', 'hedge: { enabled: false }'];

// tx a only on endpoint a, tx b only on endpoint b: whichever ranks first,
// one of the two lookups meets a null first
async function twoFakes() {
  const [a, b] = await Promise.all(['a', 'b'].map((name) => startFake({ name })));
  started.push(a, b);
  const ha = (await post(a.url, call('eth_sendRawTransaction', ['0x0a0a'], 1))).json.result;
  const hb = (await post(b.url, call('eth_sendRawTransaction', ['0x0b0b'], 1))).json.result;
  assert.match(ha, /^0x[0-9a-f]{64}$/);
  return { a, b, ha, hb };
}

test('not_null by default: a receipt and a transaction only one endpoint has are found', async () => {
  const { a, b, ha, hb } = await twoFakes();
  const s = await startSluice({ cache: false /* the fakes must see every read: which endpoint answers is the test */, workers: 1, networks: { eth: { lines: LINES,
    endpoints: [{ id: 'a', url: a.url }, { id: 'b', url: b.url }] } } });
  started.push(s);
  for (let round = 0; round < 3; round++) {
    for (const [h, i] of [[ha, 1], [hb, 2]]) {
      const r = await post(s.url(), call('eth_getTransactionReceipt', [h], i));
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.result?.transactionHash, h, r.text);
      const t = await post(s.url(), call('eth_getTransactionByHash', [h], i));
      assert.equal(t.json.result?.hash, h, t.text);
    }
  }
  // in a batch too
  const bt = await post(s.url(), [call('eth_getTransactionReceipt', [ha], 1), call('eth_getTransactionReceipt', [hb], 2)]);
  assert.equal(bt.status, 200, bt.text);
  assert.equal(bt.json.find((m) => m.id === 1).result?.transactionHash, ha, bt.text);
  assert.equal(bt.json.find((m) => m.id === 2).result?.transactionHash, hb, bt.text);
  // nobody has it: the null is the answer, after each endpoint was asked once
  const before = ((await a.stats()).methods.eth_getTransactionReceipt ?? 0) + ((await b.stats()).methods.eth_getTransactionReceipt ?? 0);
  const n = await post(s.url(), call('eth_getTransactionReceipt', ['0x' + '12'.repeat(32)], 3));
  assert.equal(n.status, 200, n.text);
  assert.equal(n.json.result, null, n.text);
  assert.ok(!('error' in n.json), n.text);
  const afterN = ((await a.stats()).methods.eth_getTransactionReceipt ?? 0) + ((await b.stats()).methods.eth_getTransactionReceipt ?? 0);
  assert.equal(afterN - before, 2, 'each endpoint was asked once');
});

test('dispatch: first on a network turns it off: the first null is the answer', async () => {
  const { a, b, ha, hb } = await twoFakes();
  const s = await startSluice({ cache: false /* the fakes must see every read: which endpoint answers is the test */, workers: 1, networks: { eth: {
    lines: [...LINES, 'methods: { eth_getTransactionReceipt: { dispatch: first } }'],
    endpoints: [{ id: 'a', url: a.url }, { id: 'b', url: b.url }] } } });
  started.push(s);
  let nulls = 0;
  for (const [h, i] of [[ha, 1], [hb, 2]]) {
    const r = await post(s.url(), call('eth_getTransactionReceipt', [h], i));
    assert.equal(r.status, 200, r.text);
    if (r.json.result === null) nulls++;
  }
  assert.ok(nulls >= 1, 'one lookup met the endpoint without it and answered its null');
  const st = ((await a.stats()).methods.eth_getTransactionReceipt ?? 0) + ((await b.stats()).methods.eth_getTransactionReceipt ?? 0);
  assert.equal(st, 2, 'one upstream call per lookup');
});

test('--check names a bad dispatch with its line', async () => {
  const dir = tempDir();
  const file = path.join(dir, 'sluice.yaml');
  const text = renderConfig({ statePath: path.join(dir, 'state'), networks: { eth: {
    lines: ['methods: { eth_getTransactionReceipt: { dispatch: nearest } }'],
    endpoints: [{ id: 'x', url: 'http://127.0.0.1:1' }] } } });
  writeFileSync(file, text);
  const line = text.split('\n').findIndex((l) => l.includes('nearest')) + 1;
  const r = spawnSync(SLUICE_BIN, ['--check', '-c', file], { encoding: 'utf8' });
  assert.notEqual(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stderr + r.stdout, new RegExp(`:${line}\\b.*dispatch must be first, not_null or max`), r.stderr + r.stdout);
});

test('dispatch: max, of: 2: both endpoints asked at once, the higher nonce answers', async () => {
  const [a, b] = await Promise.all(['a', 'b'].map((name) => startFake({ name })));
  started.push(a, b);
  // the fake's nonce is the count of transactions it was sent: a 0x1, b 0x3
  await post(a.url, call('eth_sendRawTransaction', ['0x0a01'], 1));
  for (let i = 0; i < 3; i++) await post(b.url, call('eth_sendRawTransaction', [`0x0b0${i}`], 1));
  const s = await startSluice({ cache: false /* the fakes must see every read: which endpoint answers is the test */, workers: 1, networks: { eth: {
    lines: [...LINES, 'methods: { eth_getTransactionCount: { dispatch: max, of: 2 } }'],
    endpoints: [{ id: 'a', url: a.url }, { id: 'b', url: b.url }] } } });
  started.push(s);
  const addr = '0x' + '22'.repeat(20);
  for (let i = 0; i < 4; i++) {
    const r = await post(s.url(), call('eth_getTransactionCount', [addr, 'pending'], i));
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.result, '0x3', r.text);
    assert.equal(r.json.id, i);
  }
  for (const f of [a, b]) assert.equal((await f.stats()).methods.eth_getTransactionCount, 4, `${f.name} asked every time`);
  // X-Sluice-Trace names both attempts as the fan-out's
  const t = await post(s.url(), call('eth_getTransactionCount', [addr, 'pending'], 5), { 'x-sluice-trace': '1' });
  assert.equal(t.json.result, '0x3', t.text);
  // the attempts (endpoint;role;outcome;ms), not the credits;N that follows them
  const trace = t.headers.get('x-sluice-trace').split(', ').map((x) => x.split(';')).filter((x) => x.length === 4);
  assert.deepEqual(trace.map((x) => x[0]).sort(), ['a', 'b'], t.headers.get('x-sluice-trace'));
  assert.deepEqual(trace.map((x) => `${x[1]};${x[2]}`), ['consensus;answered', 'consensus;answered']);
  // one endpoint down: the other's answer
  await b.setMode('http503');
  const r = await post(s.url(), call('eth_getTransactionCount', [addr, 'pending'], 9));
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.result, '0x1', r.text);
});

test('--check: dispatch: max needs of:, of: needs dispatch: max, each with its line', async () => {
  const dir = tempDir();
  const file = path.join(dir, 'sluice.yaml');
  for (const [row, msg] of [['{ dispatch: max }', 'needs of: 2 or more'], ['{ of: 3 }', 'is for dispatch: max'],
    ['{ dispatch: max, of: 1 }', 'of']]) {
    const text = renderConfig({ statePath: path.join(dir, 'state'), networks: { eth: {
      lines: [`methods: { eth_getTransactionCount: ${row} }`], endpoints: [{ id: 'x', url: 'http://127.0.0.1:1' }] } } });
    writeFileSync(file, text);
    const line = text.split('\n').findIndex((l) => l.includes('eth_getTransactionCount')) + 1;
    const r = spawnSync(SLUICE_BIN, ['--check', '-c', file], { encoding: 'utf8' });
    assert.notEqual(r.status, 0, row + ': ' + r.stdout + r.stderr);
    assert.match(r.stderr + r.stdout, new RegExp(`:${line}\\b.*${msg}`), row + ': ' + r.stderr + r.stdout);
  }
});
