// The last usable endpoint's breaker (issue 31): five concurrent slow
// eth_getLogs (the provider gives up on them) used to open the only usable
// endpoint's breaker, so innocent calls got 503 for the cooldown and the
// attacker could repeat it every cooldown. A request-shaped failure nobody
// could settle (no other endpoint to ask) is no verdict by itself: it counts
// as slow_call and a cheap read of the endpoint confirms; only a failed
// confirm (the endpoint really down) opens the breaker.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startFake, startSluice, post, call, sleep, waitFor, adminGet, adminPost, events } from '../lib/harness.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

// distinct filters: five upstream calls, not one shared by identical calls
const LOGS = (i) => call('eth_getLogs', [{ fromBlock: `0x${(i + 1).toString(16)}`, toBlock: '0x20' }], i);
// attempts give up at 600 ms; five failures in a row open a breaker (the defaults' rule)
const LINES = ['timeouts: { connect_ms: 500, first_byte_ms: 400, attempt_ms: 600, request_ms: 5000 }',
  'ranking: { probe_interval_ms: 0 }', 'hedge: { enabled: false }', 'demote_ms: 0',
  'breaker: { consecutive: 5, cooldown_ms: 60000 }'];

async function gateway(fakes) {
  const s = await startSluice({ workers: 1,
    networks: { eth: { lines: LINES, endpoints: fakes.map((f) => ({ id: f.name, url: f.url })) } } });
  started.push(s);
  return s;
}

const opened = async (s) => (await events(s)).filter((e) => e.kind === 'breaker_opened');
const endpoint = async (s, id) => (await adminGet(s, '/admin/endpoints')).json.find((e) => e.id === id);

// Rounds of five concurrent slow eth_getLogs from the attacker while an
// innocent client calls eth_blockNumber; returns the innocent statuses.
async function attack(s, rounds) {
  const innocent = [];
  let running = true;
  const bystander = (async () => {
    while (running) {
      const r = await post(s.url('eth'), call('eth_blockNumber', [], 'i'));
      innocent.push(r.status === 200 ? 200 : `${r.status} ${r.json?.error?.data?.reason ?? r.json?.error?.data?.outcome ?? r.text.slice(0, 80)}`);
      await sleep(50);
    }
  })();
  for (let round = 0; round < rounds; round++) {
    const rs = await Promise.all(Array.from({ length: 5 }, (_, i) => post(s.url('eth'), LOGS(i))));
    for (const r of rs) assert.ok(r.status >= 500, `a slow eth_getLogs answered ${r.status}: ${r.text.slice(0, 200)}`);
  }
  await sleep(300); // the last confirm probe answered
  running = false;
  await bystander;
  return innocent;
}

test('five slow eth_getLogs at the only endpoint, three times: its breaker stays closed, innocent calls succeed', async () => {
  const a = await startFake({ name: 'a' });
  started.push(a);
  await a.setMode('slow', { delay_ms: 2000, method: 'eth_getLogs' });
  const s = await gateway([a]);
  const innocent = await attack(s, 3);
  assert.deepEqual(await opened(s), [], 'no breaker opened');
  assert.ok(innocent.length >= 5 && innocent.every((x) => x === 200), `innocent statuses ${innocent}`);
  const v = await endpoint(s, 'a');
  assert.equal(v.breaker.state, 'closed');
  // each attempt (two per call: the same endpoint again) counted as slow_call, no verdict; a caller's
  // first scans of unknown size may be refused up front for its share of answer bytes (gw_estimate.h)
  await waitFor(async () => (await endpoint(s, 'a')).outcomes.slow_call >= 10, { timeoutMs: 3000,
    what: 'slow_call outcomes' }).catch(async (e) => { throw new Error(`${e.message}: ${JSON.stringify((await endpoint(s, 'a')).outcomes)}`); });
  assert.equal((await endpoint(s, 'a')).outcomes.timeout, 0, 'none counted as the endpoint\'s timeout');
  assert.ok((await a.stats()).methods.eth_blockNumber > innocent.length, 'cheap reads confirmed the endpoint was up');
  console.log(`figures (last breaker): 15 slow eth_getLogs in 3 rounds, breaker closed, innocent ${innocent.length} calls all 200 ` +
    '(before: opened in the first round, innocent calls 503 for the cooldown)');
});

test('the same with the other endpoints drained', async () => {
  const [a, b, c] = await Promise.all(['a', 'b', 'c'].map((name) => startFake({ name })));
  started.push(a, b, c);
  await a.setMode('slow', { delay_ms: 2000, method: 'eth_getLogs' });
  const s = await gateway([a, b, c]);
  for (const id of ['b', 'c']) assert.equal((await adminPost(s, `/admin/endpoints/eth/${id}/drain`)).status, 200);
  const innocent = await attack(s, 3);
  assert.deepEqual(await opened(s), [], 'no breaker opened');
  assert.ok(innocent.every((x) => x === 200), `innocent statuses ${innocent}`);
  assert.equal((await endpoint(s, 'a')).breaker.state, 'closed');
});

test('the only endpoint really down (its cheap reads fail too): the confirm probes open its breaker', async () => {
  const a = await startFake({ name: 'a' });
  started.push(a);
  await a.setMode('hang');
  const s = await gateway([a]);
  for (let round = 0; round < 5 && (await opened(s)).length === 0; round++) {
    await Promise.all(Array.from({ length: 5 }, (_, i) => post(s.url('eth'), LOGS(i))));
    await sleep(700); // the confirm probe times out
  }
  const ev = await opened(s);
  assert.equal(ev.length, 1, JSON.stringify(ev));
  assert.equal(ev[0].endpoint, 'a');
  const v = await endpoint(s, 'a');
  assert.equal(v.breaker.state, 'open');
  assert.ok(v.outcomes.timeout >= 5, `the failed confirm probes counted: ${JSON.stringify(v.outcomes)}`);
});
