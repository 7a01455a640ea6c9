// A key's per_address limit and its credits on a WebSocket (issue 33): each
// call on the socket is charged as an HTTP call is, subscription calls
// included; past the limit the call (not the socket) gets 429 with
// data.reason per_address / key_credits, and another address under the same
// key is served. Real processes.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import WebSocket from 'ws';
import { startFake, startSluice, adminGet, waitFor } from '../lib/harness.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const sha = (k) => createHash('sha256').update(k).digest('hex');
const VISIT = 'sl_wsvisitkey0123456789abcdef';
const BUDGET = 'sl_wsbudgetkey0123456789abcde';

// A socket whose answers come back by id.
async function socket(url, headers = {}) {
  const ws = new WebSocket(url, { headers });
  await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject); });
  const waiting = new Map();
  ws.on('message', (data) => {
    const m = JSON.parse(String(data));
    if (m.id !== undefined && waiting.has(m.id)) { waiting.get(m.id)(m); waiting.delete(m.id); }
  });
  let next = 1;
  return {
    ws,
    call: (method, params = []) => new Promise((resolve) => {
      const id = next++;
      waiting.set(id, resolve);
      ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    }),
    close: () => ws.close(),
  };
}

const STD = ['eth_call', [{ to: '0x0000000000000000000000000000000000000001' }, 'latest']];

test('per_address and credits hold each call on a WebSocket, subscriptions included', async () => {
  const a = await startFake({ name: 'a' });
  started.push(a);
  const s = await startSluice({
    workers: 2,
    server: { trusted_proxies: '["127.0.0.1/32"]' },
    networks: { eth: { endpoints: [{ id: 'a', url: a.url }] } },
    extra: [
      'tiers: { pro: { per_minute: 1000 } }',
      'keys:',
      `  - { sha256: "${sha(VISIT)}", tier: pro, name: visit, per_address: { per_minute: 3 } }`,
      `  - { sha256: "${sha(BUDGET)}", tier: pro, name: budget, credits: { per_day: 4 } }`,
    ].join('\n'),
  });
  started.push(s);
  const url = `ws://127.0.0.1:${s.port}/eth/`;

  // per_address: 3 a minute for 10.0.0.1, on one socket: a call, a subscription, a call fit
  const one = await socket(`${url}${VISIT}`, { 'x-forwarded-for': '10.0.0.1' });
  let r = await one.call(...STD);
  assert.ok(r.result !== undefined, JSON.stringify(r));
  r = await one.call('eth_subscribe', ['newHeads']);
  assert.match(String(r.result), /^0x/, `the subscription fits: ${JSON.stringify(r)}`);
  r = await one.call(...STD);
  assert.ok(r.result !== undefined, JSON.stringify(r));
  r = await one.call(...STD);
  assert.equal(r.error?.data?.reason, 'per_address', `the 4th call is over: ${JSON.stringify(r)}`);
  assert.equal(r.error.code, -32005);
  r = await one.call('eth_subscribe', ['newHeads']);
  assert.equal(r.error?.data?.reason, 'per_address', `so is a subscription: ${JSON.stringify(r)}`);
  assert.equal(one.ws.readyState, WebSocket.OPEN, 'the socket stays open');
  // another address under the same key is served
  const two = await socket(`${url}${VISIT}`, { 'x-forwarded-for': '10.0.0.2' });
  r = await two.call(...STD);
  assert.ok(r.result !== undefined, `another address: ${JSON.stringify(r)}`);
  r = await two.call('eth_subscribe', ['newHeads']);
  assert.match(String(r.result), /^0x/, `another address subscribes: ${JSON.stringify(r)}`);

  // credits: 4 a day, flat (1 a call, a subscription call included)
  const b = await socket(`${url}${BUDGET}`);
  for (let i = 0; i < 3; i++) {
    r = await b.call(...STD);
    assert.ok(r.result !== undefined, `call ${i} fits: ${JSON.stringify(r)}`);
  }
  r = await b.call('eth_subscribe', ['newHeads']);
  assert.match(String(r.result), /^0x/, `the 4th credit: ${JSON.stringify(r)}`);
  r = await b.call('eth_subscribe', ['newHeads']);
  assert.equal(r.error?.data?.reason, 'key_credits', `spent: ${JSON.stringify(r)}`);
  r = await b.call(...STD);
  assert.equal(r.error?.data?.reason, 'key_credits', `spent: ${JSON.stringify(r)}`);
  for (const c of [one, two, b]) c.close();

  const value = (text, series) => Number(text.match(new RegExp(`^${series.replace(/[{}"]/g, (c) => `\\${c}`)} (\\d+)$`, 'm'))?.[1]);
  await waitFor(async () => {
    const text = (await adminGet(s, '/metrics')).text;
    return value(text, 'sluice_key_refusals_total{key="visit",reason="per_address"}') === 2 &&
      value(text, 'sluice_key_refusals_total{key="budget",reason="key_credits"}') === 2 &&
      value(text, 'sluice_access_refusals_total{reason="per_address"}') === 2;
  }, { timeoutMs: 5000, what: 'the WebSocket refusals counted' });
});
