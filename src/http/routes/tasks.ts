import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppServices } from '../services.ts';

const security = [{ bearer: [] }];
const TaskParams = Type.Object({ taskId: Type.String({ minLength: 1, maxLength: 200 }) });

/** GET /v1/ai/result/:taskId and GET /v1/ai/cancel/:taskId . */
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
};
