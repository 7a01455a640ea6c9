// Client-facing rate limits: tiers shared by every worker (GCRA), the read
// bucket, X-RateLimit-* headers, keys in the path or a header, 429 bodies,
// trusted proxies, and every JSON-RPC route metered.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { startFake, startSluice, postFresh, post, call, sleep, waitLog } from '../lib/harness.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const sha = (k) => createHash('sha256').update(k).digest('hex');
const PRO = 'sl_prokey0123456789abcdefghij', BASIC = 'sl_basickey0123456789abcdefgh';
const H = (r, n) => r.headers.get(`x-ratelimit-${n}`);
// eth_call is a standard-bucket call (eth_chainId would be a cheap read)
const STD = (id = 1) => call('eth_call', [{ to: '0x0000000000000000000000000000000000000001' }, 'latest'], id);

async function limited(tiersYaml, extra = '', workers = 2) {
  const a = await startFake({ name: 'a' });
  started.push(a);
  const s = await startSluice({
    workers,
    networks: { eth: { lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: [{ id: 'a', url: a.url }] } },
    extra: `tiers: ${tiersYaml}\nkeys:\n  - { sha256: "${sha(PRO)}", tier: pro, name: team-pro }\n  - { sha256: "${sha(BASIC)}", tier: basic, name: team-basic }\n${extra}`,
  });
  started.push(s);
  return { a, s };
}

test('a tier of 10/s under 50/s of load for 5 s admits 10 ± 1 per second across 2 workers', async () => {
  const { s } = await limited('{ anonymous: { per_second: 10 }, pro: { per_second: 100 }, basic: { per_second: 7 } }');
  const t0 = Date.now();
  const results = [];
  const inflight = [];
  for (let i = 0; i < 250; i++) {
    const due = t0 + i * 20;
    await sleep(Math.max(0, due - Date.now()));
    inflight.push(postFresh(s.url('eth'), STD(i)).then((r) => results.push({ at: due - t0, r })));
  }
  const sentFor = (Date.now() - t0) / 1000; // about 5 s, more if this client fell behind
  await Promise.all(inflight);
  const perSecond = [0, 0, 0, 0, 0];
  for (const { at, r } of results) {
    assert.ok(r.status === 200 || r.status === 429, `status ${r.status}`);
    if (r.status === 200) perSecond[Math.min(4, Math.floor(at / 1000))]++;
  }
  // the first second includes the burst (10 at once), then one every 100 ms;
  // seconds are counted by when a call was due, so a stall of this client
  // can move one or two admissions into the next second
  for (const [i, n] of perSecond.entries()) assert.ok(n >= 8 && n <= 12 + (i === 0 ? 10 : 0), `second ${i}: ${n} admitted (${perSecond})`);
  const total = perSecond.reduce((x, y) => x + y, 0);
  // never more than the burst plus 10/s over the time calls were sent for
  assert.ok(total <= 10 + Math.ceil(10 * sentFor) + 1, `total ${total} in ${sentFor} s`);
  assert.ok(total >= 55, `total ${total}`);
  const refused = results.find(({ r }) => r.status === 429).r;
  assert.equal(refused.json.error.code, -32005);
  assert.equal(refused.json.error.data.scope, 'client');
  assert.ok(Number(refused.headers.get('retry-after')) >= 1);
});

test('headers are coherent: Remaining falls, Reset counts down, Window and Bucket say which', async () => {
  const { s } = await limited('{ anonymous: { per_minute: 6 }, pro: { per_second: 100 }, basic: { per_second: 7 } }', '', 1);
  const rs = [];
  for (let i = 0; i < 7; i++) rs.push(await post(s.url('eth'), STD(i)));
  assert.deepEqual(rs.map((r) => Number(H(r, 'remaining'))), [5, 4, 3, 2, 1, 0, 0]);
  assert.deepEqual(rs.map((r) => r.status), [200, 200, 200, 200, 200, 200, 429]);
  assert.ok(rs.every((r) => H(r, 'limit') === '6' && H(r, 'window') === '60' && H(r, 'bucket') === 'standard'));
  const reset = Number(H(rs[6], 'reset'));
  assert.ok(reset >= 1 && reset <= 10, `reset ${reset}`); // one slot frees every 10 s
  await sleep(1100);
  const later = await post(s.url('eth'), STD());
  assert.ok(Number(H(later, 'reset')) < reset || later.status === 200, 'Reset counts down');
});

test('a limit past one call per microsecond is capped there, and the headers say so', async () => {
  const { s } = await limited('{ anonymous: { per_second: 4000000000 }, pro: { per_second: 100 }, basic: { per_second: 7 } }', '', 1);
  for (const body of [STD(), call('eth_chainId')]) {
    const r = await post(s.url('eth'), body);
    assert.equal(r.status, 200);
    assert.equal(H(r, 'limit'), '1000000');
    assert.ok(Number(H(r, 'remaining')) < 1000000, `remaining ${H(r, 'remaining')}`);
  }
});

test('the read bucket admits about 10x for cheap reads; eth_call and mixed batches go to standard', async () => {
  const { s } = await limited('{ anonymous: { per_minute: 3 }, pro: { per_second: 100 }, basic: { per_second: 7 } }', '', 1);
  let ok = 0;
  for (let i = 0; i < 35; i++) ok += (await post(s.url('eth'), call('eth_blockNumber', [], i))).status === 200;
  assert.equal(ok, 30, 'read bucket: 3 x 10 per minute');
  const r = await post(s.url('eth'), call('eth_blockNumber'));
  assert.equal(H(r, 'bucket'), 'read');
  // a batch with one eth_call is charged to standard, per member (3 calls)
  const b = await post(s.url('eth'), [call('eth_blockNumber', [], 1), call('eth_chainId', [], 2), call('eth_call', [{}, 'latest'], 3)]);
  assert.equal(b.status, 200);
  assert.equal(H(b, 'bucket'), 'standard');
  assert.equal(H(b, 'remaining'), '0');
  const c = await post(s.url('eth'), call('eth_call', [{}, 'latest'], 4));
  assert.equal(c.status, 429);
});

test('keys: path, header, both (path wins); unknown sl_ key 401; another segment is anonymous', async () => {
  const { s } = await limited('{ anonymous: { per_second: 2 }, pro: { per_second: 100 }, basic: { per_second: 7 } }', '', 1);
  let r = await post(`${s.url('eth')}/${PRO}`, STD());
  assert.equal(r.status, 200);
  assert.equal(H(r, 'limit'), '100');
  r = await post(s.url('eth'), STD(), { 'x-api-key': BASIC });
  assert.equal(H(r, 'limit'), '7');
  r = await post(`${s.url('eth')}/${PRO}`, STD(), { 'x-api-key': BASIC });
  assert.equal(H(r, 'limit'), '100', 'the path key wins');
  r = await post(`${s.url('eth')}/sl_unknown_key_000000000000`, STD());
  assert.equal(r.status, 401);
  r = await post(`${s.url('eth')}/my-app`, STD());
  assert.equal(H(r, 'limit'), '2', 'anonymous');
  await new Promise((res) => setTimeout(res, 400));
  assert.ok(!s.logs().includes(PRO) && !s.logs().includes(BASIC), 'keys never reach the logs');
  await waitLog(s, /"key":"team-pro"/);
});

test('every route that reaches the JSON-RPC handler is metered', async () => {
  const { s } = await limited('{ anonymous: { per_minute: 4 }, pro: { per_second: 100 }, basic: { per_second: 7 } }', '', 1);
  // every path shape the router sends to the JSON-RPC handler (see gw_handler.c split_path)
  const routes = ['/eth', '/eth/', '/eth/anything', '/eth/my-app-7'];
  for (const p of routes) {
    const r = await post(`${s.base}${p}`, STD());
    assert.ok(H(r, 'limit'), `${p} carries X-RateLimit-Limit`);
  }
  for (const p of routes) {
    const r = await post(`${s.base}${p}`, STD());
    assert.equal(r.status, 429, `${p} is refused once the caller's budget is spent`);
  }
  // and parse errors and invalid requests are charged too (to standard)
  const bad = await post(s.url('eth'), '{nope');
  assert.equal(bad.status, 429);
});

test('X-Forwarded-For counts only from trusted proxies', async () => {
  // renderConfig already emits server:, so this variant uses a config string
  const a = await startFake({ name: 'a' });
  started.push(a);
  const cfg = (trusted) => `server: { listen: "127.0.0.1:0", workers: 1${trusted ? ', trusted_proxies: ["127.0.0.1/32"]' : ''} }
admin: { listen: off }
tiers: { anonymous: { per_minute: 2 } }
networks: { eth: { ranking: { probe_interval_ms: 0 }, endpoints: ["${a.url}"] } }
`;
  const trusted = await startSluice(cfg(true));
  started.push(trusted);
  for (const ip of ['10.0.0.1', '10.0.0.2']) {
    for (let i = 0; i < 2; i++) {
      const r = await post(trusted.url('eth'), STD(), { 'x-forwarded-for': ip });
      assert.equal(r.status, 200, `${ip} has its own budget`);
    }
  }
  assert.equal((await post(trusted.url('eth'), STD(), { 'x-forwarded-for': '10.0.0.1' })).status, 429);
  const open = await startSluice(cfg(false));
  started.push(open);
  assert.equal((await post(open.url('eth'), STD(), { 'x-forwarded-for': '10.0.0.1' })).status, 200);
  assert.equal((await post(open.url('eth'), STD(), { 'x-forwarded-for': '10.0.0.2' })).status, 200);
  assert.equal((await post(open.url('eth'), STD(), { 'x-forwarded-for': '10.0.0.3' })).status, 429,
    'an untrusted peer cannot pick its identity');
});

// A POST whose headers may repeat: { name: [line, line] } sends two lines.
async function postLines(url, body, headers) {
  const http = await import('node:http');
  const data = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST' }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text }));
    });
    req.setHeader('content-type', 'application/json');
    for (const [k, v] of Object.entries(headers)) req.setHeader(k, v);
    req.on('error', reject);
    req.end(data);
  });
}

async function trustingSluice(tiers, server = '') {
  const a = await startFake({ name: 'a' });
  started.push(a);
  const s = await startSluice(`server: { listen: "127.0.0.1:0", workers: 1, trusted_proxies: ["127.0.0.1/32"]${server} }
admin: { listen: off }
tiers: ${tiers}
networks: { eth: { ranking: { probe_interval_ms: 0 }, endpoints: ["${a.url}"] } }
`);
  started.push(s);
  return s;
}

test('X-Forwarded-For lines are joined before the walk: a line of its own cannot pick the identity', async () => {
  const s = await trustingSluice('{ anonymous: { per_minute: 2 } }');
  // the client 10.0.0.1 spends its budget through the proxy (one line each)
  for (let i = 0; i < 2; i++) assert.equal((await postLines(s.url('eth'), STD(), { 'x-forwarded-for': '10.0.0.1' })).status, 200);
  assert.equal((await postLines(s.url('eth'), STD(), { 'x-forwarded-for': '10.0.0.1' })).status, 429);
  // then sends its own X-Forwarded-For line ahead of the one the proxy adds:
  // read together they say "10.9.9.x, 10.0.0.1", and the proxy's entry counts
  for (let i = 0; i < 3; i++) {
    const r = await postLines(s.url('eth'), STD(), { 'x-forwarded-for': [`10.9.9.${i}`, '10.0.0.1'] });
    assert.equal(r.status, 429, `a line of its own (10.9.9.${i}) chose the caller's identity`);
  }
  // a chain over two lines is walked across both: 10.0.0.2 via a trusted hop
  const r = await postLines(s.url('eth'), STD(), { 'x-forwarded-for': ['10.0.0.2', '127.0.0.1'] });
  assert.equal(r.status, 200, 'the chain over two lines names 10.0.0.2');
});

test('IPv6 callers are limited per /64 (server.ipv6_prefix)', async () => {
  const s = await trustingSluice('{ anonymous: { per_minute: 2 } }');
  const h = (ip) => ({ 'x-forwarded-for': ip });
  assert.equal((await post(s.url('eth'), STD(), h('2001:db8:1:2::1'))).status, 200);
  assert.equal((await post(s.url('eth'), STD(), h('2001:db8:1:2:ffff:1:2:3'))).status, 200);
  assert.equal((await post(s.url('eth'), STD(), h('2001:db8:1:2:abcd::9'))).status, 429, 'another address of the same /64');
  assert.equal((await post(s.url('eth'), STD(), h('2001:db8:1:3::1'))).status, 200, 'the next /64 is another caller');
  // IPv4-mapped addresses are IPv4 callers, not one /64 for all of them
  assert.equal((await post(s.url('eth'), STD(), h('::ffff:192.0.2.1'))).status, 200);
  assert.equal((await post(s.url('eth'), STD(), h('::ffff:192.0.2.2'))).status, 200);
  assert.equal((await post(s.url('eth'), STD(), h('::ffff:192.0.2.3'))).status, 200);
  const wide = await trustingSluice('{ anonymous: { per_minute: 1 } }', ', ipv6_prefix: 128');
  assert.equal((await post(wide.url('eth'), STD(), h('2001:db8:1:2::1'))).status, 200);
  assert.equal((await post(wide.url('eth'), STD(), h('2001:db8:1:2::2'))).status, 200, 'ipv6_prefix: 128 limits each address');
});

test('guessing keys and wrong content types are charged to the caller\'s address', async () => {
  const { s } = await limited('{ anonymous: { per_minute: 3 }, pro: { per_second: 100 }, basic: { per_second: 7 } }', '', 1);
  const statuses = [];
  for (let i = 0; i < 5; i++) statuses.push((await post(`${s.url('eth')}/sl_guess_${i}_000000000000000`, STD())).status);
  assert.deepEqual(statuses, [401, 401, 401, 429, 429], 'unknown keys cost the address its calls');
  const bad = await post(s.url('eth'), STD(), { 'content-type': 'text/plain' });
  assert.equal(bad.status, 429, 'so do wrong content types');
  // a known key has its own tier and is not refused for its address's guesses
  assert.equal((await post(`${s.url('eth')}/${PRO}`, STD())).status, 200);
});
