import type { FastifyReply } from 'fastify';

/** Aborted when the client goes away before the answer is complete: the model call behind it stops. */
export function clientGoneSignal(reply: FastifyReply): AbortSignal {
  const abort = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) abort.abort();
  });
  return abort.signal;
}
