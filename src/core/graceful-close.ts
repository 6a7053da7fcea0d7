import type { IncomingMessage, Server } from 'node:http';
import type { Socket } from 'node:net';

/** How often a closing server's connections are looked at again. */
const SWEEP_MS = 50;

/**
 * Returns a close for `server` that lets the requests under way finish and ends every other
 * connection: `close` stops the server listening and resolves once its connections are gone (the
 * server's own close, or Fastify's, which runs its hooks too).
 *
 * Node ends the idle keep-alive connections once, when the server stops listening. A reply still
 * under way then (a file streaming, a stream ending) leaves its connection open for the keep-alive
 * timeout (72 s), so each connection is ended once it goes idle. A connection that never sent a
 * request (a client's preconnect, a spare socket a pool opened under a burst) is not idle to Node
 * at all: it stays until the headers timeout, 60 to 90 s, so those are ended too.
 */
export function gracefulCloser(server: Server): (close: () => Promise<void>) => Promise<void> {
  const withoutRequest = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    withoutRequest.add(socket);
    socket.once('close', () => withoutRequest.delete(socket));
  });
  server.on('request', (req: IncomingMessage) => withoutRequest.delete(req.socket));
  return async (close) => {
    const sweep = setInterval(() => {
      if (server.listening) return;
      server.closeIdleConnections();
      for (const socket of withoutRequest) socket.destroy();
    }, SWEEP_MS);
    try {
      await close();
    } finally {
      clearInterval(sweep);
    }
  };
}
