// Several hosts through Redis (cluster:): real redis-server processes on free
// loopback ports, two sluice instances with their own state folders and
// ports, one fake provider.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { startFake, startSluice, call, sleep, waitFor, adminGet, events, tempDir, renderConfig, SLUICE_BIN }
  from '../lib/harness.mjs';
import { startRedis, redisAvailable, freePort } from '../lib/redis.mjs';

const skip = redisAvailable() ? false : 'redis-server is not installed';

function clusterLine(url, host, extra = '') {
  return `cluster: { redis: "${url}", host: "${host}"${extra} }`;
}

function hostConfig(fake, url, host, { workers = 2, extra = '', lines = [] } = {}) {
  return {
    workers,
    networks: { eth: { lines, endpoints: [{ id: 'a', url: fake.url }] } },
    extra: clusterLine(url, host, extra),
  };
}

async function mode(s) {
  const r = await adminGet(s, '/readyz');
  return { status: r.status, cluster: r.json && r.json.cluster };
}

async function waitMode(s, want, what) {
  return waitFor(async () => ((await mode(s)).cluster || {}).mode === want, { timeoutMs: 15000, what: `${what}: mode ${want}` });
}

const kinds = async (s, kind) => (await events(s)).filter((e) => e.kind === kind);

// Requests to every host in a loop until stopped; counts what did not get 200.
function load(hosts) {
  const st = { ok: 0, bad: [], stop: false };
  st.done = (async () => {
    while (!st.stop) {
      for (const s of hosts) {
        try {
          const r = await fetch(s.url(), { method: 'POST', headers: { 'content-type': 'application/json' },
            body: JSON.stringify(call('eth_blockNumber')) });
          await r.text();
          if (r.status === 200) st.ok++; else st.bad.push(r.status);
        } catch (e) { st.bad.push(String(e)); }
      }
      await sleep(10);
    }
  })();
  return st;
}

function check(file, env = {}) {
  return spawnSync(SLUICE_BIN, ['--check', '--connect', '-c', file], { encoding: 'utf8', env: { ...process.env, ...env } });
}

function writeConfig(text) {
  const dir = tempDir();
  const file = path.join(dir, 'sluice.yaml');
  writeFileSync(file, `${text}state: { path: "${path.join(dir, 'state')}" }\n`);
  return file;
}

test('Redis killed and restarted: both hosts keep answering, each reports degraded and restored once', { skip }, async () => {
  const fake = await startFake({ name: 'f' });
  const redis = await startRedis();
  const h1 = await startSluice(hostConfig(fake, redis.url(), 'h1'));
  const h2 = await startSluice(hostConfig(fake, redis.url(), 'h2'));
  for (const s of [h1, h2]) await waitMode(s, 'shared', 'start');
  await waitFor(async () => (await mode(h1)).cluster.hosts === 2 && (await mode(h2)).cluster.hosts === 2,
    { timeoutMs: 5000, what: 'both hosts counted' });
  assert.match(redis.cli('ZRANGE', 'sluice:hosts', '0', '-1'), /h1[\s\S]*h2|h2[\s\S]*h1/);

  const traffic = load([h1, h2]);
  await sleep(200);
  await redis.kill();
  for (const s of [h1, h2]) await waitMode(s, 'degraded', 'Redis killed');
  for (const s of [h1, h2]) {
    const r = await mode(s);
    assert.equal(r.status, 200, '/readyz stays 200 while degraded');
    const m = await adminGet(s, '/metrics');
    assert.match(m.text, new RegExp(`sluice_cluster_mode\\{host="${r.cluster.host}",mode="degraded"\\} 1`));
    assert.match(m.text, new RegExp(`sluice_cluster_mode\\{host="${r.cluster.host}",mode="shared"\\} 0`));
  }
  await sleep(1500); // several reconnect attempts fail meanwhile: still one event
  await redis.restart();
  for (const s of [h1, h2]) await waitMode(s, 'shared', 'Redis back');
  await sleep(300);
  traffic.stop = true;
  await traffic.done;
  assert.deepEqual(traffic.bad, [], 'every request answered 200 through the outage');
  assert.ok(traffic.ok > 50, `requests were made (${traffic.ok})`);
  for (const s of [h1, h2]) {
    const deg = await kinds(s, 'cluster_degraded');
    const res = await kinds(s, 'cluster_restored');
    assert.equal(deg.length, 1, `one cluster_degraded: ${JSON.stringify(deg)}`);
    assert.equal(res.length, 1, `one cluster_restored: ${JSON.stringify(res)}`);
    assert.match(deg[0].reason, /Redis lost/);
    assert.ok(res[0].duration_ms >= 1000, `the outage lasted (${res[0].duration_ms} ms)`);
  }
});

test('Redis that stops answering (SIGSTOP) counts as down within the timeout; answers again: restored', { skip }, async () => {
  const fake = await startFake({ name: 'f' });
  const redis = await startRedis();
  const h1 = await startSluice(hostConfig(fake, redis.url(), 'slow1', { extra: ', timeout_ms: 200' }));
  await waitMode(h1, 'shared', 'start');
  const traffic = load([h1]);
  redis.pause();
  const t0 = Date.now();
  try {
    await waitMode(h1, 'degraded', 'Redis paused');
    assert.ok(Date.now() - t0 < 3000, 'noticed within a heartbeat and the timeout');
    assert.equal((await mode(h1)).status, 200);
  } finally {
    redis.resume();
  }
  await waitMode(h1, 'shared', 'Redis resumed');
  traffic.stop = true;
  await traffic.done;
  assert.deepEqual(traffic.bad, []);
  const deg = await kinds(h1, 'cluster_degraded');
  assert.equal(deg.length, 1);
  assert.match(deg[0].reason, /no answer within 200 ms|timed out/);
  assert.equal((await kinds(h1, 'cluster_restored')).length, 1);
});

test('an unreachable Redis at start is not fatal: degraded, loud log, then shared once it comes', { skip }, async () => {
  const fake = await startFake({ name: 'f' });
  const port = await freePort();
  const h1 = await startSluice(hostConfig(fake, `redis://127.0.0.1:${port}/0`, 'late'));
  assert.match(h1.logs(), /does not answer .*starting DEGRADED/);
  await waitMode(h1, 'degraded', 'start without Redis');
  assert.equal((await mode(h1)).status, 200);
  const r = await fetch(h1.url(), { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify(call('eth_blockNumber')) });
  assert.equal(r.status, 200);
  assert.equal((await kinds(h1, 'cluster_degraded')).length, 1);
  await startRedis({ port });
  await waitMode(h1, 'shared', 'Redis started');
  assert.equal((await kinds(h1, 'cluster_restored')).length, 1);
});

test('a wrong password or a server that is not Redis stops the start; --check --connect tests the connection', { skip }, async () => {
  const pw = 'redispw-4f3e2d1c0b9a8f7e6d5c';
  const redis = await startRedis({ password: pw });
  const fake = await startFake({ name: 'f' });
  const conf = (url) => renderConfig({ workers: 1, networks: { eth: { endpoints: [{ id: 'a', url: fake.url }] } },
    extra: clusterLine(url, 'x') });

  const good = check(writeConfig(conf(redis.url())));
  assert.equal(good.status, 0, good.stderr);
  assert.match(good.stdout, /cluster\.redis redis:\/\/\*\*\*@127\.0\.0\.1:\d+\/0 answers: Redis 7/);

  const wrong = check(writeConfig(conf(`redis://:wrong-${pw}@127.0.0.1:${redis.port}/0`)));
  assert.equal(wrong.status, 1);
  assert.match(wrong.stderr, /Redis refused the password/);
  const none = check(writeConfig(conf(`redis://127.0.0.1:${redis.port}/0`)));
  assert.equal(none.status, 1);
  assert.match(none.stderr, /Redis wants a password/);
  const notRedis = check(writeConfig(conf(`redis://127.0.0.1:${fake.port}/0`)));
  assert.equal(notRedis.status, 1);
  assert.match(notRedis.stderr, /does not speak Redis/);
  const closed = check(writeConfig(conf(`redis://127.0.0.1:${await freePort()}/0`)));
  assert.equal(closed.status, 1, '--check --connect fails when nothing answers');
  assert.match(closed.stderr, /cannot connect .*refused/i);
  const baddb = check(writeConfig(conf(redis.url(99999))));
  assert.equal(baddb.status, 1);
  assert.match(baddb.stderr, /refused database 99999/);
  for (const out of [good, wrong, none, notRedis, closed, baddb])
    assert.ok(!(out.stdout + out.stderr).includes(pw), 'the password is never printed');

  // the same problems stop a real start (before any worker serves)
  await assert.rejects(startSluice(conf(`redis://:wrong-${pw}@127.0.0.1:${redis.port}/0`)), /refused the password/);
  await assert.rejects(startSluice(conf(`redis://127.0.0.1:${fake.port}/0`)), /does not speak Redis/);
});

test('config without cluster: behaves as before (no cluster in /readyz or /metrics)', async () => {
  const fake = await startFake({ name: 'f' });
  const s = await startSluice({ workers: 1, networks: { eth: { endpoints: [{ id: 'a', url: fake.url }] } } });
  const r = await adminGet(s, '/readyz');
  assert.equal(r.status, 200);
  assert.equal(r.json.cluster, undefined);
  assert.doesNotMatch((await adminGet(s, '/metrics')).text, /sluice_cluster/);
});

test('the Redis password never appears in logs, admin output, events or --check messages', { skip }, async () => {
  const pw = 'redis-secret-7a6b5c4d3e2f1a0b9c8d';
  const fake = await startFake({ name: 'f' });
  let redis = await startRedis({ password: pw });
  const env = { SLUICE_TEST_REDIS_PW: pw };
  const url = `redis://:\${SLUICE_TEST_REDIS_PW}@127.0.0.1:${redis.port}/0`;
  const cfg = renderConfig({ workers: 2, networks: { eth: { endpoints: [{ id: 'a', url: fake.url }] } },
    extra: `${clusterLine(url, 'sec')}\nlog: { level: debug }` });
  const s = await startSluice(cfg, { env });
  await waitMode(s, 'shared', 'start with the password');
  assert.match(redis.cli('CLIENT', 'LIST'), /cmd=/, 'sluice is connected (so it sent the password)');
  // Redis comes back with another password: every reconnect is refused
  const port = redis.port;
  await redis.stop();
  redis = await startRedis({ port, password: `other-${pw}` });
  await waitMode(s, 'degraded', 'password refused');
  await waitFor(() => /WRONGPASS|invalid password/i.test(s.logs()), { what: 'the refusal logged' });
  const outputs = [s.logs()];
  for (const p of ['/readyz', '/metrics', '/admin/events', '/admin/endpoints']) outputs.push((await adminGet(s, p)).text);
  const file = writeConfig(renderConfig({ workers: 1, networks: { eth: { endpoints: [{ id: 'a', url: fake.url }] } },
    extra: clusterLine(url, 'sec') }));
  const c = check(file, env);
  assert.equal(c.status, 1);
  assert.match(c.stderr, /refused the password/);
  outputs.push(c.stdout, c.stderr);
  const all = outputs.join('\n');
  assert.ok(all.includes('redis://***@127.0.0.1'), 'the URL is shown redacted');
  assert.ok(!all.includes(pw), 'the password appears nowhere');
  assert.ok(!all.includes('other-'), 'nor the one Redis expects now');
});
