import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { ApiError } from '../core/errors.ts';
import { callbackEventsOf } from '../endpoints/submit-fields.ts';
import type { TaskRow } from '../storage/schema.ts';
import type { DrawResponse } from '../tasks/task-record.ts';
import type { GenerationCaller, GenerationOutcome } from '../tasks/generation-service.ts';

const ASYNC_HEADERS = ['x-async', 'async'] as const;

/** The headers schema of every generation endpoint: what modeOf and clientIdOf read. */
export const asyncHeaders = Type.Object({
  'x-async': Type.Optional(Type.String({ description: '`true` or `1`: answer at once with the task id (also `async`)' })),
  'x-client-id': Type.Optional(Type.String({ description: 'realtime pushes of the task go only to sessions with this client_id' })),
  'x-deadline': Type.Optional(Type.String({ description: 'an ISO-8601 time or a whole number of seconds from now: a task still waiting then fails (deadline exceeded)' })),
});

/** Async mode when `x-async` or `async` (any case) is `true` or `1`. */
export function modeOf(request: FastifyRequest): 'sync' | 'async' {
  for (const name of ASYNC_HEADERS) {
    const value = request.headers[name];
    const first = Array.isArray(value) ? value[0] : value;
    if (first !== undefined && ['true', '1'].includes(first.trim().toLowerCase())) return 'async';
  }
  return 'sync';
}

/** X-Client-Id of the submit: realtime pushes of the task go to that client's sessions only. */
function clientIdOf(request: FastifyRequest): string | null {
  const value = request.headers['x-client-id'];
  const first = Array.isArray(value) ? value[0] : value;
  return first?.trim() || null;
}

/**
 * The caller of a generation request: its token's user, X-Client-Id, request id and the submit
 * fields of endpoints/submit-fields.ts, read from `fields` (the JSON body, or a multipart form's
 * text fields) and taken out of it, since they are not the task's input.
 */
export function callerOf(request: FastifyRequest, fields: unknown = request.body): GenerationCaller {
  const submit = (fields ?? {}) as { callback_events?: unknown };
  const callbackEvents = callbackEventsOf(submit.callback_events);
  delete submit.callback_events;
  return {
    ownerId: request.ctx.principal.userId,
    clientId: clientIdOf(request),
    requestId: request.id,
    ...(request.ctx.admission ? { admission: request.ctx.admission } : {}),
    ...(callbackEvents ? { callbackEvents } : {}),
    ...deadlineOf(request),
  };
}

/** An ISO-8601 time: a date, and a time of day with an offset or Z (what Date.parse reads alike everywhere). */
const ISO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)$/;

/**
 * The submit's x-deadline as epoch ms: an ISO-8601 time or a whole number of seconds from now,
 * in the future; anything else is 400 invalid_deadline.
 */
function deadlineOf(request: FastifyRequest): { deadlineAt?: number } {
  const value = request.headers['x-deadline'];
  const raw = (Array.isArray(value) ? value[0] : value)?.trim();
  if (raw === undefined) return {};
  const now = Date.now();
  const at = /^\d+$/.test(raw) ? now + Number(raw) * 1000 : ISO_TIME.test(raw) ? Date.parse(raw) : Number.NaN;
  if (!Number.isFinite(at) || at <= now) {
    throw new ApiError('invalid_deadline', 'x-deadline must be a time in the future: an ISO-8601 time or a whole number of seconds from now', 'x-deadline');
  }
  return { deadlineAt: at };
}

/** The async submit body. */
export function asyncBody(task: TaskRow): { task_id: string; request_id: string; status: 'submitted' } {
  return { task_id: task.id, request_id: task.request_id, status: 'submitted' };
}

/**
 * Answers a generation call: the async body (200, or 202 when a sync wait ran
 * out), the result of a finished task plus `extra(draw)` fields, or the error of a task
 * that failed (502 task_failed) or was rejected (422 task_rejected), each with its task_id.
 */
export function sendOutcome(reply: FastifyReply, outcome: GenerationOutcome, extra: (draw: DrawResponse) => Record<string, unknown> = () => ({})): FastifyReply {
  const { task } = outcome;
  if (outcome.kind === 'submitted') return reply.code(200).send(asyncBody(task));
  if (outcome.kind === 'still_running') return reply.code(202).send(asyncBody(task));
  const draw = outcome.record.queue_status.data;
  const ids = { task_id: task.id, request_id: task.request_id };
  if (draw.status === 'failed') throw new ApiError('task_failed', draw.original_error_message ?? draw.message ?? 'the task failed', null, ids);
  if (draw.status === 'rejected') throw new ApiError('task_rejected', draw.message ?? 'the task was rejected', null, ids);
  return reply.code(200).send({ ...draw, ...extra(draw) });
}
