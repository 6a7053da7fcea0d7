import type { FastifyInstance } from 'fastify';
import type { Principal } from '../auth/tokens.ts';
import type { Admission } from '../limits/limits-service.ts';
import type { IdempotentStart } from '../limits/idempotency.ts';
import type { ServedRoute } from '../providers/spec.ts';
import type { AuditEntry } from '../runtime-settings/audit-log.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** What this call learned on its way through the pipeline (auth, admission, the route). */
    ctx: RequestContext;
  }
}

/** The hold of the first call under an idempotency key: its answer is kept under the key. */
export type IdempotencyHold = Extract<IdempotentStart, { kind: 'first' }>;

/**
 * One call's facts, typed: who calls (auth), what it holds (admission, idempotency) and who
 * served it (the route). The settlement at the end reads them from here, never from the answer's headers.
 */
export class RequestContext {
  /** The caller, once auth accepted a token. */
  caller: Principal | undefined;
  /** The call's admission under limits, on every admitted route once admitted. */
  admission: Admission | undefined;
  /** The idempotency key this call holds as the first under it, until its answer is kept or freed. */
  idempotencyHold: IdempotencyHold | undefined;
  /** The model, provider and channel that took the call, when a route learned them. */
  served: ServedRoute | undefined;
  /** An /admin call's changes, written to the audit log before it answers (plugins/audit.ts). */
  readonly audit: AuditEntry[] = [];
  /** The call's audit rows are written already (with its change, in one transaction), or it changed nothing. */
  auditDone = false;

  /** The caller of an authenticated route; a route outside the authenticated groups has none. */
  get principal(): Principal {
    if (!this.caller) throw new Error('no principal: the route is not in an authenticated group');
    return this.caller;
  }

  /** Records who served the call and answers the headers that name them (the x-gengate-* headers of the API). */
  servedBy(route: ServedRoute): Record<string, string> {
    this.served = route;
    return { 'x-gengate-model': route.model, 'x-gengate-provider': route.provider, 'x-gengate-channel': route.channel };
  }

  /** The usage a chat or agent call reports, for its settlement. */
  recordUsage(inputTokens: number, outputTokens: number): void {
    this.admission?.recordUsage(inputTokens, outputTokens);
  }
}

/** Gives every request its own context, before any other hook reads it. */
export function registerRequestContext(app: FastifyInstance): void {
  app.decorateRequest('ctx', null as unknown as RequestContext);
  app.addHook('onRequest', (request, _reply, done) => {
    request.ctx = new RequestContext();
    done();
  });
}
