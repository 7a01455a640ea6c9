// A logs filter is bounded as providers bound theirs: at most 1,000
// addresses and 100 topics at a position (policy/logfilter.h), refused past
// that with -32602 and data.reason; what is admitted is sorted, so sluice
// matches each log by binary search, and filters with the same members in
// another order or with repeats are one source. A reviewer's 250 filters of
// ~20,000 addresses took a worker's whole CPU (another client's p50 1.3 ms
// -> 1,478 ms) and 561 MB. Real processes: the gateway and a fake provider
// whose logs vary in address and topics.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { startFake, startSluice, post, postFresh, call, sleep, waitFor, adminGet } from '../lib/harness.mjs';
import { openWs, waitMetric } from '../lib/wsclient.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const POLL_MS = 100;
// the fake's --logs-varied addresses (as in subscriptions_cost.test.mjs)
const ADDR = [0, 1, 2, 3].map((k) => `0x22222222222222222222222222222222222222${(0x20 + k).toString(16)}`);
const TRANSFER = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';
const randomAddr = () => `0x${randomBytes(20).toString('hex')}`;
const randomTopic = () => `0x${randomBytes(32).toString('hex')}`;
const metric = async (s, re) => { const m = re.exec((await adminGet(s, '/metrics')).text); return m ? Number(m[1]) : NaN; };

async function setup() {
  const a = await startFake({ name: 'a', args: ['--block', '1000', '--block-time-ms', '0', '--logs-per-block', '12', '--logs-varied', '1'] });
  started.push(a);
  a.chain = async (body) => (await fetch(`${a.url}/_control/chain`, { method: 'POST', body: JSON.stringify(body) })).json();
  const s = await startSluice({ workers: 1, networks: { eth: { chain: 'ethereum',
    lines: [`ranking: { probe_interval_ms: ${POLL_MS} }`], endpoints: [{ id: 'a', url: a.url }] } } });
  started.push(s);
  return { a, s };
}

test('a logs filter past 1,000 addresses or 100 topics at a position is refused with -32602 and data.reason; another client is served meanwhile', { timeout: 60000 }, async () => {
  const { s } = await setup();
  const c = openWs(`ws://127.0.0.1:${s.port}/eth`);
  await c.opened;
  const huge = Array.from({ length: 20000 }, randomAddr);
  const t0 = performance.now();
  const r = await c.rpc('eth_subscribe', ['logs', { address: huge }], 1);
  assert.equal(r.error?.code, -32602, JSON.stringify(r).slice(0, 300));
  assert.equal(r.error.data?.reason, 'logs_filter_addresses');
  assert.equal(r.error.data?.limit, 1000);
  assert.match(r.error.message, /at most 1000 addresses/);
  const over = await c.rpc('eth_subscribe', ['logs', { address: huge.slice(0, 1001) }], 2);
  assert.equal(over.error?.data?.reason, 'logs_filter_addresses', 'one past the cap');
  const topics = await c.rpc('eth_subscribe', ['logs', { topics: [null, Array.from({ length: 101 }, randomTopic)] }], 3);
  assert.equal(topics.error?.code, -32602, JSON.stringify(topics).slice(0, 300));
  assert.equal(topics.error.data?.reason, 'logs_filter_topics');
  assert.equal(topics.error.data?.limit, 100);
  // the caps exactly are admitted
  const atCap = await c.rpc('eth_subscribe', ['logs', { address: huge.slice(0, 1000), topics: [Array.from({ length: 100 }, randomTopic)] }], 4);
  assert.ok(typeof atCap.result === 'string', JSON.stringify(atCap).slice(0, 300));
  assert.ok(performance.now() - t0 < 10000, 'refused without a long parse');
  // another client (HTTP) is answered as usual
  const other = await post(`http://127.0.0.1:${s.port}/eth`, call('eth_blockNumber', []));
  assert.equal(other.status, 200);
  assert.ok(other.json?.result, other.text);
  c.ws.close();
});

test('a 1,000-address filter matched in sluice (shared fetch) gets exactly its logs; the same members in another order are one source', { timeout: 60000 }, async () => {
  const { a, s } = await setup();
  const c = openWs(`ws://127.0.0.1:${s.port}/eth`);
  await c.opened;
  // 999 random addresses and one the fake's logs use, shuffled, with a repeat: 1,000 given
  const members = [...Array.from({ length: 998 }, randomAddr), ADDR[2], ADDR[2].toUpperCase().replace('0X', '0x')];
  const shuffled = [...members].sort(() => Math.random() - 0.5);
  const big = (await c.rpc('eth_subscribe', ['logs', { address: shuffled }], 1)).result;
  const same = (await c.rpc('eth_subscribe', ['logs', { address: [...members].reverse() }], 2)).result;
  assert.ok(big && same, 'both admitted');
  // more than SUB_LOGS_SHARED_MIN (4) distinct filters: the network's logs are fetched once and matched here
  const others = [{ address: ADDR[0] }, { address: ADDR[1] }, { topics: [TRANSFER] }, { address: [ADDR[3], ADDR[0]] }];
  for (let i = 0; i < others.length; i++) assert.ok((await c.rpc('eth_subscribe', ['logs', others[i]], 10 + i)).result);
  await waitMetric(s, /sluice_subscriptions\{kind="logs"\} 6\b/);
  assert.equal(await metric(s, /sluice_subscription_sources\{network="eth",kind="logs"\} (\d+)/), 5,
    'the two orders of one set share a source');
  await sleep(5 * POLL_MS);
  const blocks = [];
  for (let k = 0; k < 3; k++) {
    blocks.push((await a.chain({ advance: 1 })).hash);
    await sleep(4 * POLL_MS);
  }
  await waitFor(async () => await metric(s, /sluice_subscription_logs_shared\{network="eth"\} (\d+)/) === 1, { what: 'shared fetch' });
  const want = [];
  for (const blockHash of blocks) {
    const r = await post(a.url, call('eth_getLogs', [{ blockHash, address: ADDR[2] }]));
    want.push(...r.json.result);
  }
  assert.ok(want.length > 0, 'the fake logs something at ADDR[2]');
  await waitFor(() => c.notes(big).filter((l) => blocks.includes(l.blockHash)).length >= want.length, { what: 'the big filter\'s logs' });
  await sleep(3 * POLL_MS);
  assert.deepEqual(c.notes(big).filter((l) => blocks.includes(l.blockHash)), want);
  assert.deepEqual(c.notes(same).filter((l) => blocks.includes(l.blockHash)), want);
  c.ws.close();
});

test('a caller\'s logs filters are held in its share: past it the subscribe is refused with -32005 and data.reason filter_bytes; freed when unsubscribed; another caller is served', { timeout: 60000 }, async () => {
  // issue 31: a filter's addresses and topics were capped per filter but not
  // charged: one caller's filters took what the worker holds for everyone
  const a = await startFake({ name: 'a', args: ['--block', '1000', '--block-time-ms', '0'] });
  started.push(a);
  const s = await startSluice({ workers: 1, server: { max_buffered_bytes: 4 * 1048576, max_response_bytes: 1048576, max_buffered_share: 0.25 },
    networks: { eth: { chain: 'ethereum', lines: [`ranking: { probe_interval_ms: ${POLL_MS} }`], endpoints: [{ id: 'a', url: a.url }] } } });
  started.push(s);
  const c = openWs(`ws://127.0.0.1:${s.port}/eth`);
  await c.opened;
  // each filter: 1,000 addresses, ~43 KB held; the share is 1 MiB
  const filter = () => ({ address: Array.from({ length: 1000 }, randomAddr) });
  const ids = [];
  let refused;
  for (let i = 1; i <= 40 && !refused; i++) {
    const r = await c.rpc('eth_subscribe', ['logs', filter()], i);
    if (r.error) refused = r; else ids.push(r.result);
  }
  assert.ok(refused, `all 40 filters of 1,000 addresses were taken (${ids.length})`);
  assert.ok(ids.length >= 18 && ids.length <= 25, `${ids.length} filters admitted on a 1 MiB share`);
  assert.equal(refused.error.code, -32005, JSON.stringify(refused.error));
  assert.equal(refused.error.data?.reason, 'filter_bytes');
  assert.equal(refused.error.data?.bound, 'server.max_buffered_share');
  assert.match(refused.error.message, /server\.max_buffered_share/);
  assert.ok((await c.rpc('eth_subscribe', ['newHeads'], 100)).result, 'a subscription without a filter still starts');
  // another caller: its own share, and its HTTP calls served
  const other = openWs(`ws://127.0.0.1:${s.port}/eth`, { localAddress: '127.0.0.2' });
  await other.opened;
  assert.ok((await other.rpc('eth_subscribe', ['logs', filter()], 1)).result);
  assert.equal((await postFresh(s.url('eth'), call('eth_blockNumber'), {}, { localAddress: '127.0.0.2' })).status, 200);
  // unsubscribed: the bytes are freed, a filter fits again
  for (let i = 0; i < 3; i++) assert.equal((await c.rpc('eth_unsubscribe', [ids[i]], 200 + i)).result, true);
  assert.ok((await c.rpc('eth_subscribe', ['logs', filter()], 300)).result);
  c.ws.close(); other.ws.close();
});
