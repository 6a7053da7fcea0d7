import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { VideoGenerationBody } from '../../endpoints/video.ts';
import { asyncHeaders, callerOf, modeOf, sendOutcome } from '../generation-reply.ts';
import type { AppServices } from '../services.ts';

const security = [{ bearer: [] }];

/** Video generation: text-to-video, image-to-video, video reference and edit, subjects. */
export const videoRoutes = (services: AppServices): FastifyPluginAsyncTypebox => async (app) => {
  app.post('/v1/video/generations', {
    schema: {
      tags: ['generation'],
      summary: 'Generate a video; waits for the result unless x-async is set',
      description: 'Sync: the task result fields (type video). Async: `{task_id, request_id, status}`. Defaults (aspect_ratio adaptive, resolution 720p, duration 5, seed -1, watermark and camerafixed false) are stored with the task input.',
      security,
      headers: asyncHeaders,
      body: VideoGenerationBody,
    },
  }, async (request, reply) => sendOutcome(reply, await services.video.generate(callerOf(request), request.body, modeOf(request))));
};
