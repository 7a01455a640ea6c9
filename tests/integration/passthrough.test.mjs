// Pass-through: single calls, batches, notifications, the HTTP envelope.
// Real sluice (2 workers) in front of 3 fake providers.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startFake, startSluice, post, call } from '../lib/harness.mjs';

let fakes, sluice;

before(async () => {
  fakes = await Promise.all(['a', 'b', 'c'].map((name) => startFake({ name })));
  const sol = await startFake({ name: 's', chain: 'solana' });
  fakes.push(sol);
  sluice = await startSluice({
    server: { max_body_bytes: 4096, max_batch: 5 },
    networks: {
      // health probes off: the fakes' counters see client calls alone
      eth: { lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: fakes.slice(0, 3).map((f) => ({ id: f.name, url: f.url })) },
      // the operator's own list replaces the default one
      locked: { lines: ['ranking: { probe_interval_ms: 0 }', 'blocked_methods: ["trace_*", "txpool_*"]'], endpoints: [{ id: 'a', url: fakes[0].url }] },
      sol: { chain: 'solana', lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: [{ id: 's', url: sol.url }] },
    },
  });
});

after(async () => {
  await sluice?.stop();
  await Promise.all((fakes || []).map((f) => f.stop()));
});

test('a single call is forwarded byte-for-byte and answered with the client id', async () => {
  const body = '{"jsonrpc":"2.0","id":"client-7","method":"eth_blockNumber","params":[]}';
  const r = await post(sluice.url('eth'), body);
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('content-type'), 'application/json');
  assert.equal(r.headers.get('x-sluice-endpoint'), 'a');
  assert.equal(r.headers.get('x-sluice-attempts'), '1');
  assert.equal(r.json.id, 'client-7');
  assert.match(r.json.result, /^0x[0-9a-f]+$/);
  assert.equal(r.headers.get('connection'), 'keep-alive');
});

test('ids keep their exact bytes, big numbers included', async () => {
  const r = await post(sluice.url('eth'), '{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"eth_chainId"}');
  assert.equal(r.status, 200);
  assert.ok(r.text.includes('"id":123456789012345678901234567890'), r.text);
});

test('a batch keeps every id and answers invalid and blocked members locally', async () => {
  const batch = [
    call('eth_chainId', [], 1),
    { jsonrpc: '2.0', method: 'eth_blockNumber' }, // notification: no entry
    call('admin_peers', [], 2),
    42,
    { jsonrpc: '1.0', id: 3, method: 'eth_chainId' },
    call('eth_getBalance', ['0x0000000000000000000000000000000000000000', 'latest'], 'z'),
  ].slice(0, 5);
  const r = await post(sluice.url('eth'), batch);
  assert.equal(r.status, 200);
  assert.ok(Array.isArray(r.json));
  const byId = new Map(r.json.map((m) => [JSON.stringify(m.id), m]));
  assert.equal(byId.get('1').result, '0x1');
  assert.equal(byId.get('2').error.code, -32601);
  assert.match(byId.get('2').error.message, /not allowed/);
  assert.equal(byId.get('3').error.code, -32600);
  assert.equal(byId.get('null').error.code, -32600);
  assert.equal(r.json.length, 4, 'the notification has no entry');
});

test('members go upstream once, as one batch', async () => {
  await fakes[0].reset();
  // two reads the cache never answers (a cached member would not go upstream)
  const r = await post(sluice.url('eth'), [call('eth_gasPrice', [], 1), call('eth_blockNumber', [], 2)]);
  assert.equal(r.status, 200);
  const s = await fakes[0].stats();
  assert.equal(s.requests, 1);
  assert.equal(s.calls, 2);
});

test('a single notification gets 204 and still reaches the upstream', async () => {
  await fakes[0].reset();
  const r = await post(sluice.url('eth'), { jsonrpc: '2.0', method: 'eth_blockNumber', params: [] });
  assert.equal(r.status, 204);
  assert.equal(r.text, '');
  const s = await fakes[0].stats();
  assert.equal(s.methods.eth_blockNumber, 1);
});

test('an all-notification batch gets 204', async () => {
  const r = await post(sluice.url('eth'), [{ jsonrpc: '2.0', method: 'eth_chainId' }, { jsonrpc: '2.0', method: 'eth_blockNumber' }]);
  assert.equal(r.status, 204);
});

test('JSON-RPC errors: parse error, empty batch, batch over max_batch, not an object', async () => {
  let r = await post(sluice.url('eth'), '{"jsonrpc":"2.0",');
  assert.equal(r.status, 200);
  assert.equal(r.json.error.code, -32700);
  assert.equal(r.json.id, null);
  r = await post(sluice.url('eth'), '[]');
  assert.equal(r.json.error.code, -32600);
  assert.ok(!Array.isArray(r.json));
  r = await post(sluice.url('eth'), Array.from({ length: 6 }, (_, i) => call('eth_chainId', [], i)));
  assert.equal(r.json.error.code, -32600);
  assert.match(r.json.error.message, /at most 5/);
  r = await post(sluice.url('eth'), '"eth_chainId"');
  assert.equal(r.json.error.code, -32600);
  r = await post(sluice.url('eth'), '');
  assert.equal(r.json.error.code, -32700);
});

test('blocked methods get -32601 naming the gateway', async () => {
  for (const m of ['debug_traceTransaction', 'personal_sign', 'miner_start', 'admin_nodeInfo', 'rpc.discover']) {
    const r = await post(sluice.url('eth'), call(m));
    assert.equal(r.status, 200);
    assert.equal(r.json.error.code, -32601, m);
  }
  const r = await post(sluice.url('sol'), call('registerNode'));
  assert.equal(r.json.error.code, -32601);
});

test('node-administration families are blocked by default; trace_* and txpool_* reach the upstream', async () => {
  await Promise.all(fakes.map((f) => f.reset()));
  const admin = ['clique_propose', 'engine_forkchoiceUpdatedV3', 'les_addBalance', 'qbft_proposeValidatorVote',
    'perm_addNodesToAllowlist', 'signer_confirmRequest', 'anvil_setBalance', 'hardhat_impersonateAccount', 'evm_revert'];
  for (const m of admin) {
    const r = await post(sluice.url('eth'), call(m));
    assert.equal(r.json.error.code, -32601, m);
    assert.match(r.json.error.message, new RegExp(`^${m}: this method is not allowed by the gateway`), m);
  }
  for (const m of ['trace_block', 'txpool_status', 'txpool_content']) {
    const r = await post(sluice.url('eth'), call(m, m === 'trace_block' ? ['latest'] : []));
    assert.equal(r.status, 200, m);
    // the fakes do not implement them: their own "does not exist" answer comes back
    assert.match(r.text, /does not exist/, m);
  }
  const seen = new Set();
  for (const f of fakes) for (const m of Object.keys((await f.stats()).methods || {})) seen.add(m);
  for (const m of admin) assert.ok(!seen.has(m), `${m} reached an upstream`);
  for (const m of ['trace_block', 'txpool_status', 'txpool_content']) assert.ok(seen.has(m), `${m} never reached an upstream`);
  await Promise.all(fakes.map((f) => f.reset()));
  for (const m of ['trace_block', 'txpool_status']) {
    const r = await post(sluice.url('locked'), call(m));
    assert.match(r.json.error.message, new RegExp(`^${m}: this method is not allowed by the gateway`), m);
  }
  // a list of its own replaces the default: clique_* is not in it
  assert.match((await post(sluice.url('locked'), call('clique_propose'))).text, /does not exist/);
  assert.deepEqual(Object.keys((await fakes[0].stats()).methods || {}), ['clique_propose']);
});

test('HTTP envelope: 404 unknown network, 405 wrong method, 413 too large, 415 content type', async () => {
  let r = await post(`${sluice.base}/nope`, call('eth_chainId'));
  assert.equal(r.status, 404);
  assert.equal(r.json.error.code, -32600);
  r = await post(`${sluice.base}/`, call('eth_chainId'));
  assert.equal(r.status, 404);
  r = await post(`${sluice.base}/eth/x/y`, call('eth_chainId'));
  assert.equal(r.status, 404);
  const g = await fetch(sluice.url('eth'));
  assert.equal(g.status, 405);
  assert.equal(g.headers.get('allow'), 'POST, OPTIONS');
  r = await post(sluice.url('eth'), JSON.stringify(call('eth_call', [{ data: '0x' + 'ab'.repeat(3000) }])));
  assert.equal(r.status, 413);
  r = await post(sluice.url('eth'), JSON.stringify(call('eth_chainId')), { 'content-type': 'text/plain' });
  assert.equal(r.status, 415);
  r = await post(sluice.url('eth'), JSON.stringify(call('eth_chainId')), { 'content-type': 'application/json; charset=utf-8' });
  assert.equal(r.status, 200);
});

test('an unknown sl_ key is refused, another segment is anonymous', async () => {
  let r = await post(`${sluice.url('eth')}/sl_notakey`, call('eth_chainId'));
  assert.equal(r.status, 401);
  r = await post(`${sluice.url('eth')}/anything`, call('eth_chainId'));
  assert.equal(r.status, 200);
  r = await post(sluice.url('eth'), call('eth_chainId'), { 'x-api-key': 'sl_wrong' });
  assert.equal(r.status, 401);
});

test('endpoint headers reach the upstream; client headers do not', async () => {
  const http = await import('node:http');
  const asked = []; // the client's call among sluice's own (probes, chain checks)
  const up = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      asked.push({ headers: req.headers, body, url: req.url });
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ jsonrpc: '2.0', id: JSON.parse(body).id, result: '0x1' }));
    });
  });
  await new Promise((r) => up.listen(0, '127.0.0.1', r));
  const s = await startSluice({
    workers: 1,
    networks: { eth: { endpoints: [{ id: 'h', url: `http://127.0.0.1:${up.address().port}/rpc/path?x=1`, headers: '{ X-Api-Key: "hdr-secret-123" }' }] } },
  });
  try {
    // a call nothing but this client asks (eth_chainId, asked by sluice's own chain check, may be a cache hit)
    const body = '{"jsonrpc":"2.0","id":5,"method":"eth_getBalance","params":["0x00000000000000000000000000000000000000a5","latest"]}';
    const r = await post(s.url('eth'), body, { authorization: 'Bearer client-token', cookie: 'a=b' });
    assert.equal(r.status, 200);
    const seen = asked.find((a) => a.body.includes('0x00000000000000000000000000000000000000a5'));
    assert.ok(seen, 'the call reached the upstream');
    assert.equal(seen.headers['x-api-key'], 'hdr-secret-123');
    assert.equal(seen.headers.authorization, undefined);
    assert.equal(seen.headers.cookie, undefined);
    assert.equal(seen.url, '/rpc/path?x=1');
    assert.equal(seen.body, body, 'forwarded byte for byte');
    assert.ok(!s.logs().includes('hdr-secret-123'));
  } finally {
    await s.stop();
    up.close();
  }
});

test('solana calls reach the solana network', async () => {
  const r = await post(sluice.url('sol'), call('getSlot'));
  assert.equal(r.status, 200);
  assert.equal(typeof r.json.result, 'number');
});

test('one access-log line per request, without secrets', async () => {
  const before = sluice.accessLines().length;
  await post(sluice.url('eth'), call('eth_chainId', [], 99));
  await new Promise((r) => setTimeout(r, 300)); // access lines are flushed every 100 ms
  const lines = sluice.accessLines();
  assert.ok(lines.length > before);
  // workers flush their lines every ~100 ms: find ours among the new ones
  const last = lines.slice(before).find((l) => l.network === 'eth' && l.methods[0] === 'eth_chainId');
  assert.ok(last, 'our line is there');
  assert.equal(last.network, 'eth');
  assert.deepEqual(last.methods, ['eth_chainId']);
  assert.equal(last.status, 200);
  assert.equal(typeof last.us, 'number');
});

// https://user:password@host/ is sent as HTTP Basic credentials (decoded),
// and configured headers replace sluice's own User-Agent / Accept.
test('user-info in an endpoint URL becomes an Authorization header; configured headers replace defaults', async () => {
  const http = await import('node:http');
  const seen = [];
  const srv = http.createServer((req, res) => {
    seen.push(req.rawHeaders);
    req.resume();
    req.on('end', () => {
      const ok = req.headers.authorization === `Basic ${Buffer.from('user:p@ss').toString('base64')}`;
      res.writeHead(ok ? 200 : 401, { 'content-type': 'application/json' });
      res.end(ok ? '{"jsonrpc":"2.0","id":1,"result":"0x1"}' : '{"error":"unauthorized"}');
    });
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const port = srv.address().port;
  const s = await startSluice({
    workers: 1,
    networks: { eth: { lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: [
      { id: 'basic', url: `http://user:p%40ss@127.0.0.1:${port}/rpc`, headers: '{ User-Agent: "my-app/1.0" }' }] } },
  });
  try {
    const r = await post(s.url('eth'), call('eth_chainId'));
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.result, '0x1');
    const names = seen[0].filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase());
    assert.deepEqual(names.filter((n) => n === 'user-agent' || n === 'authorization' || n === 'accept').sort(),
      ['accept', 'authorization', 'user-agent'], 'each header once');
    assert.equal(seen[0][seen[0].findIndex((n) => n.toLowerCase() === 'user-agent') + 1], 'my-app/1.0');
    assert.ok(!s.logs().includes('p@ss') && !s.logs().includes('p%40ss'));
  } finally {
    await s.stop();
    srv.close();
  }
});
