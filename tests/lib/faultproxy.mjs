// tests/lib/faultproxy.mjs: a TCP proxy in front of one upstream (HTTP and
// WebSocket alike: it forwards bytes), which a test can kill (every open
// connection reset, new ones refused) or stall (bytes held in both
// directions, connections left open) and bring back. Used by the e2e tests
// that fail an upstream while clients are subscribed.

import net from 'node:net';

// Listens on an ephemeral loopback port; resolves
// { port, url, kill(), stall(), resume(), close(), connections() }.
export async function startFaultProxy(target) {
  const { hostname, port: targetPort } = new URL(target);
  const socks = new Set();
  let stalled = false;
  let killed = false;
  const server = net.createServer((client) => {
    if (killed) { client.destroy(); return; }
    const up = net.connect(Number(targetPort), hostname);
    const pair = { client, up };
    socks.add(pair);
    const drop = () => { client.destroy(); up.destroy(); socks.delete(pair); };
    for (const [from, to] of [[client, up], [up, client]]) {
      from.on('data', (d) => { if (!stalled) to.write(d); }); // a stall drops what comes: the peer waits forever
      from.on('error', drop);
      from.on('close', drop);
    }
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const port = server.address().port;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    wsUrl: `ws://127.0.0.1:${port}`,
    connections: () => socks.size,
    // every connection reset now, and every new one too, until resume()
    kill() {
      killed = true;
      for (const { client, up } of socks) { client.resetAndDestroy?.() ?? client.destroy(); up.destroy(); }
      socks.clear();
    },
    // connections stay open, nothing passes either way, until resume()
    stall() { stalled = true; },
    resume() { stalled = false; killed = false; },
    close() {
      killed = true;
      for (const { client, up } of socks) { client.destroy(); up.destroy(); }
      return new Promise((r) => server.close(r));
    },
  };
}
