import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Admission, LimitsService } from '../../limits/limits-service.ts';
import { rateHeaders } from '../../limits/limits-service.ts';
import { inSpan } from '../../telemetry/tracing.ts';
import { bodyHashOf, idempotencyKeyOf, type IdempotencyService, type IdempotentStart } from '../../limits/idempotency.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The call's admission under limits, on every /v1 and /openai/v1 route; null elsewhere. */
    admission: Admission | null;
    /** The idempotency key this call holds as the first under it. */
    idempotent: Extract<IdempotentStart, { kind: 'first' }> | null;
  }
}

/** The API surfaces admission covers; a route registered under one of them is admitted with no more work. */
const ADMITTED_PREFIXES = ['/v1/', '/openai/v1/'];
/** Chat and agent calls: they count tokens. */
const COUNTS_TOKENS = /\/(chat\/completions|responses)$/;

function headerText(reply: FastifyReply, name: string): string | undefined {
  const value = reply.raw.getHeader(name);
  return typeof value === 'string' ? value : undefined;
}

function bodyObject(request: FastifyRequest): Record<string, unknown> | undefined {
  const body = request.body;
  return body !== null && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : undefined;
}

/**
 * Admission, the one pipeline every API call passes after auth: the idempotency key (a retry
 * replays the first answer), then the caller's limits (429, or what the call holds), then the
 * route. When the answer ends (sent, failed, or cut off by the client) the call is settled once,
 * unless it created a task, which settles at its own end.
 */
export function registerAdmission(app: FastifyInstance, deps: { limits: LimitsService; idempotency: IdempotencyService }): void {
  app.decorateRequest('admission', null);
  app.decorateRequest('idempotent', null);

  // Before validation: an invalid call counts against the request rate too, and the body is hashed as sent.
  app.addHook('preValidation', async (request, reply) => {
    const url = request.routeOptions.url;
    const principal = request.principal;
    if (url === undefined || !principal || !ADMITTED_PREFIXES.some((p) => url.startsWith(p))) return;
    const endpoint = `${request.method} ${url}`;
    if (request.method === 'POST') {
      const key = idempotencyKeyOf(request.headers['idempotency-key']);
      if (key !== undefined) {
        const start = await deps.idempotency.start(principal.userId, endpoint, key, bodyHashOf(request.body));
        if (start.kind === 'replay') {
          reply.code(start.status).header('idempotent-replayed', 'true');
          if (start.contentType) reply.type(start.contentType);
          return reply.send(start.body);
        }
        request.idempotent = start;
      }
    }
    const admission = await inSpan('gengate.admission', () => ({ attributes: { 'gengate.endpoint': endpoint, 'enduser.id': principal.userId } }), () =>
      deps.limits.admit(principal, request.id, { endpoint, body: bodyObject(request), countsTokens: COUNTS_TOKENS.test(url) }),
    );
    request.admission = admission;
    if (admission.rate) reply.headers(rateHeaders(admission.rate));
    reply.raw.once('close', () => {
      void admission.end(reply.raw.statusCode, headerText(reply, 'x-gengate-provider'), headerText(reply, 'x-gengate-channel'));
      // A streamed answer is not kept: its key is freed for another try.
      const held = request.idempotent;
      if (held) {
        request.idempotent = null;
        void deps.idempotency.finish(held.at, held.createdAt, reply.raw.statusCode, null, undefined).catch((err: unknown) => request.log.warn({ err }, 'freeing an idempotency key failed'));
      }
    });
  });

  // The first answer under a key is kept before it goes out, so a retry arriving right after finds it.
  app.addHook('onSend', async (request, reply, payload) => {
    const held = request.idempotent;
    if (!held) return payload;
    request.idempotent = null;
    const body = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : undefined;
    const contentType = reply.getHeader('content-type');
    await deps.idempotency.finish(held.at, held.createdAt, reply.statusCode, typeof contentType === 'string' ? contentType : null, body).catch((err: unknown) => request.log.warn({ err }, 'keeping an idempotent answer failed'));
    return payload;
  });
}
