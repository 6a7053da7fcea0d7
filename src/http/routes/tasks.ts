import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { SseWriter } from '../../chat/sse-writer.ts';
import { ApiError } from '../../core/errors.ts';
import type { AppServices } from '../services.ts';

const security = [{ bearer: [] }];
const TaskParams = Type.Object({ taskId: Type.String({ minLength: 1, maxLength: 200 }) });

/**
 * The Last-Event-ID header of a resumed event stream: the sequence number of an event, as the
 * stream sent it (a whole number). Absent or empty: the stream starts from the current record.
 */
function lastEventIdOf(header: string | string[] | undefined): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || value.trim() === '') return undefined;
  const id = Number(value.trim());
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(id)) throw new ApiError('invalid_parameter', `Last-Event-ID must be the id of an event of this stream (a whole number), got "${value}"`, 'Last-Event-ID');
  return id;
}

/** GET /v1/ai/result/:taskId, GET /v1/ai/cancel/:taskId and GET /v1/tasks/:taskId/events . */
export const taskRoutes = (services: AppServices): FastifyPluginAsyncTypebox => async (app) => {
  app.get('/v1/ai/result/:taskId', {
    schema: { tags: ['tasks'], summary: 'The task status record of one of your tasks', security, params: TaskParams },
  }, async (request) => services.tasks.record(request.ctx.principal.userId, request.params.taskId));

  app.get('/v1/ai/cancel/:taskId', {
    schema: {
      tags: ['tasks'],
      summary: 'Cancel a task run by a built-in engine; answers the record, now cancelled',
      description: '409 task_already_finished when it has ended; 409 task_not_cancellable for a task run by an external API provider.',
      security,
      params: TaskParams,
    },
  }, async (request) => services.tasks.cancel(request.ctx.principal.userId, request.params.taskId));

  app.get('/v1/tasks/:taskId/events', {
    schema: {
      tags: ['tasks'],
      summary: 'Follow one of your tasks as server-sent events',
      description: 'text/event-stream of events `status` (the task status record), `progress` ({progress}), `preview` ({url}) and `output` (an output_content item), each with the `id:` of its place in the task\'s sequence; ends after the terminal status. With Last-Event-ID: every event after that one. 400 invalid_parameter for a Last-Event-ID that is not a whole number or is past the task\'s last event.',
      security,
      params: TaskParams,
      headers: Type.Object({ 'last-event-id': Type.Optional(Type.String()) }),
    },
  }, async (request, reply) => {
    const lastEventId = lastEventIdOf(request.headers['last-event-id']);
    await services.taskEvents.follow(request.ctx.principal.userId, request.params.taskId, lastEventId, () => {
      reply.hijack();
      const sse = new SseWriter(reply.raw, reply.getHeaders());
      return {
        send: ({ id, event, data }) => sse.send(data, event, id),
        comment: (text) => sse.comment(text),
        end: () => sse.end(),
        onClose: (listener) => {
          if (sse.closed) listener();
          else reply.raw.once('close', listener);
        },
      };
    });
  });
};
