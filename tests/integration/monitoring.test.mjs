// What an operator's monitoring reads: the concurrency each endpoint actually
// reached (each worker's peak summed across workers, bounded by max_inflight),
// and deploy/prometheus/alerts.yml and deploy/grafana/sluice.json checked with
// promtool, a JSON schema, and against the metrics a live sluice exposes (a
// rule or panel over a metric sluice does not have fails here).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startFake, startSluice, post, postFresh, call, waitFor, adminGet, tempDir, SRC } from '../lib/harness.mjs';

const started = [];
after(async () => { await Promise.all(started.map((p) => p.stop())); });

const ALERTS = path.join(SRC, 'deploy/prometheus/alerts.yml');
const ALERT_TESTS = path.join(SRC, 'deploy/prometheus/alerts.test.yml');
const DASHBOARD = path.join(SRC, 'deploy/grafana/sluice.json');
const SCHEMA = path.join(SRC, 'deploy/grafana/dashboard.schema.json');
const PYTHON = '/usr/bin/python3'; // Debian's, where python3-jsonschema installs

// tests/run-all.sh installs every tool and sets SLUICE_REQUIRE_ALL: there a
// missing one fails the test; by hand it may skip.
function need(t, what, ok) {
  if (ok) return true;
  if (process.env.SLUICE_REQUIRE_ALL === '1') assert.fail(`${what} is not installed (deploy/install-deps.sh installs it)`);
  t.skip(`${what} is not installed`);
  return false;
}
const has = (cmd, args) => spawnSync(cmd, args, { encoding: 'utf8' }).status === 0;
const havePromtool = () => has('promtool', ['--version']);
const haveJsonschema = () => has(PYTHON, ['-c', 'import jsonschema']);

function run(cmd, args, input) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', input });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

// value of one series of a Prometheus exposition, or undefined
function sample(text, name, labels) {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`).join(',');
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${want}}`) || l.startsWith(`${name}{${want},`));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

async function slowGateway(maxInflight, endpoints2 = false) {
  const a = await startFake({ name: 'a' });
  started.push(a);
  const eps = [{ id: 'a', url: a.url, max_inflight: maxInflight }];
  let b;
  if (endpoints2) {
    b = await startFake({ name: 'b' });
    started.push(b);
    eps.push({ id: 'b', url: b.url });
  }
  // probes off: a probe in flight would count; every call at the provider on its own (the
  // identical reads would share one upstream call, a slow one would be hedged to b)
  const s = await startSluice({ workers: 2, networks: { eth: {
    lines: ['ranking: { probe_interval_ms: 0 }', 'coalesce: { max_waiters: 0 }', 'hedge: { enabled: false }'], endpoints: eps } } });
  started.push(s);
  return { a, b, s };
}

const reached = async (s, id) => (await adminGet(s, '/admin/endpoints')).json.find((e) => e.id === id).concurrency_reached;

test('concurrency reached: 6 slow calls at once reach 6, summed over both workers', async () => {
  const { a, s } = await slowGateway(100);
  assert.equal(await reached(s, 'a'), 0, 'nothing in flight yet');
  await a.setMode('slow', { delay_ms: 600 });
  // new connections: the kernel spreads them over the two workers
  const rs = await Promise.all(Array.from({ length: 6 }, (_, i) => postFresh(s.url('eth'), call('eth_blockNumber', [], i))));
  assert.ok(rs.every((r) => r.status === 200), JSON.stringify(rs.map((r) => r.status)));
  assert.equal((await a.stats()).max_concurrent, 6, 'the six were at the provider at once');
  await waitFor(async () => (await reached(s, 'a')) === 6, { what: 'concurrency_reached 6 in /admin/endpoints' });
  // the in-flight level falls back to 0 with the next flush; the peak stays
  const m = await waitFor(async () => {
    const text = (await adminGet(s, '/metrics')).text;
    return sample(text, 'sluice_upstream_inflight', { network: 'eth', endpoint: 'a' }) === 0 && text;
  }, { what: 'nothing in flight' });
  assert.equal(sample(m, 'sluice_upstream_concurrency_reached', { network: 'eth', endpoint: 'a' }), 6);
  assert.equal(sample(m, 'sluice_upstream_max_inflight', { network: 'eth', endpoint: 'a' }), 100);
  // a peak, not a level: later calls one at a time leave it at 6
  await a.setMode('ok');
  for (let i = 0; i < 3; i++) assert.equal((await post(s.url('eth'), call('eth_chainId'))).status, 200);
  await new Promise((r) => setTimeout(r, 300)); // two flushes
  // (peaks are per worker, summed: if the kernel gave all six to one worker,
  // the other's peak becomes 1 with these, so 7; a level would be 9)
  const later = await reached(s, 'a');
  assert.ok(later === 6 || later === 7, `concurrency reached ${later} after three calls one at a time`);
});

test('concurrency reached is bounded by max_inflight: 20 calls at max_inflight 4 over 2 workers reach exactly 4', async () => {
  const { a, b, s } = await slowGateway(4, true);
  await a.setMode('slow', { delay_ms: 800 });
  const rs = await Promise.all(Array.from({ length: 20 }, (_, i) => postFresh(s.url('eth'), call('eth_blockNumber', [], i))));
  assert.ok(rs.every((r) => r.status === 200));
  const sa = await a.stats();
  assert.ok(sa.max_concurrent <= 4, `a saw ${sa.max_concurrent} at once`);
  assert.equal(sa.requests + (await b.stats()).requests, 20, 'what a could not take went to b');
  // each worker filled its share (2): the sum is 4, never more
  await waitFor(async () => (await reached(s, 'a')) === 4, { what: 'concurrency_reached 4' });
  const m = (await adminGet(s, '/metrics')).text;
  assert.equal(sample(m, 'sluice_upstream_concurrency_reached', { network: 'eth', endpoint: 'a' }), 4);
  assert.equal(sample(m, 'sluice_upstream_max_inflight', { network: 'eth', endpoint: 'a' }), 4);
  assert.ok(await reached(s, 'b') >= 1);
});

test('alerts: promtool check rules, and the rules unit tests fire each alert when they should', (t) => {
  if (!need(t, 'promtool (Debian prometheus)', havePromtool())) return;
  const check = run('promtool', ['check', 'rules', ALERTS]);
  assert.equal(check.status, 0, check.out);
  assert.match(check.out, /SUCCESS: 6 rules found/);
  const unit = run('promtool', ['test', 'rules', ALERT_TESTS]);
  assert.equal(unit.status, 0, unit.out);
  const names = [...readFileSync(ALERTS, 'utf8').matchAll(/^\s*- alert: (\w+)/gm)].map((m) => m[1]);
  const tested = new Set([...readFileSync(ALERT_TESTS, 'utf8').matchAll(/alertname: (\w+)/g)].map((m) => m[1]));
  assert.deepEqual(names.filter((n) => !tested.has(n)), [], 'every alert has a rules test');
  for (const want of ['SluiceBreakerOpen', 'SluiceNetworkOnLastEndpoint', 'SluiceNetworkDown', 'SluiceCreditBudgetLow',
    'SluiceNetworkPressureCritical'])
    assert.ok(names.includes(want), `an alert ${want}`);
});

function dashboard() { return JSON.parse(readFileSync(DASHBOARD, 'utf8')); }
// Every PromQL expression of the dashboard: panel targets and variable queries.
function dashboardExprs(d) {
  const out = [];
  for (const p of d.panels) for (const tg of p.targets || []) out.push(tg.expr);
  for (const v of d.templating.list) if (v.type === 'query') out.push(v.query.query ?? v.query);
  return out;
}

test('dashboard: valid against its JSON schema (which refuses a broken one), a grid that fits, unique ids', (t) => {
  if (!need(t, 'python3-jsonschema', haveJsonschema())) return;
  const validate = (file) => run(PYTHON, ['-c', `import json, sys, jsonschema
jsonschema.Draft7Validator(json.load(open(sys.argv[1]))).validate(json.load(open(sys.argv[2])))`, SCHEMA, file]);
  const ok = validate(DASHBOARD);
  assert.equal(ok.status, 0, ok.out);
  // the check can fail: a target without expr, a panel wider than the grid
  const broken = dashboard();
  delete broken.panels.find((p) => p.targets).targets[0].expr;
  broken.panels[1].gridPos.w = 25;
  const file = path.join(tempDir(), 'broken.json');
  writeFileSync(file, JSON.stringify(broken));
  const bad = validate(file);
  assert.notEqual(bad.status, 0, 'a broken dashboard passes the schema');
  assert.match(bad.out, /ValidationError/);

  const d = dashboard();
  const ids = d.panels.map((p) => p.id);
  assert.equal(new Set(ids).size, ids.length, 'panel ids are unique');
  for (const p of d.panels) assert.ok(p.gridPos.x + p.gridPos.w <= 24, `${p.title} fits in 24 columns`);
  const titles = d.panels.map((p) => p.title);
  for (const want of ['Requests by outcome', 'Failovers by endpoint', 'Breaker state', 'Credit budget left',
    'In flight, concurrency reached and max', 'Pressure level', 'Pressure utilisation'])
    assert.ok(titles.includes(want), `a panel "${want}"`);
});

test('every metric the alerts and the dashboard use is on a live sluice; promtool parses every expression and lints /metrics', async (t) => {
  if (!need(t, 'promtool (Debian prometheus)', havePromtool())) return;
  const a = await startFake({ name: 'a' }), b = await startFake({ name: 'b' });
  started.push(a, b);
  // two networks: the pressure panels draw one series per network
  const s = await startSluice({ workers: 2, networks: { eth: { endpoints: [
    { id: 'a', url: a.url, cost_profile: 'flat', credits: '{ per_day: 100000, per_second: 100 }' }, { id: 'b', url: b.url }] },
  l2: { endpoints: [{ id: 'c', url: b.url }] } } });
  started.push(s);
  // zero request counters are left out of /metrics: make some (flushed within ~100 ms)
  for (let i = 0; i < 3; i++) assert.equal((await post(s.url('eth'), call('eth_chainId', [], i))).status, 200);
  const m = await waitFor(async () => {
    const text = (await adminGet(s, '/metrics')).text;
    return text.includes('sluice_requests_total{') && text;
  }, { what: 'request counters on /metrics' });
  const lint = run('promtool', ['check', 'metrics'], m);
  assert.equal(lint.status, 0, `promtool check metrics:\n${lint.out}`);
  const exposed = new Set(m.split('\n').filter((l) => l && !l.startsWith('#')).map((l) => l.match(/^[a-zA-Z_:][a-zA-Z0-9_:]*/)[0]));

  // only rules count, not what the comments name
  const alertText = readFileSync(ALERTS, 'utf8').split('\n').filter((l) => !/^\s*#/.test(l)).join('\n');
  const exprs = dashboardExprs(dashboard());
  const used = new Set([...`${alertText}\n${exprs.join('\n')}`.matchAll(/\bsluice_[a-z0-9_]+/g)].map((x) => x[0]));
  assert.ok(used.size >= 12, `names found: ${[...used]}`);
  assert.deepEqual([...used].filter((n) => !exposed.has(n)), [], 'metrics the alerts or dashboard use but sluice does not expose');
  for (const n of ['sluice_upstream_concurrency_reached', 'sluice_credits_budget', 'sluice_breaker_state', 'sluice_requests_total',
    'sluice_pressure_level', 'sluice_pressure_utilisation'])
    assert.ok(used.has(n), `${n} is used`);

  // the dashboard's PromQL, with Grafana's variables filled in, as recording rules
  const rules = exprs.map((e, i) => {
    // label_values(selector, label) is Grafana's, over a PromQL selector
    const q = e.replaceAll('$__rate_interval', '5m').replaceAll('$network', '.*')
      .replace(/^label_values\((.+), *\w+\)$/, '$1');
    assert.ok(!q.includes('$'), `an unknown variable in ${e}`);
    return `      - record: dashboard:expr_${i}\n        expr: ${JSON.stringify(q)}`;
  });
  const file = path.join(tempDir(), 'dashboard-exprs.yml');
  writeFileSync(file, `groups:\n  - name: dashboard\n    rules:\n${rules.join('\n')}\n`);
  const parsed = run('promtool', ['check', 'rules', file]);
  assert.equal(parsed.status, 0, `a dashboard expression does not parse:\n${parsed.out}`);
  assert.match(parsed.out, new RegExp(`SUCCESS: ${exprs.length} rules found`));

  // the pressure panels over what this sluice exports: one series per network,
  // with the level /admin/networks shows, named as the metric's HELP names it
  const panel = (title) => dashboard().panels.find((p) => p.title === title);
  const help = m.match(/^# HELP sluice_pressure_level .*$/m)[0];
  const names = Object.fromEntries([...help.matchAll(/(\d+) (\w+)/g)].map((x) => [x[1], x[2]]));
  assert.deepEqual(names, { 0: 'ok', 1: 'elevated', 2: 'critical' }, help);
  const mapping = panel('Pressure level').fieldConfig.defaults.mappings[0].options;
  assert.deepEqual(Object.fromEntries(Object.entries(mapping).map(([k, v]) => [k, v.text])), names,
    'the panel names the levels as sluice numbers them');
  const nets = (await adminGet(s, '/admin/networks')).json;
  assert.deepEqual(nets.map((n) => n.network), ['eth', 'l2']);
  const code = Object.fromEntries(Object.entries(names).map(([k, v]) => [v, Number(k)]));
  const series = (metric) => m.split('\n').filter((l) => l.startsWith(`${metric}{`))
    .map((l) => `      - series: '${l.slice(0, l.lastIndexOf(' '))}'\n        values: '${l.slice(l.lastIndexOf(' ') + 1)}x4'`);
  const evalOf = (title, want) => `      - expr: ${JSON.stringify(panel(title).targets[0].expr.replaceAll('$network', '.*'))}
        eval_time: 30s
        exp_samples:
${want.map(([labels, v]) => `          - labels: '${labels}'\n            value: ${v}`).join('\n')}`;
  const perNet = (metric, value) => nets.map((n) => [`{network="${n.network}"}`, value(n)]);
  const unit = path.join(tempDir(), 'pressure-panels.test.yml');
  writeFileSync(unit, `evaluation_interval: 15s
tests:
  - interval: 15s
    input_series:
${[...series('sluice_pressure_level'), ...series('sluice_pressure_utilisation')].join('\n')}
    promql_expr_test:
${evalOf('Pressure level', perNet('sluice_pressure_level', (n) => code[n.level]))}
${evalOf('Pressure utilisation', perNet('sluice_pressure_utilisation', (n) => sample(m, 'sluice_pressure_utilisation', { network: n.network })))}
`);
  const evaluated = run('promtool', ['test', 'rules', unit]);
  assert.equal(evaluated.status, 0, `the pressure panels over the live series:\n${evaluated.out}\n${readFileSync(unit, 'utf8')}`);
});
