// Startup does not wait for DNS, and a host name that does not resolve is an
// endpoint failure (out of the plan, the reason in /admin/endpoints, retried),
// not a failed start. The second test runs sluice in a mount namespace whose
// /etc/resolv.conf points at a DNS server of the test's own, which at first
// never answers (a resolver that hangs), then answers: the endpoint becomes
// usable once its name resolves.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import dgram from 'node:dgram';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { startFake, startSluice, post, call, adminGet, adminPost, waitFor, tempDir, SLUICE_BIN, waitLog } from '../lib/harness.mjs';

const started = [];
const sockets = [];
after(async () => {
  for (const s of sockets) s.close();
  await Promise.all(started.map((p) => p.stop()));
});

const endpoint = async (s, id) => (await adminGet(s, '/admin/endpoints')).json.find((e) => e.id === id);

test('an unresolvable host is an endpoint failure, visible and retried; the healthy endpoint serves', async () => {
  const good = await startFake({ name: 'good' });
  started.push(good);
  // RFC 6761: .invalid never resolves
  const s = await startSluice({
    cache: false, // eth_chainId's route and attempts are watched: a cache hit has neither
    workers: 2,
    networks: {
      eth: { lines: ['ranking: { probe_interval_ms: 0 }'],
        endpoints: [{ id: 'nodns', url: `http://nonexistent.invalid:${good.port}/` }, { id: 'good', url: good.url }] },
      dark: { lines: ['ranking: { probe_interval_ms: 0 }'], endpoints: [{ id: 'nodns', url: 'https://nonexistent.invalid/v2/k' }] },
    },
  });
  started.push(s);
  const view = await waitFor(async () => {
    const v = await endpoint(s, 'nodns');
    return v && v.usable === false ? v : null;
  }, { what: 'nodns shown unusable' });
  // (.invalid fails at once here; a resolver with no network may time out instead)
  assert.match(view.excluded, /^host name (does not resolve|lookup timed out)/);
  assert.equal(view.position, null);
  assert.equal(view.score.excluded, view.excluded);
  assert.equal((await endpoint(s, 'good')).usable, true);
  // the plan skips it: one attempt each, no time lost on the name
  for (let i = 0; i < 6; i++) {
    const r = await post(s.url('eth'), call('eth_chainId', [], i));
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('x-sluice-endpoint'), 'good');
    assert.equal(r.headers.get('x-sluice-attempts'), '1');
  }
  // a network with nothing that resolves: nothing can be tried (503), and not ready
  const dark = await post(s.url('dark'), call('eth_chainId'));
  assert.equal(dark.status, 503);
  assert.equal(dark.headers.get('retry-after'), '1');
  const ready = await adminGet(s, '/readyz');
  assert.equal(ready.status, 503);
  assert.match(ready.json.reason, /network dark has no usable endpoint/);
  await waitLog(s, /endpoint eth\/nodns: the host name of http:\/\/nonexistent\.invalid:\d+\/ does not resolve \(.+\): out of the plan, retried/);
  // retried: the log says so once, not once per retry (1 s, 2 s, ...)
  await new Promise((r) => setTimeout(r, 2500));
  const warns = s.logs().split('\n').filter((l) => l.includes('eth/nodns: the host name'));
  assert.equal(warns.length, 2, `one line per worker:\n${warns.join('\n')}`);
});

// ---- a DNS server of our own: silent until told to answer
const NAME = 'rpc.sluice-dns-test.example';

function dnsServer(address) {
  const sock = dgram.createSocket('udp4');
  sockets.push(sock);
  const st = { answer: false, delayMs: 0, queries: 0, held: [] };
  const reply = (msg, rinfo) => {
    // the question ends after the name's labels, then QTYPE and QCLASS
    let i = 12;
    while (msg[i] !== 0) i += msg[i] + 1;
    const qend = i + 5;
    const qtype = msg.readUInt16BE(i + 1);
    const labels = [];
    for (let j = 12; msg[j] !== 0; j += msg[j] + 1) labels.push(msg.subarray(j + 1, j + 1 + msg[j]).toString());
    const ours = labels.join('.').toLowerCase() === NAME;
    const a = ours && qtype === 1;
    const head = Buffer.alloc(12);
    msg.copy(head, 0, 0, 2);
    head.writeUInt16BE(ours ? 0x8180 : 0x8183, 2); // response, RD, RA; NXDOMAIN for other names
    head.writeUInt16BE(1, 4);
    head.writeUInt16BE(a ? 1 : 0, 6);
    const parts = [head, msg.subarray(12, qend)];
    if (a) parts.push(Buffer.from([0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 5, 0, 4, 127, 0, 0, 1]));
    sock.send(Buffer.concat(parts), rinfo.port, rinfo.address);
  };
  sock.on('message', (msg, rinfo) => {
    st.queries++;
    if (st.delayMs) setTimeout(() => reply(msg, rinfo), st.delayMs); // a slow resolver
    else if (st.answer) reply(msg, rinfo);
    else st.held.push([msg, rinfo]); // a resolver that hangs
  });
  return new Promise((resolve, reject) => {
    sock.once('error', reject);
    sock.bind(53, address, () => resolve({
      st,
      // answers from now on, the queries that were left hanging included
      answer: () => { st.answer = true; for (const [m, r] of st.held.splice(0)) reply(m, r); },
    }));
  });
}

test('startup does not wait for a hanging resolver; the endpoint is usable once its name resolves', async (t) => {
  const probe = spawnSync('unshare', ['-m', 'true']);
  if (probe.status !== 0 || process.getuid() !== 0) {
    // needs root: a mount namespace for resolv.conf, and port 53
    assert.notEqual(process.env.SLUICE_REQUIRE_ALL, '1', 'this test needs root and unshare(1) (CI runs as root)');
    t.skip('needs root and unshare(1)');
    return;
  }
  const dns = await dnsServer('127.83.83.83');
  const good = await startFake({ name: 'good' }), named = await startFake({ name: 'named' });
  started.push(good, named);
  const dir = tempDir();
  const resolv = path.join(dir, 'resolv.conf');
  // glibc would wait 30 s x 5 tries before giving up on a name
  writeFileSync(resolv, 'nameserver 127.83.83.83\noptions timeout:30 attempts:5\n');
  const wrap = ['unshare', '-m', 'sh', '-c', `mount --bind ${resolv} /etc/resolv.conf && exec "$0" "$@"`];
  // no hedges: a read waiting 200 ms for the first lookup would be hedged to good (what the
  // last part checks is that the wait is no failure)
  const networks = {
    eth: { lines: ['ranking: { probe_interval_ms: 0 }', 'timeouts: { connect_ms: 500 }', 'hedge: { enabled: false }'],
      endpoints: [{ id: 'named', url: `http://${NAME}:${named.port}/` }, { id: 'good', url: good.url }] },
  };
  // the harness gives sluice 15 s to say it listens: far less than glibc's wait
  // eth_chainId's route is watched: a cache hit has none
  const s = await startSluice({ cache: false, workers: 2, networks }, { wrap });
  started.push(s);
  for (let i = 0; i < 3; i++) {
    const r = await post(s.url('eth'), call('eth_chainId', [], i));
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('x-sluice-endpoint'), 'good');
  }
  const view = await waitFor(async () => {
    const v = await endpoint(s, 'named');
    return v && v.usable === false ? v : null;
  }, { what: 'the hanging lookup shown as a failure' });
  assert.equal(view.excluded, 'host name lookup timed out (timeouts.connect_ms)');
  assert.ok(dns.st.queries > 0, 'sluice asked our DNS server');
  await waitLog(s, /eth\/named: the host name of http:\/\/rpc\.sluice-dns-test\.example:\d+\/ does not resolve \(no answer within 500 ms\)/);

  // --check needs no DNS either
  const cfg = path.join(dir, 'check.yaml');
  writeFileSync(cfg, `networks: { eth: { endpoints: ["http://${NAME}:1/", "https://nonexistent.invalid/"] } }\n`);
  const t0 = Date.now();
  const check = spawnSync(wrap[0], [...wrap.slice(1), SLUICE_BIN, '--check', '-c', cfg], { encoding: 'utf8', timeout: 20000 });
  assert.equal(check.status, 0, check.stdout + check.stderr);
  assert.ok(Date.now() - t0 < 10000, '--check did not wait for the resolver');

  // the name resolves now: the endpoint comes back into the plan
  dns.answer();
  await waitFor(async () => (await endpoint(s, 'named'))?.usable === true, { timeoutMs: 20000, what: 'named usable again' });
  assert.equal((await adminPost(s, '/admin/endpoints/eth/good/drain')).status, 200);
  await waitFor(async () => (await post(s.url('eth'), call('eth_chainId'))).headers.get('x-sluice-endpoint') === 'named',
    { timeoutMs: 10000, what: 'traffic through the resolved endpoint' });
  assert.ok((await named.stats()).requests > 0, 'the fake behind the name got the calls');
  await waitLog(s, /eth\/named: the host name resolves again/);

  // a slow resolver (200 ms, within connect_ms): the first calls of a fresh
  // sluice wait for the first lookup instead of failing over
  dns.st.delayMs = 200;
  await named.reset();
  const fresh = await startSluice({ workers: 1, networks }, { wrap });
  started.push(fresh);
  const first = await post(fresh.url('eth'), call('eth_chainId', [], 1));
  assert.equal(first.status, 200);
  assert.equal(first.headers.get('x-sluice-endpoint'), 'named');
  assert.equal(first.headers.get('x-sluice-attempts'), '1');
  assert.equal((await endpoint(fresh, 'named')).usable, true);
});
