// Heads from an upstream's WebSocket (issue 22, the upstream side): an
// endpoint's ws_url is subscribed to newHeads by one worker per host, and
// each head moves the network's head at once, not at the next probe
// (probe_interval_ms is a minute here). The upstream is a small node server
// in this file: JSON-RPC over HTTP for the probes, and the `ws` package's
// WebSocket server on the same port, pushing a newHeads notification each
// time the test advances its chain. It can drop its sockets, stall (keep
// them open and say nothing), and send what a node never should.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { createHash } from 'node:crypto';
import https from 'node:https';
import { readFileSync, writeFileSync } from 'node:fs';
import { WebSocket, WebSocketServer } from 'ws';
import { startSluice, sleep, waitFor, adminGet, adminPost, events, metricValue, tempDir, workerPids, renderConfig } from '../lib/harness.mjs';
import { certMaker } from '../lib/certs.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const hex = (n) => '0x' + n.toString(16);
const hashOf = (n) => '0x' + n.toString(16).padStart(64, '0');
const SUB = '0x9ce59a13059e417087c02d3236a0b1cc';

// solana: getSlot answers the root (a finalized slot, as getSlot without a
// commitment does) and slotSubscribe pushes { parent, root, slot }.
async function startUpstream({ tls, solana } = {}) {
  const st = { head: 1000, stall: false, upgrades: 0, paths: [], socks: new Set() };
  const ROOT_LAG = 32;
  const block = (n) => ({ number: hex(n), hash: hashOf(n), parentHash: hashOf(n - 1), timestamp: hex(1700000000 + n) });
  const answer = (m) => {
    switch (m.method) {
      case 'eth_chainId': return '0x1';
      case 'eth_blockNumber': return hex(st.head);
      case 'eth_getBlockByNumber': return block(st.head);
      case 'getSlot': return st.head - ROOT_LAG;
      case 'getGenesisHash': return '5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d';
      default: return null;
    }
  };
  const onHttp = (req, res) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      let m;
      try { m = JSON.parse(body); } catch { res.writeHead(400).end(); return; }
      const out = Array.isArray(m) ? m.map((x) => ({ jsonrpc: '2.0', id: x.id, result: answer(x) }))
        : { jsonrpc: '2.0', id: m.id, result: answer(m) };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(out));
    });
  };
  const server = tls ? https.createServer({ cert: readFileSync(tls.cert), key: readFileSync(tls.key) }, onHttp)
    : http.createServer(onHttp);
  const wss = new WebSocketServer({ server });
  wss.on('connection', (ws, req) => {
    st.upgrades++;
    st.paths.push(req.url);
    st.socks.add(ws);
    ws.on('close', () => st.socks.delete(ws));
    ws.on('error', () => {});
    ws.on('message', (d) => {
      const m = JSON.parse(String(d));
      if ((m.method === 'eth_subscribe' && m.params?.[0] === 'newHeads') || m.method === 'slotSubscribe') {
        ws.subscribed = true;
        ws.send(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: solana ? 7 : SUB }));
      } else {
        ws.send(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: answer(m) }));
      }
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const port = server.address().port;
  const subscribed = () => [...st.socks].filter((s) => s.subscribed);
  return {
    st, port,
    url: `${tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    wsUrl: (p = '/', host = '127.0.0.1') => `${tls ? 'wss' : 'ws'}://${host}:${port}${p}`,
    subscribed,
    advance(n = 1) {
      st.head += n;
      if (st.stall) return;
      const note = JSON.stringify(solana
        ? { jsonrpc: '2.0', method: 'slotNotification',
          params: { subscription: 7, result: { parent: st.head - 1, root: st.head - ROOT_LAG, slot: st.head } } }
        : { jsonrpc: '2.0', method: 'eth_subscription', params: { subscription: SUB, result: block(st.head) } });
      for (const s of subscribed()) s.send(note);
    },
    sendRaw(text) { for (const s of subscribed()) s.send(text); },
    kill() { for (const s of st.socks) s.terminate(); },
    stop: () => { for (const s of st.socks) s.terminate(); return new Promise((r) => server.close(r)); },
  };
}

const SLOW_PROBES = 'ranking: { probe_interval_ms: 60000 }';

async function sluiceOn(up, { wsPath = '/', wsHost, lines = [], workers = 2, tlsCa, chain } = {}) {
  const ep = { id: 'a', url: up.url, ws_url: `"${up.wsUrl(wsPath, wsHost)}"` };
  if (tlsCa) ep.tls_ca_file = `"${tlsCa}"`;
  const s = await startSluice({ workers, networks: { eth: { chain, lines: [SLOW_PROBES, ...lines], endpoints: [ep] } } });
  started.push(s);
  return s;
}

const endpointA = async (s) => (await adminGet(s, '/admin/endpoints')).json.find((e) => e.id === 'a');
const netHead = async (s) => (await adminGet(s, '/admin/networks')).json.find((n) => n.network === 'eth').head;
const wsEvents = async (s, kind) => (await events(s)).filter((e) => e.kind === kind);

async function connected(s, up) {
  await waitFor(async () => (await endpointA(s)).ws?.state === 'connected' && up.subscribed().length === 1,
    { timeoutMs: 8000, what: 'the ws_url stream subscribed' });
}

// Advances the upstream and returns how long the network's head took to show it.
async function headLatency(s, up, lag = 0) {
  const t0 = performance.now();
  up.advance();
  await waitFor(async () => (await netHead(s)) === up.st.head - lag, { timeoutMs: 2000, intervalMs: 5,
    what: `head ${up.st.head - lag} in /admin/networks` });
  return performance.now() - t0;
}

test('the network head follows the upstream WebSocket within ~200 ms, probes a minute apart', async () => {
  const up = await startUpstream();
  started.push(up);
  const s = await sluiceOn(up);
  await connected(s, up);
  // the worker holding the stream is one of this sluice's workers
  assert.ok((await workerPids(s.child.pid)).includes((await endpointA(s)).ws.holder_pid));
  await waitFor(async () => (await netHead(s)) === up.st.head, { what: 'the first probe head' });
  const lat = [];
  for (let i = 0; i < 10; i++) {
    lat.push(await headLatency(s, up));
    await sleep(20);
  }
  lat.sort((x, y) => x - y);
  console.log('head latency ms (upstream push -> /admin/networks, polled every 5 ms): median',
    lat[5].toFixed(1), 'max', lat[9].toFixed(1));
  assert.ok(lat[9] < 200, `every head within 200 ms (max ${lat[9]})`);
  const a = await endpointA(s);
  assert.equal(a.ws.state, 'connected');
  assert.ok(a.ws.heads_received >= 10, JSON.stringify(a.ws));
  assert.ok(a.ws.last_head_ms_ago !== null && a.ws.last_head_ms_ago < 5000, JSON.stringify(a.ws));
  assert.equal(up.st.upgrades, 1, 'one stream for the host, whatever the number of workers');
  assert.equal(await metricValue(s, 'sluice_upstream_ws_state{network="eth",endpoint="a"}'), 2);
  assert.ok(await metricValue(s, 'sluice_upstream_ws_heads_total{network="eth",endpoint="a"}') >= 10);
  const ev = await wsEvents(s, 'upstream_ws_connected');
  assert.equal(ev.length, 1, JSON.stringify(ev));
  assert.match(ev[0].reason, /subscribed to newHeads/);
});

test('a wss:// upstream by host name, with a private CA, feeds the head too', async () => {
  const dir = tempDir('sluice-wss-');
  const certs = certMaker(dir);
  const ca = certs.ca('ca');
  const up = await startUpstream({ tls: certs.cert('up', 'DNS:localhost,IP:127.0.0.1') });
  started.push(up);
  const s = await sluiceOn(up, { tlsCa: ca, wsHost: 'localhost' }); // looked up, its name verified
  await connected(s, up);
  await waitFor(async () => (await netHead(s)) === up.st.head, { what: 'the first probe head' });
  const ms = await headLatency(s, up);
  console.log('wss head latency ms', ms.toFixed(1));
  assert.ok(ms < 200, `head within 200 ms over wss (${ms})`);
  // without the CA the certificate is refused: the stream is down, and says why
  const t = await sluiceOn(up, { wsHost: 'localhost' });
  await waitFor(async () => (await wsEvents(t, 'upstream_ws_lost')).length === 1, { what: 'the refusal' });
  assert.match((await wsEvents(t, 'upstream_ws_lost'))[0].reason, /the TLS handshake failed/);
  assert.equal((await endpointA(t)).ws.state, 'down');
});

test('Solana: slotSubscribe moves the network head (the root, as getSlot reads it)', async () => {
  const up = await startUpstream({ solana: true });
  started.push(up);
  const s = await sluiceOn(up, { chain: 'solana' });
  await connected(s, up);
  await waitFor(async () => (await netHead(s)) === up.st.head - 32, { what: 'the first probe slot' });
  const lat = [];
  for (let i = 0; i < 5; i++) lat.push(await headLatency(s, up, 32));
  console.log('solana slot latency ms, max', Math.max(...lat).toFixed(1));
  assert.ok(Math.max(...lat) < 200);
  assert.ok((await endpointA(s)).ws.heads_received >= 5);
});

test('Solana: a slot from the ws_url stream wakes a client slotSubscribe at once (the poll is a minute away)', async () => {
  const up = await startUpstream({ solana: true });
  started.push(up);
  const s = await sluiceOn(up, { chain: 'solana', workers: 1 });
  await connected(s, up);
  const client = new WebSocket(`ws://127.0.0.1:${s.port}/eth`);
  const slots = [];
  client.on('message', (d) => {
    const m = JSON.parse(String(d));
    if (m.method === 'slotNotification') slots.push(m.params.result.slot);
  });
  await new Promise((r) => client.on('open', r));
  client.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'slotSubscribe' }));
  await waitFor(() => slots.includes(up.st.head - 32), { what: 'the first slot (the subscription\'s own poll)' });
  const lat = [];
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    up.advance();
    await waitFor(() => slots.includes(up.st.head - 32), { timeoutMs: 3000, intervalMs: 2, what: `slot ${up.st.head - 32}` });
    lat.push(performance.now() - t0);
  }
  client.close();
  console.log(`# solana slot pushed upstream to slotNotification: ${lat.map(Math.round).join(', ')} ms (poll interval 60 s)`);
  assert.deepEqual(slots, [...slots].sort((x, y) => x - y), 'never backwards');
});

test('a killed upstream socket: upstream_ws_lost, a reconnect, upstream_ws_connected, heads again', async () => {
  const up = await startUpstream();
  started.push(up);
  const s = await sluiceOn(up);
  await connected(s, up);
  up.kill();
  await waitFor(async () => (await wsEvents(s, 'upstream_ws_lost')).length === 1, { what: 'upstream_ws_lost' });
  const lost = (await wsEvents(s, 'upstream_ws_lost'))[0];
  console.log('lost:', lost.reason);
  assert.match(lost.reason, /the upstream closed the socket/);
  await waitFor(async () => (await wsEvents(s, 'upstream_ws_connected')).length === 2, { what: 'connected again' });
  assert.equal(up.st.upgrades, 2);
  await connected(s, up);
  assert.ok(await headLatency(s, up) < 200);
});

test('the workers killed: the stream is taken over by a restarted worker, the dead holder\'s claim void', async () => {
  const up = await startUpstream();
  started.push(up);
  const s = await sluiceOn(up);
  await connected(s, up);
  const t0 = performance.now();
  for (const pid of await workerPids(s.child.pid)) process.kill(pid, 'SIGKILL');
  // a restarted worker finds the holder's pid gone and does not wait for its claim (3 s) to run out
  await waitFor(() => up.st.upgrades === 2 && up.subscribed().length === 1, { timeoutMs: 8000, what: 'taken over' });
  const ms = performance.now() - t0;
  console.log('stream back after the workers were killed, ms', ms.toFixed(0));
  assert.ok(ms < 2500, `sooner than the claim's 3 s (${ms})`);
  await connected(s, up);
  assert.ok(await headLatency(s, up) < 200);
});

test('a stalled stream (open, silent) is closed after ws_stall_ms and opened again', async () => {
  const up = await startUpstream();
  started.push(up);
  const s = await sluiceOn(up, { lines: ['ws_stall_ms: 600'] });
  await connected(s, up);
  up.advance(); // a head: the stream is fine
  await waitFor(async () => (await netHead(s)) === up.st.head, { what: 'a head' });
  up.st.stall = true;
  await waitFor(async () => (await wsEvents(s, 'upstream_ws_lost')).length >= 1, { what: 'the stall seen' });
  const lost = (await wsEvents(s, 'upstream_ws_lost'))[0];
  console.log('stall:', lost.reason);
  assert.match(lost.reason, /no head for 600 ms/);
  await waitFor(() => up.st.upgrades >= 2, { what: 'a new stream' });
  up.st.stall = false;
  await connected(s, up);
  assert.ok(await headLatency(s, up) < 200, 'heads flow again');
});

test('a ws_url with a key in its path: the key is used, and shown nowhere', async () => {
  const key = 'Zk3f9Qb27xLmN4pR8sT1vW6y';
  const up = await startUpstream();
  started.push(up);
  const s = await sluiceOn(up, { wsPath: `/v2/${key}` });
  await connected(s, up);
  assert.equal(up.st.paths[0], `/v2/${key}`, 'the upstream was asked with its key');
  up.kill(); // a loss: an event with a reason, a log line
  await waitFor(async () => (await wsEvents(s, 'upstream_ws_connected')).length === 2, { what: 'reconnected' });
  const a = await endpointA(s);
  assert.match(a.ws.url, /^ws:\/\/127\.0\.0\.1:\d+\/v2\/\*\*\*$/);
  const texts = [(await adminGet(s, '/admin/endpoints')).text, JSON.stringify(await events(s)),
    (await adminGet(s, '/metrics')).text, (await adminGet(s, '/admin/networks')).text, s.logs()];
  for (const t of texts) assert.ok(!t.includes(key), 'the key is not shown');
});

test('a malformed message does not crash sluice; the stream is reopened', async () => {
  const up = await startUpstream();
  started.push(up);
  const s = await sluiceOn(up);
  await connected(s, up);
  up.sendRaw('{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":');
  await waitFor(async () => (await wsEvents(s, 'upstream_ws_lost')).length === 1, { what: 'the loss' });
  assert.match((await wsEvents(s, 'upstream_ws_lost'))[0].reason, /a malformed message/);
  await waitFor(() => up.st.upgrades === 2 && up.subscribed().length === 1, { what: 'reopened' });
  assert.ok(await headLatency(s, up) < 200, 'heads flow again');
});

test('an oversized message does not crash sluice; the stream is reopened', async () => {
  const up = await startUpstream();
  started.push(up);
  const s = await sluiceOn(up);
  await connected(s, up);
  up.sendRaw(JSON.stringify({ jsonrpc: '2.0', method: 'eth_subscription',
    params: { subscription: SUB, result: { number: '0x1', pad: 'x'.repeat(400 * 1024) } } }));
  await waitFor(async () => (await wsEvents(s, 'upstream_ws_lost')).length === 1, { what: 'the loss' });
  assert.match((await wsEvents(s, 'upstream_ws_lost'))[0].reason, /a message over the size limit/);
  await waitFor(() => up.st.upgrades === 2 && up.subscribed().length === 1, { what: 'reopened' });
  assert.ok(await headLatency(s, up) < 200, 'heads flow again');
});

// A WebSocket "server" that answers the Upgrade as told: a wrong
// Sec-WebSocket-Accept, or no 101 at all.
async function startBadUpgrade(answer) {
  const st = { tries: 0 };
  const server = net.createServer((c) => {
    let head = '';
    c.on('error', () => {});
    c.on('data', (d) => {
      head += d;
      if (!head.includes('\r\n\r\n')) return;
      st.tries++;
      const key = head.match(/sec-websocket-key: *(\S+)/i)?.[1] ?? '';
      c.write(answer(key));
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { st, port: server.address().port, stop: () => new Promise((r) => server.close(r)) };
}

const acceptOf = (key) => createHash('sha1').update(key + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');

test('an Upgrade answered with a wrong Sec-WebSocket-Accept, or without 101, is refused and retried', async () => {
  const up = await startUpstream();
  started.push(up);
  const cases = [
    [(key) => `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      `Sec-WebSocket-Accept: ${acceptOf(key + 'x')}\r\n\r\n`, /a wrong Sec-WebSocket-Accept/],
    [() => 'HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n', /the Upgrade was refused \(not HTTP 101\)/],
  ];
  for (const [answer, why] of cases) {
    const bad = await startBadUpgrade(answer);
    started.push(bad);
    const s = await startSluice({ workers: 1, networks: { eth: { lines: [SLOW_PROBES],
      endpoints: [{ id: 'a', url: up.url, ws_url: `"ws://127.0.0.1:${bad.port}/"` }] } } });
    started.push(s);
    await waitFor(async () => (await wsEvents(s, 'upstream_ws_lost')).length === 1, { what: 'the refusal' });
    assert.match((await wsEvents(s, 'upstream_ws_lost'))[0].reason, why);
    assert.equal((await endpointA(s)).ws.state, 'down');
    await waitFor(() => bad.st.tries >= 3, { what: 'tried again, with backoff' });
    assert.equal((await wsEvents(s, 'upstream_ws_connected')).length, 0);
  }
});

test('a ws_url added, then removed, by a reload', async () => {
  const up = await startUpstream();
  started.push(up);
  const cfg = (ws) => ({ workers: 2, networks: { eth: { lines: [SLOW_PROBES],
    endpoints: [{ id: 'a', url: up.url, ...(ws ? { ws_url: `"${up.wsUrl()}"` } : {}) }] } } });
  const s = await startSluice(cfg(false));
  started.push(s);
  assert.equal((await endpointA(s)).ws, null);
  writeFileSync(s.file, renderConfig({ statePath: s.statePath, ...cfg(true) }));
  const r = await adminPost(s, '/admin/reload');
  assert.equal(r.status, 200, JSON.stringify(r.json));
  await connected(s, up);
  assert.ok(await headLatency(s, up) < 200);
  writeFileSync(s.file, renderConfig({ statePath: s.statePath, ...cfg(false) }));
  assert.equal((await adminPost(s, '/admin/reload')).status, 200);
  await waitFor(async () => (await endpointA(s)).ws === null && up.st.socks.size === 0, { what: 'the stream closed' });
});

test('--check says what is wrong with a ws_url', async () => {
  const { spawnSync } = await import('node:child_process');
  const { SLUICE_BIN } = await import('../lib/harness.mjs');
  const { writeFileSync } = await import('node:fs');
  const dir = tempDir('sluice-wscheck-');
  const file = `${dir}/bad.yaml`;
  writeFileSync(file, 'networks:\n  eth:\n    chain: ethereum\n    endpoints:\n      - id: a\n' +
    '        url: "http://127.0.0.1:1"\n        ws_url: "http://127.0.0.1:1/v2/Zk3f9Qb27xLmN4pR8sT1vW6y"\n');
  const r = spawnSync(SLUICE_BIN, ['--check', '-c', file], { encoding: 'utf8' });
  assert.notEqual(r.status, 0);
  const out = r.stdout + r.stderr;
  assert.match(out, /bad\.yaml:7: .*invalid ws_url: scheme must be ws or wss/);
  assert.ok(!out.includes('Zk3f9Qb27xLmN4pR8sT1vW6y'));
});
