// A flood of made-up identities cannot switch client limits off: random IPv6
// X-Forwarded-For addresses (each its own /64) on a 16 MB map. Limit cells
// are capped and evicted, so a fresh client still gets exactly its 5/s, and
// a client that was there all along is held to its limit throughout.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { startFake, startSluice, tempDir, post, call, sleep, adminGet, events } from '../lib/harness.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const STD = (id = 1) => call('eth_call', [{ to: '0x0000000000000000000000000000000000000001' }, 'latest'], id);

// wrk with a random IPv6 X-Forwarded-For per request, for `seconds`;
// resolves with wrk's summary ("N requests in T s").
function flood(url, seconds) {
  const script = path.join(tempDir(), 'flood.lua');
  writeFileSync(script, `
local body = '${JSON.stringify(STD())}'
local n = 0
setup = function(thread) n = n + 1; thread:set("seed", n) end
init = function() math.randomseed(os.time() * 7919 + seed) end
request = function()
  local ip = string.format("2001:%x:%x:%x:%x:%x:%x:%x", math.random(0, 65535), math.random(0, 65535),
    math.random(0, 65535), math.random(0, 65535), math.random(0, 65535), math.random(0, 65535), math.random(0, 65535))
  return wrk.format("POST", nil, { ["Content-Type"] = "application/json", ["X-Forwarded-For"] = ip }, body)
end
`);
  return new Promise((resolve, reject) => {
    const child = spawn('wrk', ['-t2', '-c32', `-d${seconds}s`, '-s', script, url], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { out += d; });
    child.on('error', (e) => reject(new Error(`wrk is needed for this test (deploy/install-deps.sh installs it): ${e.message}`)));
    child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`wrk exited ${code}: ${out}`))));
  });
}

// A burst of `n` calls from one identity at once; { ok: 200s, ms: how long it took }.
async function burst(url, ip, n) {
  const t = Date.now();
  const rs = await Promise.all(Array.from({ length: n }, (_, i) => post(url, STD(i), { 'x-forwarded-for': ip })));
  return { ok: rs.filter((r) => r.status === 200).length, ms: Date.now() - t };
}

test('random IPv6 X-Forwarded-For identities on a 16 MB map do not switch a 5/s limit off', { timeout: 170000 }, async () => {
  const a = await startFake({ name: 'a' });
  started.push(a);
  const dir = tempDir();
  const s = await startSluice(`server: { listen: "127.0.0.1:0", workers: 2, trusted_proxies: ["127.0.0.1/32"], access_log: false }
admin: { listen: "127.0.0.1:0" }
state: { path: "${dir}/state", map_size_mb: 16 }
tiers: { anonymous: { per_second: 5, per_minute: 200, per_day: 1000 } }
networks: { eth: { ranking: { probe_interval_ms: 0 }, endpoints: ["${a.url}"] } }
`);
  started.push(s);
  const url = s.url('eth');
  const t0 = Date.now();
  // the old code keeps a cell per identity and window (three here) and fills
  // 16 MB after about 60,000 identities; wrk sends more than that in 20 s
  const floodDone = flood(url, Number(process.env.FLOOD_SECONDS || 20));
  // a client that was there before the flood: never more than its 5 per second
  const steady = [];
  let flooding = true;
  floodDone.then(() => { flooding = false; });
  while (flooding) {
    steady.push(await burst(url, '192.0.2.7', 8));
    await sleep(1100);
  }
  const seen = await floodDone;
  const floodSecs = (Date.now() - t0) / 1000;
  console.log(`flood: ${(seen.match(/\d+ requests in [\d.]+\w+/) || [seen])[0]} (${floodSecs.toFixed(1)} s); steady client: ${steady.map((b) => b.ok)}`);
  // a fresh identity after the flood gets exactly its limit
  const fresh = await burst(url, '198.51.100.9', 8);
  assert.equal(fresh.ok, 5, `a fresh client got ${fresh.ok} of 8 calls in one burst (its limit is 5/s)`);
  // 5 at once, and one more per 200 ms the burst took to send: eviction
  // takes the cell owing the fewest calls (a flood identity's day cell owes
  // one), never the steady client's per-second cell owing its burst
  const over = steady.filter((b) => b.ok > 5 + Math.floor(b.ms / 200));
  assert.deepEqual(over, [], `the steady client was held to 5/s throughout: ${JSON.stringify(steady)}`);
  assert.ok(steady.filter((b) => b.ok >= 5).length >= steady.length - 1, `the steady client got its 5: ${JSON.stringify(steady)}`);
  // the cells stayed within their share of the map, so nothing else failed
  const m = (await adminGet(s, '/metrics')).text;
  const used = Number(m.match(/^sluice_state_map_used_bytes (\d+)/m)[1]);
  assert.ok(used < 0.6 * 16 * 1024 * 1024, `the map holds ${used} bytes of 16 MB`);
  const metric = (name) => Number(m.match(new RegExp(`^${name} (\\d+)`, 'm'))[1]);
  assert.equal(metric('sluice_limit_cells_max'), 16 * 2048);
  assert.ok(metric('sluice_limit_cells') <= 16 * 2048, `${metric('sluice_limit_cells')} cells`);
  assert.match(m, /^sluice_state_degraded_workers\{part="limits"\} 0$/m);
  assert.doesNotMatch(s.logs(), /map is full/);
  assert.deepEqual((await events(s)).filter((e) => e.kind === 'state_degraded'), [], 'shared state never failed');
});
