import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Multipart, MultipartFile } from '@fastify/multipart';
import type { LimitsService } from '../../limits/limits-service.ts';
import { rateHeaders } from '../../limits/limits-service.ts';
import { inSpan } from '../../telemetry/tracing.ts';
import type { TurnPacer } from '../../core/turn-pacer.ts';
import { bodyHashOf, FormFingerprint, idempotencyKeyOf, IdempotentReplay, type IdempotencyService, type IdempotentStart } from '../../limits/idempotency.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The name limits and the ledger give this route's calls (a surface's own endpoint name, e.g.
     * `anthropic.messages`), instead of its path.
     */
    callName?: string;
    /** The route's calls count tokens (chat-like); by default chat completions and responses do. */
    countsTokens?: boolean;
  }
}

/** Chat and agent calls: they count tokens. */
export const COUNTS_TOKENS = /\/(chat\/completions|responses)$/;

/** Sends the kept answer of the first call under a key. */
export function sendReplay(reply: FastifyReply, answer: IdempotentReplay['answer']): FastifyReply {
  reply.code(answer.status).header('idempotent-replayed', 'true');
  if (answer.contentType) reply.type(answer.contentType);
  return reply.send(answer.body);
}

/**
 * The parts of a multipart body as the route reads them, fingerprinted on the way (file parts
 * through a hashing stream that keeps their `truncated` flag); after the last part, `claim` takes
 * the fingerprint, before the route creates anything.
 */
async function* fingerprinted(parts: AsyncIterableIterator<Multipart>, claim: (hash: string) => Promise<void>): AsyncGenerator<Multipart> {
  const fingerprint = new FormFingerprint();
  for await (const part of parts) {
    if (part.type === 'field') fingerprint.field(part.fieldname, part.mimetype, part.value);
    else {
      const source = part.file;
      const hashed = fingerprint.file(part.fieldname, part.filename, part.mimetype, source);
      part.file = Object.defineProperty(hashed, 'truncated', { get: () => source.truncated }) as MultipartFile['file'];
    }
    yield part;
  }
  await claim(await fingerprint.digest());
}

/** The call's route for limits and the ledger: its method and matched route pattern. */
function routeOf(request: FastifyRequest): string {
  return `${request.method} ${request.routeOptions.config?.callName ?? request.routeOptions.url ?? ''}`;
}

function bodyObject(request: FastifyRequest): Record<string, unknown> | undefined {
  const body = request.body;
  return body !== null && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : undefined;
}

/**
 * Admission, the one pipeline every API call passes after auth: the idempotency key (a retry
 * replays the first answer), then the caller's limits (429, or what the call holds), then the
 * route. When the answer ends (sent, failed, or cut off by the client) the call is settled once,
 * unless it created a task, which settles at its own end. A multipart body is streamed by its
 * route, so its key is claimed when the route has read the last part (request.parts() is wrapped
 * to fingerprint them); a replay found then is raised as IdempotentReplay and sent by the error handler.
 * Registered on the group of admitted routes (/v1, /openai/v1), after its auth.
 */
export function registerAdmission(group: FastifyInstance, deps: { limits: LimitsService; idempotency: IdempotencyService; pacer: TurnPacer }): void {
  // Before validation: an invalid call counts against the request rate too, and the body is hashed as sent.
  group.addHook('preValidation', async (request, reply) => {
    // In a burst of arrivals, a call's setup waits for its turn (core/turn-pacer.ts).
    const turn = deps.pacer.enter();
    if (turn) await turn;
    const principal = request.ctx.principal;
    const route = routeOf(request);
    if (request.method === 'POST') {
      const key = idempotencyKeyOf(request.headers['idempotency-key']);
      if (key !== undefined) {
        const claim = async (hash: string): Promise<IdempotentStart> => {
          const start = await deps.idempotency.start(principal.userId, route, key, hash);
          if (start.kind === 'first') request.ctx.idempotencyHold = start;
          return start;
        };
        if (request.isMultipart()) {
          const parts = request.parts.bind(request);
          request.parts = (options) => fingerprinted(parts(options), async (hash) => {
            const start = await claim(hash);
            if (start.kind === 'replay') throw new IdempotentReplay(start);
          });
        } else {
          const start = await claim(bodyHashOf(request.body));
          if (start.kind === 'replay') return sendReplay(reply, start);
        }
      }
    }
    const admission = await inSpan('gengate.admission', () => ({ attributes: { 'gengate.endpoint': route, 'enduser.id': principal.userId } }), () =>
      deps.limits.admit(principal, request.id, { route, body: bodyObject(request), countsTokens: request.routeOptions.config?.countsTokens ?? COUNTS_TOKENS.test(route) }),
    );
    request.ctx.admission = admission;
    if (admission.rate) reply.headers(rateHeaders(admission.rate));
    reply.raw.once('close', () => {
      void admission.end(reply.raw.statusCode, request.ctx.served);
      // A streamed answer is not kept: its key is freed for another try.
      const held = request.ctx.idempotencyHold;
      if (held) {
        request.ctx.idempotencyHold = undefined;
        void deps.idempotency.finish(held.at, held.createdAt, reply.raw.statusCode, null, undefined).catch((err: unknown) => request.log.warn({ err }, 'freeing an idempotency key failed'));
      }
    });
  });

  group.addHook('onError', (request, _reply, error, done) => {
    request.ctx.admission?.failedWith(error);
    done();
  });

  // A call turned away before admission (a refused token, a body that is not JSON, a malformed
  // key) has a ledger row all the same.
  group.addHook('onResponse', (request, reply, done) => {
    if (!request.ctx.admission) {
      deps.limits.recordRefusal({ id: request.id, route: routeOf(request), latencyMs: reply.elapsedTime, principal: request.ctx.caller ?? null, body: bodyObject(request), httpStatus: reply.statusCode });
    }
    done();
  });

  // The first answer under a key is kept before it goes out, so a retry arriving right after finds it.
  // Callback-style: a call without a key (nearly all) passes without a promise.
  group.addHook('onSend', (request, reply, payload, done) => {
    const held = request.ctx.idempotencyHold;
    if (!held) return done(null, payload);
    request.ctx.idempotencyHold = undefined;
    const body = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : undefined;
    const contentType = reply.getHeader('content-type');
    deps.idempotency.finish(held.at, held.createdAt, reply.statusCode, typeof contentType === 'string' ? contentType : null, body)
      .catch((err: unknown) => request.log.warn({ err }, 'keeping an idempotent answer failed'))
      .then(() => done(null, payload), done);
  });
}
