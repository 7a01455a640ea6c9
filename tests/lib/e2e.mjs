// tests/lib/e2e.mjs: helpers for the end-to-end tests (tests/e2e/) that the
// integration harness does not need: a real Ethereum dev node (anvil, from
// the @foundry-rs/anvil npm package in tests/node_modules), direct JSON-RPC
// calls that bypass sluice, hand-assembled EVM bytecode, base58, and a check
// that sluice stopped cleanly (no sanitizer report, no respawned worker).

import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const testsDir = path.resolve(here, '..');

// anvil's first dev account (default mnemonic "test test ... junk"): public knowledge.
export const DEV_KEY = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80';
export const DEV_ADDRESS = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266';
export const CHAIN_ID = 31337;

// The anvil executable itself. node_modules/.bin/anvil is a Node wrapper that
// spawns the real binary; SIGKILL on the wrapper would orphan the node, so
// the tests run the binary from the platform package directly.
export function anvilBin() {
  if (process.env.ANVIL_BIN) return process.env.ANVIL_BIN;
  const arch = { x64: 'amd64', arm64: 'arm64' }[process.arch] || process.arch;
  const pkg = `@foundry-rs/anvil-${process.platform}-${arch}`;
  const exe = process.platform === 'win32' ? 'anvil.exe' : 'anvil';
  const req = createRequire(path.join(testsDir, 'package.json'));
  const candidates = [];
  try { candidates.push(path.join(path.dirname(req.resolve(`${pkg}/package.json`)), 'bin', exe)); } catch { /* optional dependency skipped */ }
  // without the optional platform package, the wrapper's postinstall downloads the binary next to itself
  try { candidates.push(path.join(path.dirname(req.resolve('@foundry-rs/anvil/package.json')), exe)); } catch { /* not installed */ }
  const bin = candidates.find((c) => existsSync(c));
  if (!bin) throw new Error(`no anvil binary (${pkg}): run "cd tests && npm ci" first`);
  return bin;
}

const anvils = new Set();
process.on('exit', () => {
  for (const c of anvils) {
    try { c.kill('SIGKILL'); } catch { /* already gone */ }
  }
});

// Starts anvil on an ephemeral loopback port (automine: every transaction is
// mined at once). Resolves { name, url, port, child, logs(), kill(sig), exited }.
export function startAnvil({ name = 'anvil', args = [], timeoutMs = 20000 } = {}) {
  const argv = ['--host', '127.0.0.1', '--port', '0', '--chain-id', String(CHAIN_ID), ...args];
  return new Promise((resolve, reject) => {
    const child = spawn(anvilBin(), argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    anvils.add(child);
    let out = '';
    let done = false;
    const exited = new Promise((r) => child.once('exit', (code, signal) => { anvils.delete(child); r({ code, signal }); }));
    const timer = setTimeout(() => finish(new Error(`anvil ${name}: not listening within ${timeoutMs} ms\n${out}`)), timeoutMs);
    function finish(err, port) {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (err) {
        try { child.kill('SIGKILL'); } catch { /* ignore */ }
        reject(err);
        return;
      }
      resolve({
        name, port, child, exited,
        url: `http://127.0.0.1:${port}`,
        logs: () => out,
        kill: (sig = 'SIGKILL') => { child.kill(sig); return exited; },
      });
    }
    for (const s of [child.stdout, child.stderr]) {
      s.setEncoding('utf8');
      s.on('data', (d) => {
        out += d;
        if (out.length > 65536) out = out.slice(-32768);   // anvil logs every call: keep the tail
        const m = !done && out.match(/Listening on [\d.]+:(\d+)/);
        if (m) finish(null, Number(m[1]));
      });
    }
    child.once('exit', (code, sig) => finish(new Error(`anvil ${name} exited (${code ?? sig}) before listening:\n${out}`)));
  });
}

// One JSON-RPC call straight to a node (not through sluice); throws on a
// JSON-RPC error, with .rpc holding the error object.
let directId = 1000;
export async function rpc(url, method, params = []) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: directId++, method, params }),
  });
  const body = await res.json();
  if (body.error) {
    const e = new Error(`${method}: ${body.error.message}`);
    e.rpc = body.error;
    throw e;
  }
  return body.result;
}

// Init code that deploys `runtime` (hex, no 0x) as a contract's code:
// CODECOPY(0, initLen, len); RETURN(0, len).
export function deployCode(runtimeHex) {
  const len = runtimeHex.length / 2;
  if (len > 0xff) throw new Error('runtime too long for this tiny constructor');
  const b = (n) => n.toString(16).padStart(2, '0');
  // 12 bytes: PUSH1 len, PUSH1 12, PUSH1 0, CODECOPY, PUSH1 len, PUSH1 0, RETURN
  const init = `60${b(len)}600c60003960${b(len)}6000f3`;
  return `0x${init}${runtimeHex}`;
}

// Runtime code that ignores its input and always reverts with `dataHex`
// (hex, no 0x) as revert data: CODECOPY(0, 12, len); REVERT(0, len).
export function revertingRuntime(dataHex) {
  const len = dataHex.length / 2;
  if (len > 0xff) throw new Error('revert data too long for this tiny runtime');
  const b = (n) => n.toString(16).padStart(2, '0');
  return `60${b(len)}600c60003960${b(len)}6000fd${dataHex}`;
}

// ABI encoding of Error(string): selector 0x08c379a0, offset, length, bytes (hex, no 0x).
export function errorStringData(reason) {
  const bytes = Buffer.from(reason, 'utf8');
  if (bytes.length > 32) throw new Error('keep the reason within one word');
  const word = (n) => n.toString(16).padStart(64, '0');
  return '08c379a0' + word(32) + word(bytes.length) + bytes.toString('hex').padEnd(64, '0');
}

// Base58 (Bitcoin alphabet), as Solana writes signatures and hashes.
const B58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
export function base58(bytes) {
  let n = 0n;
  for (const x of bytes) n = n * 256n + BigInt(x);
  let s = '';
  while (n > 0n) { s = B58[Number(n % 58n)] + s; n /= 58n; }
  for (const x of bytes) { if (x !== 0) break; s = '1' + s; }
  return s;
}

// Lines of sluice's log that mean it misbehaved whatever the clients saw: a
// sanitizer report (the ASan build runs these tests too) or a worker that
// died and was respawned.
export function sluiceTrouble(sluice) {
  return sluice.logs().split('\n').filter((l) => /AddressSanitizer|LeakSanitizer|runtime error:|respawning in/.test(l));
}

// Stops sluice (SIGTERM) and returns what went wrong: trouble in its log, or
// an exit other than 0. An empty list means a clean run.
export async function stopSluiceCleanly(sluice) {
  const { code, signal } = await sluice.stop('SIGTERM');
  const trouble = sluiceTrouble(sluice);
  if (code !== 0) trouble.push(`sluice exited with ${code ?? signal}`);
  return trouble;
}
