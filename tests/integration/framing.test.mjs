// Request framing and bodies, in real bytes on raw sockets: a request whose
// length two headers disagree on (Content-Length with Transfer-Encoding, or
// two different Content-Length values) is answered 400 and the connection
// closed, so bytes hidden in its body are never read as a request
// (smuggling behind a front proxy, RFC 9112 §6.3); identical Content-Length
// lines are read as one. A body over server.max_body_bytes is answered 413
// in a form the client can read even when it writes the whole body before
// reading: sluice drains what the client still sends (lingering close).
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startFake, startSluice, adminGet, waitFor } from '../lib/harness.mjs';

const started = [];
let fake, sluice;
before(async () => {
  fake = await startFake({ name: 'a' });
  started.push(fake);
  // the default max_body_bytes (1 MiB): the 1.2 MB call is over it
  sluice = await startSluice({
    cache: false, // each request is told apart by the upstream calls it makes: a cache hit makes none
    workers: 1,
    networks: { eth: { lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: [{ id: 'a', url: fake.url }] } },
  });
  started.push(sluice);
});
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const body = (method, id, params = []) => JSON.stringify({ jsonrpc: '2.0', id, method, params });
const CALL = body('eth_blockNumber', 1);
const HIDDEN = body('eth_chainId', 7);
const head = (lines) => `POST /eth HTTP/1.1\r\nHost: sluice\r\nContent-Type: application/json\r\n${lines.join('\r\n')}\r\n\r\n`;
const HIDDEN_REQUEST = head([`Content-Length: ${HIDDEN.length}`]) + HIDDEN;
const GET_HEALTH = 'GET /healthz HTTP/1.1\r\nHost: sluice\r\n\r\n';

// Writes bytes on a fresh connection and collects what comes back until the
// server closes (or timeoutMs). With readAfterWrite the client reads nothing
// until the kernel has taken all its bytes, as a simple blocking client does.
function exchange(bytes, { readAfterWrite = false, timeoutMs = 4000 } = {}) {
  return new Promise((resolve) => {
    const sock = net.connect(sluice.port, '127.0.0.1');
    const chunks = [];
    const t0 = Date.now();
    let ended = false, error, wrote, closedMs;
    const timer = setTimeout(() => sock.destroy(), timeoutMs);
    if (readAfterWrite) sock.pause();
    sock.on('data', (d) => chunks.push(d));
    sock.on('end', () => { ended = true; closedMs = Date.now() - t0; });
    sock.on('error', (e) => { error = e.code; });
    sock.on('close', () => {
      clearTimeout(timer);
      resolve({ data: Buffer.concat(chunks), ended, error, wrote, closedMs });
    });
    sock.write(bytes, (err) => {
      wrote = !err;
      if (readAfterWrite) sock.resume();
    });
  });
}

// The HTTP/1.1 answers in buf, in order (each with a Content-Length).
function answers(buf) {
  const out = [];
  let rest = buf;
  for (;;) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) return out;
    const lines = rest.subarray(0, end).toString('latin1').split('\r\n');
    const headers = new Map(lines.slice(1).map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
    const len = Number(headers.get('content-length') || 0);
    if (rest.length < end + 4 + len) return out;
    const text = rest.subarray(end + 4, end + 4 + len).toString('utf8');
    let json;
    try { json = JSON.parse(text); } catch { json = undefined; }
    out.push({ status: Number(lines[0].split(' ')[1]), headers, text, json });
    rest = rest.subarray(end + 4 + len);
  }
}

const upstreamCalls = async () => (await fake.stats()).requests;

// One 400 with a JSON-RPC error naming the problem, the connection closed,
// and nothing sent upstream (neither the call nor the hidden one).
async function refused(bytes, what) {
  const before = await upstreamCalls();
  const r = await exchange(bytes);
  const got = answers(r.data);
  assert.equal(got.length, 1, `${what}: one answer, not the hidden request's too: ${r.data.toString('latin1')}`);
  assert.equal(got[0].status, 400, what);
  assert.equal(got[0].headers.get('connection'), 'close', what);
  assert.equal(got[0].json?.error?.code, -32600, `${what}: ${got[0].text}`);
  assert.ok(r.ended, `${what}: the server closed the connection (${r.error ?? 'no end'})`);
  assert.equal(await upstreamCalls(), before, `${what}: nothing reached the provider`);
  return got[0].json.error.message;
}

test('Content-Length with Transfer-Encoding: 400 and close, the request hidden in the body is not answered', async () => {
  const chunked = `${CALL.length.toString(16)}\r\n${CALL}\r\n0\r\n\r\n`;
  for (const smuggled of [HIDDEN_REQUEST, GET_HEALTH]) {
    const payload = chunked + smuggled;
    const te = 'Transfer-Encoding: chunked', cl = `Content-Length: ${payload.length}`;
    for (const order of [[cl, te], [te, cl]]) {
      const msg = await refused(head(order) + payload, order.join(' + '));
      assert.match(msg, /Content-Length.*Transfer-Encoding|Transfer-Encoding.*Content-Length/, msg);
    }
  }
});

test('a smuggling request second on a kept-alive connection: its head is the one checked', async () => {
  const chunked = `${CALL.length.toString(16)}\r\n${CALL}\r\n0\r\n\r\n` + HIDDEN_REQUEST;
  const first = head([`Content-Length: ${HIDDEN.length}`]) + HIDDEN;
  const r = await exchange(first + head([`Content-Length: ${chunked.length}`, 'Transfer-Encoding: chunked']) + chunked);
  const got = answers(r.data);
  assert.deepEqual(got.map((a) => a.status), [200, 400], r.data.toString('latin1'));
  assert.equal(got[0].json.id, 7);
  assert.equal(got[1].json.error.code, -32600);
  assert.ok(r.ended);
});

test('two different Content-Length values: 400 and close, on two lines or in one list', async () => {
  const payload = CALL + HIDDEN_REQUEST;
  let msg = await refused(head([`Content-Length: ${CALL.length}`, `Content-Length: ${payload.length}`]) + payload, 'two lines');
  assert.match(msg, /Content-Length/, msg);
  msg = await refused(head([`Content-Length: ${CALL.length}, ${payload.length}`]) + payload, 'one list');
  assert.match(msg, /Content-Length/, msg);
});

test('other doubtful lengths: 400 with a JSON-RPC error and close', async () => {
  const cases = [
    [['Content-Length: 5, 5'], '12345', /Content-Length is not one decimal number/],
    [['Transfer-Encoding: gzip'], 'abc', /Transfer-Encoding other than chunked/],
    [['Transfer-Encoding: chunked'], 'zz\r\nabc\r\n', /broken chunked encoding/],
    [['Transfer-Encoding: chunked', 'Transfer-Encoding: chunked'], '0\r\n\r\n' + HIDDEN_REQUEST, /Transfer-Encoding is given more than once/],
  ];
  for (const [lines, rest, re] of cases) assert.match(await refused(head(lines) + rest, lines.join(' + ')), re);
});

test('the same Content-Length on two lines is read as one: answered, and the connection kept', async () => {
  const before = await upstreamCalls();
  const same = head([`Content-Length: ${CALL.length}`, `Content-Length: ${CALL.length}`]) + CALL;
  const r = await exchange(same + head([`Content-Length: ${HIDDEN.length}`, 'Connection: close']) + HIDDEN);
  const got = answers(r.data);
  assert.equal(got.length, 2, r.data.toString('latin1'));
  assert.equal(got[0].status, 200);
  assert.equal(got[0].json.id, 1);
  assert.ok(got[0].json.result);
  assert.equal(got[1].json.id, 7, 'the next request on the connection is a request of its own');
  assert.equal(await upstreamCalls(), before + 2);
});

// A client that writes its whole body before reading gets the 413 and its
// JSON-RPC error, then the end of the connection: not EPIPE or a reset.
async function tooLarge(payload, what) {
  const before = await upstreamCalls();
  const r = await exchange(head([`Content-Length: ${Buffer.byteLength(payload)}`]) + payload,
    { readAfterWrite: true, timeoutMs: 20000 });
  assert.equal(r.error, undefined, `${what}: the client wrote and read without an error`);
  assert.ok(r.wrote, `${what}: every byte of the body was written`);
  const got = answers(r.data);
  assert.equal(got.length, 1, `${what}: ${r.data.subarray(0, 300).toString('latin1')}`);
  assert.equal(got[0].status, 413, what);
  assert.equal(got[0].headers.get('content-type'), 'application/json', what);
  // h2o's own answer: the Server line comes from gw_early.c, once (h2o's server_name is empty)
  assert.equal(r.data.toString('latin1').match(/\r\nserver: sluice\r\n/gi)?.length, 1, `${what}: one Server line`);
  assert.equal(got[0].json?.error?.code, -32600, `${what}: ${got[0].text}`);
  assert.match(got[0].json.error.message, /max_body_bytes \(1048576 bytes\)/, got[0].json.error.message);
  assert.ok(r.ended, `${what}: the connection ended after the answer`);
  assert.equal(await upstreamCalls(), before, `${what}: nothing reached the provider`);
  console.log(`${what}: ${Buffer.byteLength(payload)} body bytes written, ${r.data.length} answer bytes read, closed after ${r.closedMs} ms`);
}

test('a 2.5 MB body written whole, then read: the client reads the 413', async () => {
  await tooLarge(body('eth_call', 1, [{ to: '0x' + '11'.repeat(20), data: '0x' + 'ab'.repeat(1250 * 1000) }, 'latest']),
    '2.5 MB body');
  // larger than what the kernel's buffers take unread: a plain close resets every time
  await tooLarge(body('eth_call', 1, [{ data: '0x' + 'ab'.repeat(4000 * 1000) }, 'latest']), '8 MB body');
});

test('a 1.2 MB string parameter, over the default max_body_bytes: the client reads the 413', async () => {
  await tooLarge(body('eth_sendRawTransaction', 2, ['0x' + 'cd'.repeat(600 * 1000)]), '1.2 MB parameter');
});

test('a chunked body over the limit: the client reads the 413', async () => {
  const payload = body('eth_call', 3, [{ data: '0x' + 'ef'.repeat(1000 * 1000) }, 'latest']);
  const chunks = [];
  for (let i = 0; i < payload.length; i += 65536) {
    const part = payload.slice(i, i + 65536);
    chunks.push(`${part.length.toString(16)}\r\n${part}\r\n`);
  }
  const r = await exchange(head(['Transfer-Encoding: chunked']) + chunks.join('') + '0\r\n\r\n',
    { readAfterWrite: true, timeoutMs: 20000 });
  assert.equal(r.error, undefined, 'the client wrote and read without an error');
  const got = answers(r.data);
  assert.equal(got[0]?.status, 413, r.data.subarray(0, 300).toString('latin1'));
  assert.match(got[0].json?.error?.message ?? '', /max_body_bytes/, got[0].text);
  assert.ok(r.ended);
});

test('a client that stops sending after a refused head is let go after the linger bound', async () => {
  const metric = async () => Number((await adminGet(sluice, '/metrics')).text.match(/^sluice_client_connections (\d+)$/m)[1]);
  await waitFor(async () => (await metric()) === 0, { what: 'no client connection open' });
  // half open: the client's side stays open after the server's FIN, as a client busy elsewhere
  const sock = net.connect({ port: sluice.port, host: '127.0.0.1', allowHalfOpen: true });
  const chunks = [];
  let ended = false;
  sock.on('data', (d) => chunks.push(d));
  sock.on('end', () => { ended = true; });
  sock.on('error', () => {});
  sock.write(head([`Content-Length: ${5 * 1024 * 1024}`]) + 'x'.repeat(100 * 1024)); // and nothing more, never closed
  await waitFor(() => ended, { what: 'the answer and the end of the stream' });
  const t0 = Date.now();
  assert.equal(answers(Buffer.concat(chunks))[0]?.status, 413);
  // /metrics lags by state.flush_ms (100 ms)
  await waitFor(async () => (await metric()) === 1, { timeoutMs: 1500, what: 'the connection lingering, counted' });
  await waitFor(async () => (await metric()) === 0, { timeoutMs: 6000, what: 'the lingering connection closed' });
  const ms = Date.now() - t0;
  console.log(`a silent lingering client was closed ${ms} ms after its answer`);
  assert.ok(ms < 4000, `${ms} ms`);
  sock.destroy();
});
