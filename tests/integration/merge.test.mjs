// Merged confirmation polls: getSignatureStatuses from many clients within
// pressure.merge_window_ms go upstream as one call (eth_getTransactionReceipt
// as one batch); each client gets its own statuses, in its own order, with
// its own id; pins still apply; a merged call that fails fails each poll the
// way a single call would.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { createHash, randomBytes } from 'node:crypto';
import { startFake, startSluice, post, call, sleep, adminGet, adminPost, waitFor, workerPids, readAnswer } from '../lib/harness.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const NOPROBE = 'ranking: { probe_interval_ms: 0 }';
// Wider than the 2 ms default: 40 requests from one test process on a busy
// 2-core machine take several ms to leave; a window they all fit in makes the
// count of upstream calls a property of sluice, not of the scheduler.
const WINDOW = 'pressure: { merge_window_ms: 25 }';

const B58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
function base58(buf) {
  let n = BigInt('0x' + buf.toString('hex'));
  let s = '';
  while (n > 0n) { s = B58[Number(n % 58n)] + s; n /= 58n; }
  for (const b of buf) { if (b !== 0) break; s = '1' + s; }
  return s;
}
// what the fake provider returns for an undecodable sendTransaction: base58(SHA-512(text))
const sigOf = (text) => base58(createHash('sha512').update(text).digest());
const randomSig = () => base58(randomBytes(64));

// Keep-alive sockets opened in advance, so a burst of polls leaves at once.
function agentPost(agent, url, body) {
  const data = typeof body === 'string' ? body : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } },
      (res) => readAnswer(res, resolve));
    req.on('error', reject);
    req.end(data);
  });
}

async function warmAgent(url, n, method) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: n });
  await Promise.all(Array.from({ length: n }, (_, i) => agentPost(agent, url, call(method, [], i))));
  return agent;
}

const methodCount = async (fake, m) => (await fake.stats()).methods[m] || 0;

test('40 concurrent single-signature getSignatureStatuses reach the provider as at most 8 calls, 40 correct answers', async () => {
  const sol = await startFake({ name: 's', chain: 'solana' });
  started.push(sol);
  const s = await startSluice({ workers: 2, networks: { sol: { chain: 'solana', lines: [NOPROBE, WINDOW], endpoints: [{ id: 's', url: sol.url }] } } });
  started.push(s);
  // 20 transactions the provider knows (sent to it directly: no pins), 20 it does not
  const sigs = [];
  for (let i = 0; i < 20; i++) {
    const r = await post(sol.url, call('sendTransaction', [`merge-test-${i}`], i));
    assert.equal(r.json.result, sigOf(`merge-test-${i}`));
    sigs.push(r.json.result);
    sigs.push(randomSig());
  }
  // each one's status as the provider gives it alone
  const want = [];
  for (const sig of sigs) want.push((await post(sol.url, call('getSignatureStatuses', [[sig]], 1))).json.result.value[0]);
  assert.ok(want.some((v) => v === null) && want.some((v) => v && v.confirmationStatus === 'finalized'));
  const agent = await warmAgent(s.url('sol'), 40, 'getSlot');
  const before = await methodCount(sol, 'getSignatureStatuses');
  // ids of every kind, echoed byte for byte
  const ids = sigs.map((_, i) => (i % 3 === 0 ? `"c-${i}"` : i % 3 === 1 ? String(10 ** 20 + i) : `${i}.0`));
  const results = await Promise.all(sigs.map((sig, i) => agentPost(agent, s.url('sol'),
    `{"jsonrpc":"2.0","id":${ids[i]},"method":"getSignatureStatuses","params":[["${sig}"],{"searchTransactionHistory":true}]}`)));
  agent.destroy();
  const upstream = (await methodCount(sol, 'getSignatureStatuses')) - before;
  assert.ok(upstream <= 8, `the provider saw ${upstream} getSignatureStatuses calls for 40 polls`);
  results.forEach((r, i) => {
    assert.equal(r.status, 200, r.text);
    assert.ok(r.text.includes(`"id":${ids[i]}`), `poll ${i}: its id ${ids[i]} byte for byte in ${r.text}`);
    assert.equal(r.json.result.value.length, 1, r.text);
    assert.deepEqual(r.json.result.value[0], want[i], `poll ${i} (${sigs[i]})`);
    assert.equal(typeof r.json.result.context.slot, 'number');
  });
  await sleep(300);
  const net = (await adminGet(s, '/admin/networks')).json.find((n) => n.network === 'sol');
  assert.ok(net.merge.polls_merged >= 40 - 8, `polls_merged ${net.merge.polls_merged}`);
  assert.equal(net.merge.calls_saved, net.merge.polls_merged - (upstream - (40 - net.merge.polls_merged)));
  const metrics = (await adminGet(s, '/metrics')).text;
  assert.match(metrics, /sluice_polls_merged_total\{network="sol"\} \d+/);
  assert.match(metrics, /sluice_upstream_calls_saved_total\{network="sol"\} \d+/);
});

test('several signatures per poll: each client gets its own, in its own order', async () => {
  const sol = await startFake({ name: 's', chain: 'solana' });
  started.push(sol);
  const s = await startSluice({ workers: 1, networks: { sol: { chain: 'solana', lines: [NOPROBE, WINDOW], endpoints: [{ id: 's', url: sol.url }] } } });
  started.push(s);
  const known = [];
  for (let i = 0; i < 6; i++) known.push((await post(sol.url, call('sendTransaction', [`multi-${i}`], i))).json.result);
  const polls = Array.from({ length: 10 }, (_, i) => {
    const list = [];
    for (let k = 0; k <= i % 4; k++) list.push(k % 2 === 0 ? known[(i + k) % known.length] : randomSig());
    return list.reverse();
  });
  const want = [];
  for (const list of polls) want.push((await post(sol.url, call('getSignatureStatuses', [list], 1))).json.result.value);
  const agent = await warmAgent(s.url('sol'), polls.length, 'getSlot');
  const before = await methodCount(sol, 'getSignatureStatuses');
  const results = await Promise.all(polls.map((list, i) => agentPost(agent, s.url('sol'), call('getSignatureStatuses', [list], 500 + i))));
  agent.destroy();
  assert.ok((await methodCount(sol, 'getSignatureStatuses')) - before <= 3);
  results.forEach((r, i) => {
    assert.equal(r.json.id, 500 + i);
    assert.deepEqual(r.json.result.value, want[i], `poll ${i}`);
  });
});

test('a merged call holds at most 256 signatures (the node\'s limit)', async () => {
  const sol = await startFake({ name: 's', chain: 'solana' });
  started.push(sol);
  const s = await startSluice({ workers: 1, networks: { sol: { chain: 'solana', lines: [NOPROBE, WINDOW], endpoints: [{ id: 's', url: sol.url }] } } });
  started.push(s);
  const agent = await warmAgent(s.url('sol'), 60, 'getSlot');
  const before = await methodCount(sol, 'getSignatureStatuses');
  // 60 polls of 5: 300 signatures, so two calls (the fake refuses a 257th)
  const results = await Promise.all(Array.from({ length: 60 }, (_, i) =>
    agentPost(agent, s.url('sol'), call('getSignatureStatuses', [Array.from({ length: 5 }, randomSig)], i))));
  agent.destroy();
  results.forEach((r, i) => {
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.id, i);
    assert.deepEqual(r.json.result.value, [null, null, null, null, null]);
  });
  const n = (await methodCount(sol, 'getSignatureStatuses')) - before;
  assert.ok(n >= 2 && n <= 4, `${n} upstream calls for 300 signatures`);
});

test('one poll of 256 signatures (full alone) is answered, not merged: the worker lives', async () => {
  // it once opened a merge, filled it, resumed itself inside the offer and
  // aborted the worker (a call moved from SENDING back to RIDING)
  const sol = await startFake({ name: 's', chain: 'solana' });
  started.push(sol);
  const s = await startSluice({ workers: 1, networks: { sol: { chain: 'solana', lines: [NOPROBE, WINDOW], endpoints: [{ id: 's', url: sol.url }] } } });
  started.push(s);
  const pids = await workerPids(s.child.pid);
  assert.equal(pids.length, 1);
  const sigs = Array.from({ length: 256 }, randomSig);
  for (let i = 0; i < 3; i++) {
    const r = await post(s.url('sol'), call('getSignatureStatuses', [sigs], i));
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.result.value.length, 256);
  }
  assert.deepEqual(await workerPids(s.child.pid), pids, 'no worker restarted');
});

test('eth_getTransactionReceipt polls go upstream as one batch', async () => {
  const eth = await startFake({ name: 'e' });
  started.push(eth);
  const s = await startSluice({ workers: 1, networks: { eth: { lines: [NOPROBE, WINDOW], endpoints: [{ id: 'e', url: eth.url }] } } });
  started.push(s);
  const hashes = [];
  for (let i = 0; i < 10; i++) hashes.push((await post(eth.url, call('eth_sendRawTransaction', [`0x${(i + 1).toString(16).padStart(4, '0')}`], i))).json.result);
  for (let i = 0; i < 10; i++) hashes.push('0x' + randomBytes(32).toString('hex'));
  const want = [];
  for (const h of hashes) want.push((await post(eth.url, call('eth_getTransactionReceipt', [h], 1))).json.result);
  const agent = await warmAgent(s.url('eth'), hashes.length, 'eth_chainId');
  await eth.reset();
  const results = await Promise.all(hashes.map((h, i) => agentPost(agent, s.url('eth'), call('eth_getTransactionReceipt', [h], `r${i}`))));
  agent.destroy();
  const st = await eth.stats();
  assert.equal(st.methods.eth_getTransactionReceipt, 20, 'every poll reached the provider');
  assert.ok(st.requests <= 3, `20 polls took ${st.requests} HTTP requests`);
  results.forEach((r, i) => {
    assert.equal(r.status, 200);
    assert.equal(r.json.id, `r${i}`);
    assert.deepEqual(r.json.result, want[i], `poll ${i}`);
  });
});

test('a merged call that fails fails each poll as a single call would, each with its own id', async () => {
  const sol = await startFake({ name: 's', chain: 'solana' });
  started.push(sol);
  const s = await startSluice({ workers: 1, networks: { sol: { chain: 'solana', lines: [NOPROBE, WINDOW], endpoints: [{ id: 's', url: sol.url }] } } });
  started.push(s);
  const agent = await warmAgent(s.url('sol'), 8, 'getSlot');
  await sol.setMode('http429', { retry_after: 3, method: 'getSignatureStatuses' });
  const results = await Promise.all(Array.from({ length: 8 }, (_, i) => agentPost(agent, s.url('sol'), call('getSignatureStatuses', [[randomSig()]], 900 + i))));
  assert.ok((await sol.stats()).faults <= 2, 'the polls went as one call');
  results.forEach((r, i) => {
    assert.equal(r.status, 429, r.text);
    assert.equal(r.headers['retry-after'], '3');
    assert.equal(r.json.id, 900 + i);
    assert.equal(r.json.error.code, -32005);
    assert.equal(r.json.error.data.scope, 'upstream');
    assert.equal(r.json.error.data.attempts[0].endpoint, 's');
  });
  agent.destroy();
});

test('a merged answer that does not split (an error object) sends each poll on alone', async () => {
  const sol = await startFake({ name: 's', chain: 'solana' });
  started.push(sol);
  const s = await startSluice({ workers: 1, networks: { sol: { chain: 'solana', lines: [NOPROBE, WINDOW], endpoints: [{ id: 's', url: sol.url }] } } });
  started.push(s);
  const agent = await warmAgent(s.url('sol'), 5, 'getSlot');
  await sol.setMode('rpc_error', { code: -32602, message: 'Invalid param', method: 'getSignatureStatuses' });
  await sol.reset();
  const results = await Promise.all(Array.from({ length: 5 }, (_, i) => agentPost(agent, s.url('sol'), call('getSignatureStatuses', [[randomSig()]], `e${i}`))));
  agent.destroy();
  results.forEach((r, i) => {
    assert.equal(r.status, 200);
    assert.equal(r.json.id, `e${i}`);
    assert.equal(r.json.error.code, -32602, 'the node\'s own error, as a single poll gets it');
  });
  const n = (await sol.stats()).methods.getSignatureStatuses;
  assert.ok(n >= 5 && n <= 6, `one merged call, then each alone: ${n}`);
});

test('pins apply: a pinned signature is merged only with polls pinned to the same endpoint', async () => {
  const a = await startFake({ name: 'a', chain: 'solana' }), b = await startFake({ name: 'b', chain: 'solana' });
  started.push(a, b);
  const s = await startSluice({ workers: 1, networks: { sol: { chain: 'solana', lines: [NOPROBE, WINDOW], endpoints: [
    { id: 'a', url: a.url, tier: 'fallback' }, { id: 'b', url: b.url }] } } });
  started.push(s);
  // the write goes through a (b drained), so its signature is pinned to a
  assert.equal((await adminPost(s, '/admin/endpoints/sol/b/drain')).status, 200);
  await sleep(200);
  const sent = await post(s.url('sol'), call('sendTransaction', ['pinned-tx'], 1));
  assert.equal(sent.headers.get('x-sluice-endpoint'), 'a');
  assert.equal((await adminPost(s, '/admin/endpoints/sol/b/undrain')).status, 200);
  await sleep(200);
  const agent = await warmAgent(s.url('sol'), 6, 'getSlot');
  await a.reset();
  await b.reset();
  const polls = [[sent.json.result], [randomSig()], [randomSig()], [randomSig()], [randomSig()], [randomSig()]];
  const results = await Promise.all(polls.map((p, i) => agentPost(agent, s.url('sol'), call('getSignatureStatuses', [p], i))));
  agent.destroy();
  assert.equal(results[0].headers['x-sluice-endpoint'], 'a', 'the pinned poll went to the accepting endpoint');
  assert.equal(results[0].json.result.value[0].confirmationStatus, 'finalized');
  for (const r of results.slice(1)) assert.equal(r.headers['x-sluice-endpoint'], 'b');
  assert.equal((await a.stats()).methods.getSignatureStatuses, 1, 'a: the pinned poll alone');
  assert.equal((await b.stats()).methods.getSignatureStatuses, 1, 'b: the five others as one call');
});

test('a client batch with polls is not merged; merge_window_ms: 0 turns merging off', async () => {
  const sol = await startFake({ name: 's', chain: 'solana' });
  started.push(sol);
  const s = await startSluice({ workers: 1, networks: {
    sol: { chain: 'solana', lines: [NOPROBE, WINDOW], endpoints: [{ id: 's', url: sol.url }] },
    off: { chain: 'solana', lines: [NOPROBE, 'pressure: { merge_window_ms: 0 }'], endpoints: [{ id: 's', url: sol.url }] } } });
  started.push(s);
  const agent = await warmAgent(s.url('sol'), 6, 'getSlot');
  await sol.reset();
  const batch = [call('getSignatureStatuses', [[randomSig()]], 1), call('getSignatureStatuses', [[randomSig()]], 2)];
  await Promise.all([
    ...Array.from({ length: 5 }, (_, i) => agentPost(agent, s.url('sol'), call('getSignatureStatuses', [[randomSig()]], i))),
    agentPost(agent, s.url('sol'), batch),
  ]);
  let st = await sol.stats();
  assert.equal(st.requests, 2, 'five singles as one call, the batch as its own');
  assert.equal(st.methods.getSignatureStatuses, 3);
  await sol.reset();
  const off = await warmAgent(s.url('off'), 5, 'getSlot');
  await sol.reset();
  await Promise.all(Array.from({ length: 5 }, (_, i) => agentPost(off, s.url('off'), call('getSignatureStatuses', [[randomSig()]], i))));
  off.destroy();
  agent.destroy();
  st = await sol.stats();
  assert.equal(st.methods.getSignatureStatuses, 5, 'unmerged with the window at 0');
});

test('merge counters survive a worker restart (the new process takes its slot over)', async () => {
  const sol = await startFake({ name: 's', chain: 'solana' });
  started.push(sol);
  const s = await startSluice({ workers: 1, networks: { sol: { chain: 'solana', lines: [NOPROBE, WINDOW], endpoints: [{ id: 's', url: sol.url }] } } });
  started.push(s);
  let agent = await warmAgent(s.url('sol'), 10, 'getSlot');
  await Promise.all(Array.from({ length: 10 }, (_, i) => agentPost(agent, s.url('sol'), call('getSignatureStatuses', [[randomSig()]], i))));
  agent.destroy();
  const merged = await waitFor(async () => (await adminGet(s, '/admin/networks')).json[0].merge.polls_merged >= 10 &&
    (await adminGet(s, '/admin/networks')).json[0].merge.polls_merged, { what: 'merged polls counted' });
  const [pid] = await workerPids(s.child.pid);
  process.kill(pid, 'SIGKILL');
  await waitFor(async () => { const p = await workerPids(s.child.pid); return p.length === 1 && p[0] !== pid; }, { what: 'respawn' });
  await waitFor(async () => (await post(s.url('sol'), call('getSlot')).catch(() => ({})))?.status === 200,
    { what: 'the new worker serves' });
  agent = await warmAgent(s.url('sol'), 4, 'getSlot');
  await Promise.all(Array.from({ length: 4 }, (_, i) => agentPost(agent, s.url('sol'), call('getSignatureStatuses', [[randomSig()]], i))));
  agent.destroy();
  const after = await waitFor(async () => { const n = (await adminGet(s, '/admin/networks')).json[0].merge.polls_merged; return n >= merged + 4 && n; },
    { what: `polls_merged to grow past ${merged}` });
  assert.ok(after >= merged + 4);
});
