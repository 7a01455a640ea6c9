// tests/lib/redis.mjs: a real redis-server for the cluster tests.
//
// Each test starts its own on a free loopback port, without persistence
// (--save '' --appendonly no), and kills it when the file's tests are done.
// SLUICE_REQUIRE_ALL=1 (CI) makes a missing redis-server a failure instead
// of a skip.
import { spawn, spawnSync } from 'node:child_process';
import net from 'node:net';
import { after } from 'node:test';

const started = new Set();
after(async () => {
  for (const r of started) await r.stop();
});
process.on('exit', () => {
  for (const r of started) { try { r.child.kill('SIGKILL'); } catch { /* gone */ } }
});

export function redisAvailable() {
  const ok = spawnSync('redis-server', ['--version'], { encoding: 'utf8' }).status === 0;
  if (!ok && process.env.SLUICE_REQUIRE_ALL === '1') throw new Error('redis-server is not installed (SLUICE_REQUIRE_ALL=1)');
  return ok;
}

export async function freePort() {
  const srv = net.createServer();
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  return port;
}

// Starts redis-server; { port, url(db), cli(...args), stop(), kill(), pause(), resume(), restart() }.
export async function startRedis({ port, password, extra = [] } = {}) {
  port = port || await freePort();
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...extra];
  if (password) args.push('--requirepass', password);
  const r = { port, password, child: null };
  const launch = async () => {
    const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    r.child = child;
    r.exited = new Promise((res) => child.once('exit', res));
    let out = '';
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`redis-server did not start:\n${out}`)), 10000);
      child.stdout.setEncoding('utf8');
      child.stdout.on('data', (d) => {
        out += d;
        if (out.includes('Ready to accept connections')) { clearTimeout(timer); resolve(); }
      });
      child.once('exit', (code) => { clearTimeout(timer); reject(new Error(`redis-server exited (${code}):\n${out}`)); });
    });
    child.stdout.resume();
  };
  await launch();
  started.add(r);
  r.url = (db = 0) => `redis://${password ? `:${password}@` : ''}127.0.0.1:${port}/${db}`;
  r.cli = (...cmd) => {
    const a = ['-p', String(port), '--no-auth-warning'];
    if (password) a.push('-a', password);
    const res = spawnSync('redis-cli', [...a, ...cmd], { encoding: 'utf8' });
    return res.stdout.trim();
  };
  r.kill = async () => { if (r.child && r.child.exitCode === null) { r.child.kill('SIGKILL'); await r.exited; } };
  r.stop = async () => { try { process.kill(r.child.pid, 'SIGCONT'); } catch { /* gone */ } await r.kill(); started.delete(r); };
  r.pause = () => process.kill(r.child.pid, 'SIGSTOP');
  r.resume = () => process.kill(r.child.pid, 'SIGCONT');
  r.restart = async () => { await r.kill(); await launch(); };
  return r;
}
