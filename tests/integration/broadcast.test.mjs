// broadcast: N (issue 35): a signed transaction goes to N endpoints at once;
// the first that takes it answers ("already known" is taking it); each
// endpoint is sent it once; a write that may have reached a node is never
// sent to another one by accident.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { keccak256 } from 'viem';
import { startFake, startSluice, post, call, renderConfig, tempDir, SLUICE_BIN } from '../lib/harness.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const RAW_TX = '0x02f86b827a6980843b9aca00847735940082520894000000000000000000000000000000000000dead80c080a0aa';
const LINES = ['ranking: { probe_interval_ms: 0 }', 'methods: { eth_sendRawTransaction: { broadcast: 2 } }'];

async function fakes(names) {
  const f = await Promise.all(names.map((name) => startFake({ name })));
  started.push(...f);
  return f;
}

async function sends(f) {
  return (await f.stats()).methods.eth_sendRawTransaction ?? 0;
}

async function sluiceOver(f, lines = LINES) {
  const s = await startSluice({ workers: 1, networks: { eth: { lines, endpoints: f.map((x) => ({ id: x.name, url: x.url })) } } });
  started.push(s);
  return s;
}

function traceOf(r) {
  // the attempts (endpoint;role;outcome;ms), not the credits;N that follows them
  return (r.headers.get('x-sluice-trace') ?? '').split(', ').filter(Boolean).map((x) => x.split(';'))
    .filter((x) => x.length === 4);
}

test('broadcast: 2 reaches two of three endpoints once each and answers one hash', async () => {
  const f = await fakes(['a', 'b', 'c']);
  const s = await sluiceOver(f);
  const r = await post(s.url('eth'), call('eth_sendRawTransaction', [RAW_TX], 'tx1'), { 'x-sluice-trace': '1' });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.id, 'tx1');
  assert.match(r.json.result, /^0x[0-9a-f]{64}$/, r.text);
  const counts = await Promise.all(f.map(sends));
  assert.deepEqual(counts.slice().sort(), [0, 1, 1], `sends per endpoint ${counts}`);
  const trace = traceOf(r);
  assert.equal(trace.length, 2, r.headers.get('x-sluice-trace'));
  assert.deepEqual(trace.map((x) => x[1]), ['broadcast', 'broadcast'], r.headers.get('x-sluice-trace'));
  assert.ok(trace.some((x) => x[2] === 'answered'), r.headers.get('x-sluice-trace'));
  assert.deepEqual(trace.map((x) => x[0]).sort(), f.filter((_, i) => counts[i] === 1).map((x) => x.name).sort());
  // reads are not broadcast
  for (const x of f) await x.reset();
  const b = await post(s.url('eth'), call('eth_getBalance', ['0x' + '11'.repeat(20), 'latest'], 2));
  assert.equal(b.status, 200, b.text);
});

test('"already known" from one endpoint is a success while the other fails', async () => {
  const [a, b] = await fakes(['a', 'b']);
  const s = await sluiceOver([a, b]);
  await a.setMode('rpc_error', { code: -32000, message: 'already known', method: 'eth_sendRawTransaction' });
  await b.setMode('http503', { method: 'eth_sendRawTransaction' });
  const r = await post(s.url('eth'), call('eth_sendRawTransaction', [RAW_TX], 7), { 'x-sluice-trace': '1' });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.error, undefined, r.text);
  assert.equal(r.json.result, keccak256(RAW_TX), r.text);
  assert.equal(r.headers.get('x-sluice-endpoint'), 'a');
  assert.equal(await sends(a), 1);
  assert.equal(await sends(b), 1, 'the failed endpoint was sent it once, never again');
});

test('both endpoints fail after the write may have reached them: an ambiguous write, sent nowhere else', async () => {
  const [a, b, c] = await fakes(['a', 'b', 'c']);
  const s = await sluiceOver([a, b, c]);
  for (const x of [a, b, c]) await x.setMode('http503', { method: 'eth_sendRawTransaction' });
  const r = await post(s.url('eth'), call('eth_sendRawTransaction', [RAW_TX], 8));
  assert.ok(r.json.error, r.text);
  assert.deepEqual((await Promise.all([a, b, c].map(sends))).sort(), [0, 1, 1], 'the third endpoint was never sent it');
});

test('refused before processing (429) at one: the other answers; a refusal at both moves on to the third', async () => {
  const [a, b, c] = await fakes(['a', 'b', 'c']);
  const s = await sluiceOver([a, b, c]);
  await a.setMode('http429', { method: 'eth_sendRawTransaction' });
  await b.setMode('http429', { method: 'eth_sendRawTransaction' });
  await c.setMode('http429', { method: 'eth_sendRawTransaction' });
  // every endpoint refuses: each is sent it once at most, and the answer is a refusal
  const r = await post(s.url('eth'), call('eth_sendRawTransaction', [RAW_TX], 9));
  assert.ok(r.json.error, r.text);
  const counts = await Promise.all([a, b, c].map(sends));
  assert.ok(counts.every((n) => n <= 1), `sends ${counts}`);
  assert.equal(counts.reduce((x, y) => x + y, 0), 3, `a refusal is safe to move on from: ${counts}`);
});

test('--check: broadcast is for writes, with its line', async () => {
  const dir = tempDir();
  const file = path.join(dir, 'sluice.yaml');
  const text = renderConfig({ statePath: path.join(dir, 'state'), networks: { eth: {
    lines: ['methods: { eth_getBalance: { broadcast: 2 } }'],
    endpoints: [{ id: 'x', url: 'http://127.0.0.1:1' }] } } });
  writeFileSync(file, text);
  const line = text.split('\n').findIndex((l) => l.includes('broadcast: 2')) + 1;
  const r = spawnSync(SLUICE_BIN, ['--check', '-c', file], { encoding: 'utf8' });
  assert.notEqual(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stderr + r.stdout, new RegExp(`:${line}\\b.*broadcast: is for writes`), r.stderr + r.stdout);
});
