/**
 * The audit log of /admin: each call that changes something leaves its rows before it answers.
 * A route names its change (action, target, before, after) in request.ctx.audit, or writes the
 * rows with the change itself and sets ctx.auditDone; a changing call that named nothing gets
 * one row derived from its route, so no change goes unrecorded.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AuditContext, AuditEntry, AuditLog } from '../../runtime-settings/audit-log.ts';

const VERBS: Record<string, string> = { POST: 'create', PUT: 'update', PATCH: 'update', DELETE: 'delete' };

/** Who made an /admin call and with which request. */
export function auditContextOf(request: FastifyRequest): AuditContext {
  return {
    actor: request.ctx.actor,
    requestId: request.id,
    ip: request.ip ?? null,
  };
}

/** `<object>.<verb>` and `<object>:<id>` from the route: its last fixed segment, singular, and its parameters. */
function derivedEntry(request: FastifyRequest): AuditEntry {
  const segments = (request.routeOptions.url ?? request.url).split('/').filter((s) => s !== '' && s !== 'admin');
  const fixed = segments.filter((s) => !s.startsWith(':'));
  const object = (fixed[fixed.length - 1] ?? 'admin').replace(/-/g, '_').replace(/s$/, '');
  const params = Object.values((request.params ?? {}) as Record<string, string>);
  return { action: `${object}.${VERBS[request.method] ?? request.method.toLowerCase()}`, target: `${object}:${params.join('/') || '-'}`, after: request.body ?? null };
}

export function registerAudit(admin: FastifyInstance, audit: AuditLog): void {
  admin.addHook('onSend', async (request, reply, payload) => {
    const ctx = request.ctx;
    if (!(request.method in VERBS) || reply.statusCode >= 400 || ctx.auditDone) return payload;
    ctx.auditDone = true;
    await audit.record(auditContextOf(request), ctx.audit.length > 0 ? ctx.audit : [derivedEntry(request)]).catch((err: unknown) => request.log.error({ err }, 'writing the audit log failed'));
    return payload;
  });
}
