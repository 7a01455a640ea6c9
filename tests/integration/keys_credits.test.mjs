// A key's credits: budget (issue 33): its calls' cost in credit units,
// counted across every worker; once spent, 429 data.reason key_credits
// with reset_ms and Retry-After; another key is served.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { startFake, startSluice, post, call, adminGet, waitFor } from '../lib/harness.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const sha = (k) => createHash('sha256').update(k).digest('hex');
const SMALL = 'sl_smallkey0123456789abcdefgh', OTHER = 'sl_otherkey0123456789abcdefgh';
const STD = (id = 1) => call('eth_call', [{ to: '0x0000000000000000000000000000000000000001' }, 'latest'], id);

test('credits.per_day across 2 workers: the key is refused once spent, another key is served', async () => {
  const a = await startFake({ name: 'a' });
  started.push(a);
  const s = await startSluice({
    workers: 2,
    // flat: 1 credit a call, and 1 more per batch (none)
    networks: { eth: { lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: [{ id: 'a', url: a.url }] } },
    extra: `tiers: { pro: { per_second: 1000 } }\nkeys:\n  - { sha256: "${sha(SMALL)}", tier: pro, name: small, credits: { per_day: 6 } }\n  - { sha256: "${sha(OTHER)}", tier: pro, name: other, credits: { per_day: 1000, per_month: 5000 } }`,
  });
  started.push(s);
  // fresh connections, so both workers answer some
  const send = (key, body) => post(s.url('eth'), body, key ? { 'x-api-key': key, connection: 'close' } : { connection: 'close' });
  for (let i = 0; i < 4; i++) assert.equal((await send(SMALL, STD(i))).status, 200, `call ${i} fits`);
  const batch = [STD(10), STD(11)];
  assert.equal((await send(SMALL, batch)).status, 200, 'a batch of 2 costs 2 (6 spent)');
  const r = await send(SMALL, STD(7));
  assert.equal(r.status, 429, r.text);
  assert.equal(r.json.error.code, -32005);
  assert.equal(r.json.error.data.scope, 'client');
  assert.equal(r.json.error.data.reason, 'key_credits');
  assert.equal(r.json.error.data.limit, 6);
  assert.equal(r.json.error.data.window_s, 86400);
  assert.equal(r.json.error.data.cost, 1);
  assert.ok(r.json.error.data.reset_ms > 0);
  assert.ok(Number(r.headers.get('retry-after')) > 0);
  for (let i = 0; i < 6; i++)
    assert.equal((await send(SMALL, STD(i))).status, 429, 'still spent, whichever worker answers');
  for (let i = 0; i < 10; i++) assert.equal((await send(OTHER, STD(i))).status, 200, 'another key is served');
  assert.equal((await send(undefined, STD())).status, 200, 'keyless callers are not held to it');
  const count = async () => Number((await adminGet(s, '/metrics')).text
    .match(/^sluice_access_refusals_total\{reason="key_credits"\} (\d+)$/m)?.[1]);
  await waitFor(async () => (await count()) === 7, { timeoutMs: 5000, what: 'key_credits in sluice_access_refusals_total' });
});
