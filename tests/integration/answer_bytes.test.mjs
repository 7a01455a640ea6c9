// Upstream answers reach the client intact at every size, however they were
// held: a Content-Length answer up to 4 MiB stays in the socket's read
// buffer and is taken whole (pool_conn.c: in one read, or after the buffer
// grew over many), a larger one is moved into a buffer of its own, and
// identical reads in flight share one answer that each client gets with its
// own id spliced in (pool_coalesce.c, gw_reply.c). Each log of the fake's
// eth_getLogs answer carries its index three ways, so a byte out of place,
// a lost or repeated read, or a splice at the wrong offset fails the checks.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startFake, startSluice, post, call } from '../lib/harness.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

// about 470 bytes per log (tests/fakeprovider/fp_eth.c)
const SIZES = { one_read: 45, grown: 100, many_reads: 5000, own_buffer: 10000 };

function checkLogs(text, n, id, what) {
  const a = JSON.parse(text);
  assert.equal(a.jsonrpc, '2.0', what);
  assert.equal(a.id, id, `${what}: the client's own id`);
  assert.equal(a.result.length, n, `${what}: ${a.result.length} logs of ${n}`);
  const block = a.result[0].blockNumber;
  a.result.forEach((log, i) => {
    const hex = `0x${i.toString(16)}`;
    assert.equal(log.logIndex, hex, `${what}: log ${i}`);
    assert.equal(log.transactionIndex, hex, `${what}: log ${i}`);
    assert.equal(log.blockNumber, block, `${what}: log ${i}`);
    assert.equal(log.data, log.transactionHash, `${what}: log ${i}`);
    // the hash's last two bytes hold i (xor the block hash's), so no two logs share one
    assert.equal(log.data.length, 66, `${what}: log ${i}`);
  });
  assert.equal(new Set(a.result.map((l) => l.transactionHash)).size, n, `${what}: every log once`);
}

test('answers of 20 KB, 47 KB, 2.3 MB and 4.7 MB arrive byte for byte, alone and shared by ten identical reads', async () => {
  const networks = {}, fakes = {};
  for (const [name, logs] of Object.entries(SIZES)) {
    const f = await startFake({ name, args: ['--logs', String(logs)] });
    started.push(f);
    fakes[name] = f;
    networks[name] = { lines: ['ranking: { probe_interval_ms: 0 }', 'hedge: { enabled: false }'],
      endpoints: [{ id: name, url: f.url }] };
  }
  const s = await startSluice({ workers: 1, server: { max_response_bytes: 16 * 1024 * 1024 }, networks });
  started.push(s);
  // to latest: the fake answers its head block's logs whatever the range, and a
  // numbered range its head has moved past would make them logs outside it
  // (a failed attempt, pool_chain_logs_off_range)
  const params = [{ fromBlock: '0xf4200', toBlock: 'latest' }];
  for (const [name, logs] of Object.entries(SIZES)) {
    const r = await post(s.url(name), call('eth_getLogs', params, 7));
    assert.equal(r.status, 200, r.text.slice(0, 200));
    // written by sl_http_send_parts, not h2o's sprintf: once (fetch joins repeats with ", ")
    assert.equal(r.headers.get('server'), 'sluice', name);
    checkLogs(r.text, logs, 7, `${name} alone`);
    // ids of other lengths than the leader's: the splice moves the rest of the answer;
    // a slow provider, so that the ten are in flight together
    await fakes[name].setMode('slow', { delay_ms: 300, method: 'eth_getLogs', logs });
    const ids = Array.from({ length: 10 }, (_, i) => (i % 2 ? 1000000 + i : i));
    const rs = await Promise.all(ids.map((id) => post(s.url(name), call('eth_getLogs', params, id))));
    rs.forEach((x, i) => {
      assert.equal(x.status, 200, x.text.slice(0, 200));
      checkLogs(x.text, logs, ids[i], `${name}, read ${i} of ten at once`);
    });
    const shared = rs.filter((x) => x.headers.get('x-sluice-coalesced') === '1').length;
    assert.ok(shared >= 8, `${name}: ${shared} of the ten identical reads answered from another's upstream answer`);
  }
});
