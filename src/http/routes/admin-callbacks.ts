import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ApiError } from '../../core/errors.ts';
import type { DeliveryHistory } from '../../tasks/callback-dispatcher.ts';
import type { AppServices } from '../services.ts';

const Attempt = Type.Object({
  attempt: Type.Integer({ description: '1 for the first try, then the retries' }),
  at: Type.String({ format: 'date-time' }),
  http_status: Type.Union([Type.Integer(), Type.Null()], { description: 'what the receiver answered; null when it could not be reached' }),
  error: Type.Union([Type.String(), Type.Null()], { description: 'why the receiver could not be reached (refused, timed out, …)' }),
  duration_ms: Type.Integer(),
});

const Delivery = Type.Object({
  id: Type.String({ description: 'the webhook-id header, the same on every retry' }),
  seq: Type.Integer({ description: 'the task version the body shows; deliveries go out in this order' }),
  task_status: Type.Union([Type.String(), Type.Null()], { description: 'queue_status.status of the body' }),
  url: Type.String(),
  state: Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')]),
  next_attempt_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'when the next try is due; null once delivered or failed' }),
  created_at: Type.String({ format: 'date-time' }),
  attempts: Type.Array(Attempt),
});

const iso = (ms: number) => new Date(ms).toISOString();

function statusOf(body: string): string | null {
  const status = (JSON.parse(body) as { queue_status?: { status?: unknown } }).queue_status?.status;
  return typeof status === 'string' ? status : null;
}

function deliveryView({ delivery, attempts }: DeliveryHistory) {
  return {
    id: delivery.id,
    seq: delivery.seq,
    task_status: statusOf(delivery.body),
    url: delivery.url,
    state: delivery.state as 'pending' | 'delivered' | 'failed',
    next_attempt_at: delivery.state === 'pending' ? iso(delivery.next_attempt_at) : null,
    created_at: iso(delivery.created_at),
    attempts: attempts.map((a) => ({ attempt: a.attempt, at: iso(a.at), http_status: a.http_status, error: a.error, duration_ms: a.duration_ms })),
  };
}

/**
 * GET /admin/callbacks: what happened to a task's callbacks, so an operator can see why a receiver
 * missed one; a retry of a delivery now, and a test delivery to check the receiver.
 */
export const adminCallbackRoutes = (services: AppServices): FastifyPluginAsyncTypebox => async (app) => {
  app.get('/admin/callbacks', {
    schema: {
      tags: ['admin'],
      summary: "A task's callback deliveries in status order, with every try and its answer or error; 404 task_not_found for an unknown task",
      security: [{ bearer: [] }],
      querystring: Type.Object({ task_id: Type.String({ minLength: 1, maxLength: 200 }) }),
      response: { 200: Type.Object({ task_id: Type.String(), data: Type.Array(Delivery) }) },
    },
  }, async (request) => {
    const taskId = request.query.task_id;
    const history = await services.callbacks.history(taskId);
    if (!history) throw new ApiError('task_not_found', `no task ${taskId}`, 'task_id');
    return { task_id: taskId, data: history.map(deliveryView) };
  });

  app.post('/admin/callbacks/:deliveryId/retry', {
    schema: {
      tags: ['admin'],
      summary: 'Send a callback delivery again now, even one whose retries are used up',
      description: '202 with the delivery, due now; 404 delivery_not_found; 409 delivery_not_retryable when it was delivered or is being sent.',
      security: [{ bearer: [] }],
      params: Type.Object({ deliveryId: Type.String({ minLength: 1, maxLength: 200 }) }),
      response: { 202: Delivery },
    },
  }, async (request, reply) => {
    const delivery = deliveryView(await services.callbacks.retryNow(request.params.deliveryId));
    request.ctx.audit.push({ action: 'callback_delivery.retry', target: `callback_delivery:${request.params.deliveryId}`, before: null, after: delivery });
    return reply.code(202).send(delivery);
  });

  app.post('/admin/config/test-delivery', {
    schema: {
      tags: ['admin'],
      summary: 'POST a sample task status record (with "test": true) to the callback address, signed as deliveries are; nothing is stored',
      description: '400 callback_url_not_set without a callback address.',
      security: [{ bearer: [] }],
      response: {
        200: Type.Object({
          url: Type.String(),
          webhook_id: Type.String(),
          delivered: Type.Boolean({ description: 'the receiver answered 200' }),
          http_status: Type.Union([Type.Integer(), Type.Null()]),
          error: Type.Union([Type.String(), Type.Null()]),
          duration_ms: Type.Integer(),
        }),
      },
    },
  }, async (request) => {
    const sent = await services.callbacks.sendTest();
    const httpStatus = 'status' in sent ? sent.status : null;
    const result = { url: sent.url, webhook_id: sent.id, delivered: httpStatus === 200, http_status: httpStatus, error: 'error' in sent ? sent.error : null, duration_ms: sent.durationMs };
    request.ctx.audit.push({ action: 'callback.test', target: 'config:callback', before: null, after: result });
    return result;
  });
};
