// GET /admin/config shows the whole effective configuration (issue 34):
// every section with the values sluice runs after defaults, each network's
// endpoints with their source (the file or POST /admin/endpoints), the keys
// by name; and no secret anywhere in the body: the admin token, the keys in
// upstream URLs (path, user-info, query), header values, the Redis password
// and the client keys' hashes the test put in the config are grepped for.
// Real processes: sluice, a fake provider, redis-server (with a password).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { startFake, startSluice, adminGet, waitFor } from '../lib/harness.mjs';
import { startRedis, redisAvailable } from '../lib/redis.mjs';

const TOKEN = 'config-admin-token-5e4d3c2b1a09';
const PATHKEY = 'PathKey0123456789abcdefXYZ';
const USERPW = 'UserPw9876zyxw';
const QUERYKEY = 'QueryKey55aa66bb77cc';
const HEADERVAL = 'HeaderVal-31415926abc';
const APIKEY = 'ApiAddedKey2718281828xyz';
const REDISPW = 'RedisPw-1618033988';
const CLIENTKEY = 'client-key-of-team-a-000111';
const sha = (k) => createHash('sha256').update(k).digest('hex');
const SECRETS = [TOKEN, PATHKEY, USERPW, QUERYKEY, HEADERVAL, APIKEY, REDISPW, CLIENTKEY, sha(CLIENTKEY)];

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });
let fake, redis, s;

before(async () => {
  fake = await startFake({ name: 'a' });
  started.push(fake);
  const extra = ['tiers: { pro: { per_second: 50 } }', 'keys:',
    `  - { sha256: "${sha(CLIENTKEY)}", tier: pro, name: team-a }`];
  if (redisAvailable()) {
    redis = await startRedis({ password: REDISPW });
    started.push(redis);
    extra.push(`cluster: { redis: "${redis.url()}", host: "cfg-host" }`);
  }
  const u = new URL(fake.url);
  s = await startSluice({
    admin: `{ listen: "127.0.0.1:0", token: "${TOKEN}" }`,
    networks: {
      eth: {
        endpoints: [
          { id: 'a', url: `http://probe:${USERPW}@${u.host}/v2/${PATHKEY}?api-key=${QUERYKEY}`,
            headers: `{ X-Api-Key: "${HEADERVAL}" }` },
          { id: 'plain', url: fake.url },
        ],
      },
    },
    extra: extra.join('\n'),
  });
  started.push(s);
});

const config = async () => {
  const r = await adminGet(s, '/admin/config', TOKEN);
  assert.equal(r.status, 200, r.text);
  return r;
};
const noSecret = (text) => { for (const x of SECRETS) assert.ok(!text.includes(x), `${x} in /admin/config: ${text}`); };

test('every section with its defaults, secrets left out', async () => {
  assert.equal((await adminGet(s, '/admin/config')).status, 401, 'the admin token is required');
  const { json: c, text } = await config();
  noSecret(text);
  assert.equal(c.server.max_batch, 100);
  assert.equal(c.server.max_body_bytes, 1048576);
  assert.equal(c.server.workers, 2);
  assert.equal(c.admin.token, true, 'set, never its value');
  assert.equal(c.cache.enabled, true);
  assert.equal(c.cache.max_mb, 256);
  assert.equal(c.state.path, s.statePath);
  assert.equal(c.log.level, 'info');
  assert.equal(c.access.anonymous, 'allow');
  assert.deepEqual(c.tiers.pro, { per_second: 50, per_minute: 0, per_day: 0 });
  assert.equal(c.keys.length, 1);
  assert.equal(c.keys[0].name, 'team-a');
  assert.equal(c.keys[0].tier, 'pro');
  assert.equal(c.keys[0].sha256, undefined);
  if (redis) {
    assert.equal(c.cluster.enabled, true);
    assert.equal(c.cluster.host, 'cfg-host');
    assert.match(c.cluster.redis, new RegExp(`127\\.0\\.0\\.1:${redis.port}`));
  }
  const eth = c.networks.find((n) => n.name === 'eth');
  assert.equal(eth.timeouts.request_ms, 30000);
  assert.equal(eth.ranking.probe_interval_ms, 2000);
  assert.equal(eth.breaker.cooldown_ms, 5000);
  assert.equal(eth.hedge.enabled, true);
  assert.equal(eth.chain_probe_ms, 0, "the harness's file turns it off");
  assert.deepEqual(eth.endpoints.map((e) => [e.id, e.source]), [['a', 'yaml'], ['plain', 'yaml']]);
  assert.deepEqual(eth.endpoints[0].headers, ['X-Api-Key']);
  assert.equal(eth.endpoints[1].max_inflight, 256);
  assert.ok(eth.endpoints[1].url.startsWith(fake.url), eth.endpoints[1].url);
  assert.ok(eth.endpoints[0].url.includes(new URL(fake.url).host), eth.endpoints[0].url);
  assert.deepEqual(c.added_at_run_time, []);
});

test('an endpoint added at run time shows as "api", its key redacted', async () => {
  const r = await fetch(`${s.admin}/admin/endpoints`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify({ network: 'eth', id: 'added', url: `${fake.url}/v3/${APIKEY}`, max_inflight: 9 }),
  });
  assert.equal(r.status, 201, await r.text());
  // an admin connection kept alive may reach a worker of the previous set for a moment
  let c, text;
  await waitFor(async () => {
    ({ json: c, text } = await config());
    return c.networks[0].endpoints.length === 3;
  }, { timeoutMs: 15000, what: '/admin/config of the new workers' });
  noSecret(text);
  const ep = c.networks[0].endpoints.find((e) => e.id === 'added');
  assert.equal(ep.source, 'api');
  assert.equal(ep.max_inflight, 9);
  assert.equal(ep.ranking, undefined);
  assert.equal(c.added_at_run_time.length, 1);
  assert.equal(c.added_at_run_time[0].applied, true);
  assert.equal(c.server.max_batch, 100, 'the rest of the config is still there');
});
