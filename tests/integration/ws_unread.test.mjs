// Unread notifications (issue 31): a WebSocket's queue is charged to the
// worker's answer bytes (server.max_buffered_bytes) and to its caller's share
// (max_buffered_share), with its HTTP answers; past the share the caller's
// largest queue is closed first (1008, the slow-reader close). Before, each
// socket's 8 MiB queue was outside both: one caller's 64 sockets x 64
// subscriptions of a busy filter took a worker to 617 MB and stalled another
// client 4.1 s. Real processes: sluice, a fake provider with many logs per
// block, sockets that never read (paused), another client over HTTP.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { startFake, startSluice, call, sleep, waitFor, metricValue, workerPids, postFresh } from '../lib/harness.mjs';
import { openWs } from '../lib/wsclient.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

test('one caller\'s unread sockets are held to its share; another client is served meanwhile', async () => {
  const a = await startFake({ name: 'a', args: ['--block', '1000', '--block-time-ms', '0', '--logs-per-block', '200'] });
  started.push(a);
  const chain = async (body) => (await fetch(`${a.url}/_control/chain`, { method: 'POST', body: JSON.stringify(body) })).json();
  const s = await startSluice({ workers: 1, server: { max_buffered_bytes: 64 * 1048576, max_response_bytes: 16 * 1048576 }, networks: { eth: {
    lines: ['ranking: { probe_interval_ms: 100 }'], endpoints: [{ id: 'a', url: a.url }] } } });
  started.push(s);
  const [pid] = await workerPids(s.child.pid);
  const sanitized = readFileSync(`/proc/${pid}/maps`, 'utf8').includes('libasan'); // its quarantine holds freed memory
  const rss = () => Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)[1]) * 1024;
  // one caller (127.0.0.1): 32 sockets x 16 logs subscriptions, none read
  const socks = [];
  for (let i = 0; i < 32; i++) {
    const c = openWs(`ws://127.0.0.1:${s.port}/eth`);
    await c.opened;
    for (let k = 0; k < 16; k++) assert.ok((await c.rpc('eth_subscribe', ['logs', {}], k + 1)).result);
    c.ws._socket.pause();
    socks.push(c);
  }
  const before = rss();
  let peak = before, worst = 0;
  const deadline = Date.now() + 6000;
  while (Date.now() < deadline) {
    await chain({ advance: 1 });
    peak = Math.max(peak, rss());
    const t0 = performance.now(); // another address is another caller
    const r = await postFresh(`http://127.0.0.1:${s.port}/eth`, call('eth_chainId'), {}, { localAddress: '127.0.0.2' });
    worst = Math.max(worst, performance.now() - t0);
    assert.equal(r.json.result, '0x1');
    await sleep(150);
  }
  const closed = await metricValue(s, 'sluice_websocket_closed_total{reason="slow_reader"}');
  console.log(`# worker RSS ${(before / 1048576).toFixed(0)} MB -> peak ${(peak / 1048576).toFixed(0)} MB; ` +
    `another client's slowest call ${worst.toFixed(0)} ms; ${closed} sockets closed as slow readers`);
  // the share is 16 MiB (a quarter of 64): queues, their copies in flight and h2o's buffers stay well under
  // what 32 sockets x 8 MiB (ws_max_queued_bytes each) took before
  if (!sanitized) // before: 8 -> 307 MB here
    assert.ok(peak - before < 120 * 1048576, `worker RSS grew ${((peak - before) / 1048576).toFixed(0)} MB`);
  assert.ok(closed >= 1, 'the largest queues closed');
  assert.ok(worst < (sanitized ? 3000 : 1000), `another client waited ${worst.toFixed(0)} ms`);
  for (const c of socks) c.ws.terminate();
});
