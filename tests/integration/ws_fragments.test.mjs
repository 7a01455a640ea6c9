// A WebSocket message is bounded in frames and in time, not only in payload
// bytes (server.max_body_bytes): wslay keeps a heap chunk per frame, so a
// message left unfinished in 1-byte continuation frames cost ~94 bytes of
// worker memory per byte sent (a reviewer's 8 sockets took a worker from
// 7 MB to 757 MB), and pings kept such a socket open past the idle timeout.
// Now: more than 1,024 frames in one message closes the socket with 1009; a
// message unfinished 10 s after its first frame closes it with 1008,
// whatever pings come. Real processes: the gateway, a fake provider, ws
// clients; another client is served throughout.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { WebSocket } from 'ws';
import { startFake, startSluice, post, postFresh, call, sleep, workerPids } from '../lib/harness.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const rssMB = (pid) => Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)[1]) / 1024;

async function gateway() {
  const a = await startFake({ name: 'a' });
  started.push(a);
  const s = await startSluice({ workers: 1, networks: { eth: { chain: 'ethereum', endpoints: [{ id: 'a', url: a.url }] } } });
  started.push(s);
  const [worker] = await workerPids(s.child.pid);
  assert.ok(worker, 'the worker pid');
  return { s, worker };
}

async function openWs(url, opts) {
  const ws = new WebSocket(url, opts);
  const closed = new Promise((r) => ws.on('close', (code, reason) => r({ code, reason: reason.toString(), at: performance.now() })));
  ws.on('error', () => {}); // a write after the server's close
  await new Promise((resolve, reject) => { ws.on('open', resolve); ws.on('error', reject); });
  return { ws, closed };
}

const within = (p, ms, what) => Promise.race([p, sleep(ms).then(() => { throw new Error(`${what}: nothing within ${ms} ms`); })]);

// another client's plain HTTP calls while the sockets misbehave: every one answered, none slow
function bystander(s) {
  const times = [];
  let stop = false;
  const done = (async () => {
    while (!stop) {
      const t0 = performance.now();
      const r = await post(s.url('eth'), call('eth_blockNumber'));
      assert.equal(r.status, 200, r.text);
      times.push(performance.now() - t0);
      await sleep(50);
    }
  })();
  return { times, end: async () => { stop = true; await done; } };
}

test('a message in 1,024 frames is served; past 1,024 frames the socket is closed with 1009 and the worker\'s memory stays bounded', { timeout: 120000 }, async () => {
  const { s, worker } = await gateway();
  // at the bound: a call in exactly 1,024 frames is answered
  const ok = await openWs(`ws://127.0.0.1:${s.port}/eth`);
  const text = JSON.stringify(call('eth_chainId', [], 7)) + ' '.repeat(1100);
  const answered = new Promise((r) => ok.ws.once('message', (d) => r(JSON.parse(d.toString()))));
  for (let i = 0; i < 1023; i++) ok.ws.send(text[i], { fin: false });
  ok.ws.send(text.slice(1023), { fin: true });
  const answer = await within(answered, 10000, 'the answer to a 1,024-frame call');
  assert.equal(answer.id, 7);
  assert.ok(answer.result, JSON.stringify(answer));
  ok.ws.close();

  const by = bystander(s);
  try {
    await flood(s, worker, by);
  } finally {
    await by.end();
  }
  // the worker still serves WebSocket calls
  const again = await openWs(`ws://127.0.0.1:${s.port}/eth`);
  const got = new Promise((r) => again.ws.once('message', (d) => r(JSON.parse(d.toString()))));
  again.ws.send(JSON.stringify(call('eth_chainId', [], 9)));
  assert.equal((await within(got, 10000, 'a call after')).id, 9);
  again.ws.close();
});

async function flood(s, worker, by) {
  await sleep(300);
  const before = rssMB(worker);
  // 8 sockets, each a message of 100,000 1-byte frames never finished
  // (before: ~75 MB of worker memory; the payload is under max_body_bytes)
  const socks = await Promise.all(Array.from({ length: 8 }, () => openWs(`ws://127.0.0.1:${s.port}/eth`)));
  for (const c of socks) {
    for (let i = 0; i < 100000 && c.ws.readyState === WebSocket.OPEN; i++) {
      c.ws.send('x', { fin: false });
      if (i % 5000 === 4999) await sleep(1); // let the close come in
    }
  }
  await sleep(1000); // what was sent, read
  const peak = rssMB(worker);
  console.log(`worker RSS ${before.toFixed(1)} MB -> ${peak.toFixed(1)} MB; the other client's slowest call ${Math.max(...by.times).toFixed(0)} ms`);
  const closes = await within(Promise.all(socks.map((c) => c.closed)), 20000, 'the closes');
  for (const c of closes) {
    assert.equal(c.code, 1009, JSON.stringify(c));
    assert.match(c.reason, /more than 1024 frames/);
  }
  assert.ok(peak - before < 16, `worker RSS ${before.toFixed(1)} MB -> ${peak.toFixed(1)} MB`);
  assert.ok(by.times.length >= 3, `the bystander made ${by.times.length} calls`);
  const slowest = Math.max(...by.times);
  assert.ok(slowest < 2000, `the other client's slowest call: ${slowest.toFixed(0)} ms`);
}

test('a message left unfinished is closed with 1008 ten seconds after its first frame, though pings keep coming', { timeout: 120000 }, async () => {
  const { s } = await gateway();
  const by = bystander(s);
  const c = await openWs(`ws://127.0.0.1:${s.port}/eth`);
  const t0 = performance.now();
  c.ws.send('{"jsonrpc":"2.0",', { fin: false });
  // frames of the message and pings, every 500 ms: the socket is never idle
  const pinger = setInterval(() => {
    if (c.ws.readyState !== WebSocket.OPEN) return;
    c.ws.ping();
    c.ws.send(' ', { fin: false });
  }, 500);
  try {
    const closed = await within(c.closed, 20000, 'the close of the unfinished message');
    const after = (closed.at - t0) / 1000;
    assert.equal(closed.code, 1008, JSON.stringify(closed));
    assert.match(closed.reason, /left unfinished for 10 s/);
    assert.ok(after >= 9.5 && after < 15, `closed after ${after.toFixed(1)} s`);
  } finally {
    clearInterval(pinger);
    await by.end();
  }
  const slowest = Math.max(...by.times);
  assert.ok(slowest < 2000, `the other client's slowest call: ${slowest.toFixed(0)} ms`);
});

test('the bytes of a message being received are in its caller\'s share: past it the socket is closed with 1009; another caller is served', { timeout: 60000 }, async () => {
  // issue 31: partial-message bytes were bounded (frames, age, max_body_bytes)
  // but held outside max_buffered_bytes and the caller's share: a caller's
  // sockets could each hold max_body_bytes unfinished
  const a = await startFake({ name: 'a' });
  started.push(a);
  const s = await startSluice({ workers: 1, server: { max_buffered_bytes: 16 * 1048576, max_buffered_share: 0.25, max_body_bytes: 8 * 1048576, max_response_bytes: 8 * 1048576 },
    networks: { eth: { chain: 'ethereum', endpoints: [{ id: 'a', url: a.url }] } } });
  started.push(s);
  const KB256 = ' '.repeat(256 * 1024);
  const padded = (id, bytes) => { const t = JSON.stringify(call('eth_chainId', [], id)); return t + ' '.repeat(bytes - t.length); };
  // one caller: a first socket holds 2 MiB of an unfinished message (within its 4 MiB share)
  const one = await openWs(`ws://127.0.0.1:${s.port}/eth`);
  const first = padded(1, 2 * 1048576 + 1000);
  for (let i = 0; i < 8; i++) one.ws.send(first.slice(i * 262144, (i + 1) * 262144), { fin: false });
  await sleep(300);
  // its second socket's message passes the share: closed with 1009 and a reason
  const two = await openWs(`ws://127.0.0.1:${s.port}/eth`);
  for (let i = 0; i < 12; i++) two.ws.send(KB256, { fin: false });
  const closed = await within(two.closed, 5000, 'the close of the socket past the share');
  assert.equal(closed.code, 1009);
  assert.match(closed.reason, /max_buffered_share/);
  // another caller (another address) is served meanwhile, a large message too
  assert.equal((await postFresh(s.url('eth'), call('eth_chainId'), {}, { localAddress: '127.0.0.2' })).status, 200);
  const other = await openWs(`ws://127.0.0.1:${s.port}/eth`, { localAddress: '127.0.0.2' });
  const otherGot = new Promise((r) => other.ws.once('message', (d) => r(JSON.parse(d.toString()))));
  other.ws.send(padded(5, 3 * 1048576));
  assert.equal((await within(otherGot, 10000, 'the other caller\'s answer')).id, 5);
  // the first socket, within the share, finishes its message and is answered
  const got = new Promise((r) => one.ws.once('message', (d) => r(JSON.parse(d.toString()))));
  one.ws.send(first.slice(8 * 262144), { fin: true });
  const answer = await within(got, 10000, 'the first socket\'s answer');
  assert.equal(answer.id, 1);
  assert.ok(answer.result, JSON.stringify(answer));
  one.ws.close(); other.ws.close();
});
