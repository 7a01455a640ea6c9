// Access policy, static part (issue 33, phase 1): access.anonymous: deny and
// a key's scope (networks, methods, contracts, origins) over HTTP, batches
// and WebSocket, against real processes. The refused calls never reach the
// fake provider, and each refusal is counted in /metrics by reason.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import WebSocket from 'ws';
import { Wallet } from 'ethers';
import { startFake, startSluice, post, call, adminGet, waitFor } from '../lib/harness.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const sha = (k) => createHash('sha256').update(k).digest('hex');
const PLAIN = 'sl_plainkey0123456789abcdefgh';
const SCOPED = 'sl_scopedkey0123456789abcdefg';
const NOSUB = 'sl_nosubkey0123456789abcdefgh';
const TIGHT = 'sl_tightkey0123456789abcdefgh';
const LISTED = '0x1111111111111111111111111111111111111111';
const OTHER = '0x2222222222222222222222222222222222222222';
const APP = 'https://app.example';

let a, s;
before(async () => {
  a = await startFake({ name: 'a' });
  started.push(a);
  s = await startSluice({
    workers: 2,
    cache: false, // the fake must see every call that was admitted, and count none that was not
    server: { cors_origins: '["https://other.example"]' },
    networks: {
      eth: { lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: [{ id: 'a', url: a.url }] },
      base: { lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: [{ id: 'b', url: a.url }] },
    },
    extra: [
      'access: { anonymous: deny }',
      'tiers: { pro: {}, tight: { per_minute: 3 } }',
      'keys:',
      `  - { sha256: "${sha(PLAIN)}", tier: pro, name: plain }`,
      `  - sha256: "${sha(SCOPED)}"`,
      '    tier: pro',
      '    name: web-app',
      '    networks: [eth]',
      '    methods: { allow: ["eth_*", "net_version"], deny: ["eth_getLogs"] }',
      `    contracts: ["${LISTED}"]`,
      `    origins: ["${APP}"]`,
      `  - sha256: "${sha(NOSUB)}"`,
      '    tier: pro',
      '    name: no-subs',
      '    methods: { deny: ["eth_subscribe"] }',
      `  - sha256: "${sha(TIGHT)}"`,
      '    tier: tight',
      '    name: tight',
      '    networks: [eth]',
      '    methods: { deny: ["net_peerCount"] }',
    ].join('\n'),
  });
  started.push(s);
});

const keyed = (net, key) => `${s.url(net)}/${key}`;
const upstream = async (m) => (await a.stats()).methods?.[m] ?? 0;
const refusal = (r, status, reason) => {
  assert.equal(r.status, status, r.text);
  assert.equal(r.json.error.code, -32600, r.text);
  assert.equal(r.json.error.data.reason, reason, r.text);
  assert.ok(!r.text.includes(SCOPED) && !r.text.includes('web-app'), `the key is never named: ${r.text}`);
};

test('anonymous: deny refuses a keyless call with 401 key_required and admits keyed ones', async () => {
  const r = await post(s.url('eth'), call('eth_blockNumber'));
  refusal(r, 401, 'key_required');
  assert.match(r.json.error.message, /key required/i);
  assert.match(r.json.error.message, /X-API-Key/);
  assert.match(r.json.error.message, /\/eth\/sl_/);
  assert.equal((await post(keyed('eth', PLAIN), call('eth_blockNumber'))).status, 200);
  const h = await post(s.url('eth'), call('eth_blockNumber'), { 'x-api-key': PLAIN });
  assert.equal(h.status, 200);
  assert.ok(h.json.result);
});

test('networks: a network outside the key is 403 network_not_allowed, naming it', async () => {
  const r = await post(keyed('base', SCOPED), call('eth_blockNumber'));
  refusal(r, 403, 'network_not_allowed');
  assert.match(r.json.error.message, /'base'/);
  assert.equal((await post(keyed('eth', SCOPED), call('eth_blockNumber'))).status, 200);
  assert.equal((await post(keyed('base', PLAIN), call('eth_blockNumber'))).status, 200, 'an unscoped key: all networks');
});

test('methods: outside allow, or in deny, is 403 method_not_allowed; inside is answered', async () => {
  await a.reset();
  let r = await post(keyed('eth', SCOPED), call('net_peerCount'));
  refusal(r, 403, 'method_not_allowed');
  assert.match(r.json.error.message, /net_peerCount/);
  r = await post(keyed('eth', SCOPED), call('eth_getLogs', [{ fromBlock: '0x1', toBlock: '0x1' }]));
  refusal(r, 403, 'method_not_allowed');
  assert.equal((await post(keyed('eth', SCOPED), call('net_version'))).status, 200);
  assert.equal((await post(keyed('eth', SCOPED), call('eth_chainId'))).json.result, '0x1');
  assert.equal(await upstream('net_peerCount'), 0);
  assert.equal(await upstream('eth_getLogs'), 0);
});

test('contracts: eth_call, eth_estimateGas and eth_createAccessList to an unlisted address are 403', async () => {
  await a.reset();
  for (const m of ['eth_call', 'eth_estimateGas', 'eth_createAccessList']) {
    const ok = await post(keyed('eth', SCOPED), call(m, [{ to: LISTED, data: '0x' }, 'latest']));
    assert.equal(ok.status, 200, `${m}: ${ok.text}`);
    const r = await post(keyed('eth', SCOPED), call(m, [{ to: OTHER, data: '0x' }, 'latest']));
    refusal(r, 403, 'contract_not_allowed');
    assert.ok(r.json.error.message.includes(OTHER), r.text);
  }
  const create = await post(keyed('eth', SCOPED), call('eth_call', [{ data: '0x6000' }, 'latest']));
  refusal(create, 403, 'contract_not_allowed');
  assert.equal(await upstream('eth_call'), 1, 'only the listed call went upstream');
});

test('eth_sendRawTransaction: to a listed contract admitted, to another refused, unreadable refused', async () => {
  await a.reset();
  const w = new Wallet('0x' + '42'.repeat(32));
  const tx = (to, type) => w.signTransaction({ type, to, nonce: 0, gasLimit: 50000n, chainId: 1n, value: 0n, data: '0x',
    ...(type === 2 ? { maxFeePerGas: 2n * 10n ** 9n, maxPriorityFeePerGas: 10n ** 9n } : { gasPrice: 10n ** 9n }) });
  for (const type of [0, 2]) {
    const ok = await post(keyed('eth', SCOPED), call('eth_sendRawTransaction', [await tx(LISTED, type)]));
    assert.equal(ok.status, 200, ok.text);
    assert.match(ok.json.result, /^0x[0-9a-f]{64}$/);
    const r = await post(keyed('eth', SCOPED), call('eth_sendRawTransaction', [await tx(OTHER, type)]));
    refusal(r, 403, 'contract_not_allowed');
    assert.ok(r.json.error.message.includes(OTHER), r.text);
  }
  const bad = await post(keyed('eth', SCOPED), call('eth_sendRawTransaction', ['0xf8']));
  refusal(bad, 403, 'contract_not_allowed');
  assert.match(bad.json.error.message, /could not be read/);
  assert.equal(await upstream('eth_sendRawTransaction'), 2);
});

test('a batch: only the refused members get errors (HTTP 200), the others are answered; none refused reaches upstream', async () => {
  await a.reset();
  const r = await post(keyed('eth', SCOPED), [
    call('eth_blockNumber', [], 1),
    call('net_peerCount', [], 2),
    call('eth_call', [{ to: OTHER }, 'latest'], 3),
    call('eth_chainId', [], 4),
  ]);
  assert.equal(r.status, 200, r.text);
  const by = Object.fromEntries(r.json.map((m) => [m.id, m]));
  assert.ok(by[1].result && by[4].result === '0x1', r.text);
  assert.equal(by[2].error.data.reason, 'method_not_allowed');
  assert.equal(by[3].error.data.reason, 'contract_not_allowed');
  assert.equal(by[2].error.code, -32600);
  assert.equal(await upstream('net_peerCount'), 0);
  assert.equal(await upstream('eth_call'), 0);
  assert.equal(await upstream('eth_chainId'), 1);
});

test('origins: the listed Origin admitted (and named by CORS), another 403 origin_not_allowed, none admitted', async () => {
  const ok = await post(keyed('eth', SCOPED), call('eth_chainId'), { origin: APP });
  assert.equal(ok.status, 200);
  assert.equal(ok.headers.get('access-control-allow-origin'), APP);
  const r = await post(keyed('eth', SCOPED), call('eth_chainId'), { origin: 'https://evil.example' });
  refusal(r, 403, 'origin_not_allowed');
  assert.match(r.json.error.message, /evil\.example/);
  // server.cors_origins lists other.example: not for this key, whose origins alone answer
  const other = await post(keyed('eth', SCOPED), call('eth_chainId'), { origin: 'https://other.example' });
  refusal(other, 403, 'origin_not_allowed');
  assert.equal((await post(keyed('eth', SCOPED), call('eth_chainId'))).status, 200, 'no Origin: not a browser');
  // the preflight, keyed by the path
  const pre = await fetch(keyed('eth', SCOPED), { method: 'OPTIONS', headers: { origin: APP, 'access-control-request-method': 'POST' } });
  assert.equal(pre.headers.get('access-control-allow-origin'), APP);
  const pre2 = await fetch(keyed('eth', SCOPED), { method: 'OPTIONS', headers: { origin: 'https://other.example' } });
  assert.equal(pre2.headers.get('access-control-allow-origin'), null);
  // an unscoped key keeps server.cors_origins
  const plain = await post(keyed('eth', PLAIN), call('eth_chainId'), { origin: 'https://other.example' });
  assert.equal(plain.headers.get('access-control-allow-origin'), 'https://other.example');
});

test('refusals are charged to the caller\'s rate limit (no free probing)', async () => {
  refusal(await post(keyed('eth', TIGHT), call('net_peerCount')), 403, 'method_not_allowed');
  refusal(await post(keyed('base', TIGHT), call('eth_chainId')), 403, 'network_not_allowed');
  refusal(await post(keyed('eth', TIGHT), call('net_peerCount')), 403, 'method_not_allowed');
  const r = await post(keyed('eth', TIGHT), call('net_peerCount'));
  assert.equal(r.status, 429, r.text);
  assert.equal(r.json.error.data.scope, 'client');
});

function openWs(url, headers = {}) {
  const ws = new WebSocket(url, { headers });
  const queue = [], waiters = [];
  ws.on('message', (d) => {
    const m = JSON.parse(d.toString());
    if (waiters.length) waiters.shift()(m); else queue.push(m);
  });
  const opened = new Promise((resolve, reject) => {
    ws.on('open', resolve);
    ws.on('error', reject);
    ws.on('unexpected-response', (req, res) => {
      let body = '';
      res.on('data', (c) => { body += c; });
      res.on('end', () => reject(Object.assign(new Error(`upgrade refused: ${res.statusCode}`), { status: res.statusCode, body })));
    });
  });
  const next = (ms = 5000) => (queue.length ? Promise.resolve(queue.shift()) : new Promise((r, j) => {
    const t = setTimeout(() => j(new Error('no message')), ms);
    waiters.push((m) => { clearTimeout(t); r(m); });
  }));
  return { ws, opened, next, send: (o) => ws.send(JSON.stringify(o)) };
}

const wsUrl = (net, key) => `ws://127.0.0.1:${s.port}/${net}${key ? '/' + key : ''}`;
const upgradeRefused = async (url, headers, status, reason) => {
  const c = openWs(url, headers);
  const err = await c.opened.then(() => null, (e) => e);
  assert.ok(err, 'the upgrade was refused');
  assert.equal(err.status, status);
  assert.equal(JSON.parse(err.body).error.data.reason, reason);
};

test('WebSocket: the upgrade checks the key, network and Origin', async () => {
  await upgradeRefused(wsUrl('eth'), {}, 401, 'key_required');
  await upgradeRefused(wsUrl('base', SCOPED), {}, 403, 'network_not_allowed');
  await upgradeRefused(wsUrl('eth', SCOPED), { origin: 'https://evil.example' }, 403, 'origin_not_allowed');
  const c = openWs(wsUrl('eth', SCOPED), { origin: APP });
  await c.opened;
  c.ws.close();
});

test('WebSocket: each call and each subscription on the socket is held to the scope', async () => {
  await a.reset();
  const c = openWs(wsUrl('eth', SCOPED));
  await c.opened;
  c.send(call('net_peerCount', [], 1));
  let m = await c.next();
  assert.equal(m.id, 1);
  assert.equal(m.error.data.reason, 'method_not_allowed');
  c.send(call('eth_call', [{ to: OTHER }, 'latest'], 2));
  m = await c.next();
  assert.equal(m.error.data.reason, 'contract_not_allowed');
  c.send(call('eth_chainId', [], 3));
  m = await c.next();
  assert.equal(m.result, '0x1');
  c.send(call('eth_subscribe', ['newHeads'], 4));
  m = await c.next();
  assert.equal(m.id, 4);
  assert.match(m.result, /^0x/, JSON.stringify(m));
  c.ws.close();
  assert.equal(await upstream('net_peerCount'), 0);
  assert.equal(await upstream('eth_call'), 0);

  const d = openWs(wsUrl('eth', NOSUB));
  await d.opened;
  d.send(call('eth_subscribe', ['newHeads'], 5));
  m = await d.next();
  assert.equal(m.id, 5);
  assert.equal(m.error.code, -32600);
  assert.equal(m.error.data.reason, 'method_not_allowed');
  assert.match(m.error.message, /eth_subscribe/);
  d.send(call('eth_blockNumber', [], 6));
  m = await d.next();
  assert.ok(m.result, JSON.stringify(m));
  d.ws.close();
});

test('/metrics counts refusals by reason', async () => {
  const reasons = ['key_required', 'network_not_allowed', 'method_not_allowed', 'contract_not_allowed', 'origin_not_allowed'];
  const count = (text, reason) => Number(text.match(new RegExp(`^sluice_access_refusals_total\\{reason="${reason}"\\} (\\d+)$`, 'm'))?.[1]);
  let text = '';
  // the workers flush their counters to the state every state.flush_ms
  await waitFor(async () => {
    text = (await adminGet(s, '/metrics')).text;
    return reasons.every((r) => count(text, r) >= 1) && count(text, 'method_not_allowed') >= 5;
  }, { timeoutMs: 10000, what: 'every reason counted' }).catch(() => {});
  for (const r of reasons) assert.ok(count(text, r) >= 1, `${r}: ${count(text, r)}`);
  // this file's refusals of methods: 2 HTTP, 1 in a batch, 1 over WebSocket, 1 subscription at least
  assert.ok(count(text, 'method_not_allowed') >= 5, `method_not_allowed ${count(text, 'method_not_allowed')}`);
});
