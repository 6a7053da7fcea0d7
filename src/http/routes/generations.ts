import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ImagesGenerationBody, LegacyGenerationBody } from '../../endpoints/images.ts';
import { asyncBody, asyncHeaders, callerOf, modeOf, sendOutcome } from '../generation-reply.ts';
import type { AppServices } from '../services.ts';
import type { DrawResponse } from '../../tasks/task-record.ts';

const security = [{ bearer: [] }];

/** The OpenAI images fields the image endpoints add to a task's result. */
export function openAiImageFields(draw: DrawResponse): { created: number; data: { url: string }[] } {
  return { created: Math.floor((draw.finished_at ?? Date.now()) / 1000), data: draw.output.map((url) => ({ url })) };
}

/** Image generation and the deprecated workflow submit. */
export const generationRoutes = (services: AppServices): FastifyPluginAsyncTypebox => async (app) => {
  app.post('/v1/images/generations', {
    schema: {
      tags: ['generation'],
      summary: 'Generate images; waits for the result unless x-async is set',
      description: 'Sync: the task result fields plus `created` and `data: [{url}]`; 202 with the async body past SYNC_TIMEOUT_MS. Async: `{task_id, request_id, status}`.',
      security,
      headers: asyncHeaders,
      body: ImagesGenerationBody,
    },
  }, async (request, reply) => sendOutcome(reply, await services.images.generate(callerOf(request), request.body, modeOf(request)), openAiImageFields));

  app.post('/v1/ai/generations', {
    schema: {
      tags: ['generation'],
      summary: 'Deprecated: submit a workflow task (always async); use /v1/images/generations with x-async',
      deprecated: true,
      security,
      headers: asyncHeaders,
      body: LegacyGenerationBody,
    },
  }, async (request, reply) => {
    const outcome = await services.images.generateLegacy(callerOf(request), request.body);
    return reply
      .header('Deprecation', 'true')
      .header('Link', '</v1/images/generations>; rel="successor-version"')
      .send(asyncBody(outcome.task));
  });
};
