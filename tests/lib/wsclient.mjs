// tests/lib/wsclient.mjs: a raw JSON-RPC WebSocket client for the
// subscription tests. Every message is kept (with the time it came, `at`);
// next(pred) resolves with the next one not taken that matches, rpc() sends
// a call and waits for its answer, notes(sub) lists a subscription's
// notification results in order.
import { WebSocket } from 'ws';
import { call, waitFor, adminGet } from './harness.mjs';

// opts go to ws's WebSocket (localAddress: another 127.0.0.x, another caller).
export function openWs(url, opts) {
  const ws = new WebSocket(url, opts);
  const seen = [], waiters = [];
  ws.on('message', (d) => {
    const m = JSON.parse(d.toString());
    m.at = performance.now();
    seen.push(m);
    for (const w of [...waiters]) if (w.pred(m)) { waiters.splice(waiters.indexOf(w), 1); w.resolve(m); }
  });
  const opened = new Promise((r, j) => { ws.on('open', r); ws.on('error', j); });
  const next = (pred, ms = 5000) => {
    const have = seen.find((m) => !m.taken && pred(m));
    if (have) { have.taken = true; return Promise.resolve(have); }
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('no such message')), ms);
      waiters.push({ pred, resolve: (m) => { clearTimeout(t); m.taken = true; resolve(m); } });
    });
  };
  const rpc = (method, params, id) => { ws.send(JSON.stringify(call(method, params, id))); return next((m) => m.id === id); };
  const notes = (sub) => seen.filter((m) => m.params && m.params.subscription === sub).map((m) => m.params.result);
  return { ws, opened, next, rpc, notes, seen };
}

// /metrics is fed by the workers' counter flush: a moment behind
export const waitMetric = (s, re) => waitFor(async () => re.test((await adminGet(s, '/metrics')).text), { what: String(re) });
