import type { FastifyInstance } from 'fastify';
import type { Principal } from '../auth/tokens.ts';
import type { Actor, Operator } from '../auth/operator.ts';
import type { Admission } from '../limits/limits-service.ts';
import type { IdempotentStart } from '../limits/idempotency.ts';
import type { ChatUsage, ServedRoute } from '../providers/spec.ts';
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
  /** Who acts on /admin and the console: the admin token, or a signed-in user with its teams and roles. */
  operator: Operator | undefined;
  /** The console session's CSRF value, when the call came with a session cookie rather than a bearer. */
  sessionCsrf: string | undefined;
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

  /** Who acts on an /admin route, as the audit log names it (`admin` for the admin token). */
  get actor(): Actor {
    return this.operatorOrThrow.actor;
  }

  /** The operator of a route of the admin group. */
  get operatorOrThrow(): Operator {
    if (!this.operator) throw new Error('no operator: the route is not in the admin group');
    return this.operator;
  }

  /** Records who served the call and answers the headers that name them (the x-gengate-* headers of the API). */
  servedBy(route: ServedRoute): Record<string, string> {
    this.served = route;
    return { 'x-gengate-model': route.model, 'x-gengate-provider': route.provider, 'x-gengate-channel': route.channel };
  }

  /** The usage a chat, agent or embeddings call reports, for its settlement. */
  recordUsage(usage: ChatUsage): void {
    this.admission?.recordUsage(usage);
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
