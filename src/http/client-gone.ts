import type { Socket } from 'node:net';
import type { FastifyReply } from 'fastify';

/** Each connection's signal: in a WeakMap, not a property of the socket, whose added property would change its shape under Node's own optimised code. */
const gone = new WeakMap<Socket, AbortSignal>();

/**
 * What every connection's signal aborts with. Made once: a connection's close aborts its signal
 * whether a call still listens or not, and a DOMException made then (its stack captured) cost
 * each closed connection more than the signal itself.
 */
const CLIENT_GONE = new DOMException('The client went away', 'AbortError');

/**
 * Aborted when the client goes away before the answer is complete (its connection closes): the
 * model call behind it stops. One signal per connection, which its calls share one after another,
 * not one per call: a new AbortController per call costs more than the rest of routing, and on
 * Node 20 every AbortSignal outlives the young generation. Whatever listens to it stops listening
 * when its call ends (retry-gate.ts, upstream-client.ts), so a long-lived connection gathers nothing.
 */
export function clientGoneSignal(reply: FastifyReply): AbortSignal {
  const socket = reply.raw.socket;
  if (!socket || socket.destroyed) return AbortSignal.abort();
  let signal = gone.get(socket);
  if (!signal) {
    const controller = new AbortController();
    socket.once('close', () => controller.abort(CLIENT_GONE));
    signal = controller.signal;
    gone.set(socket, signal);
  }
  return signal;
}
