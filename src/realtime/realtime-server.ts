import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gracefulCloser } from '../core/graceful-close.ts';
import type { RealtimeGateway } from './realtime-gateway.ts';

export interface RealtimeServer {
  /** The port it listens on (the one asked for, or the one given for 0). */
  port: number;
  close(): Promise<void>;
}

/**
 * The gateway's own port (REALTIME_PORT): a plain WebSocket server where every path upgrades,
 * as a direct connection works. Plain HTTP requests get 426.
 */
export async function startRealtimeServer(gateway: RealtimeGateway, opts: { host: string; port: number }): Promise<RealtimeServer> {
  const server = http.createServer((_req, res) => {
    res.writeHead(426, { 'content-type': 'text/plain; charset=utf-8', upgrade: 'websocket', connection: 'Upgrade' });
    res.end('this port serves the realtime WebSocket gateway\n');
  });
  server.on('upgrade', (req, socket, head) => gateway.handleUpgrade(req, socket, head));
  const closeServer = gracefulCloser(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () => closeServer(() => new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())))),
  };
}
