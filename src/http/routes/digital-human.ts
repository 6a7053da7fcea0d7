import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { RESOURCE_ID_ROLE } from '../../endpoints/digital-human-engines.ts';
import { DigitalHumanCreateBody, DigitalHumanGenerationBody } from '../../endpoints/digital-human.ts';
import { asyncHeaders, callerOf, modeOf, sendOutcome } from '../generation-reply.ts';
import type { AppServices } from '../services.ts';

const security = [{ bearer: [] }];

/** Digital humans: a resource made from a source video, then lip-synced videos of it. */
export const digitalHumanRoutes = (services: AppServices): FastifyPluginAsyncTypebox => async (app) => {
  app.post('/v1/digital-human/create', {
    schema: {
      tags: ['generation'],
      summary: 'Create a digital-human resource from a video; waits for it unless x-async is set',
      description: 'Sync: the task result fields plus `resource_id`; the result\'s output_content has `{type: "text", content: <resource id>, role: "resource_id"}` and the source video, kept as an asset. Async: `{task_id, request_id, status}`.',
      security,
      headers: asyncHeaders,
      body: DigitalHumanCreateBody,
    },
  }, async (request, reply) => {
    const outcome = await services.digitalHumanGenerations.create(callerOf(request), request.body, modeOf(request));
    return sendOutcome(reply, outcome, (draw) => {
      const resourceId = draw.output_content.find((o) => o.role === RESOURCE_ID_ROLE)?.content;
      return resourceId === undefined ? {} : { resource_id: resourceId };
    });
  });

  app.post('/v1/digital-human/generations', {
    schema: {
      tags: ['generation'],
      summary: 'Lip-sync a digital human to an audio track; waits for the video unless x-async is set',
      description: 'Lite-only options (templ_start_seconds, align_audio, align_audio_reverse) on a Basic model, or open_scenedet on a Lite model, are 400 unsupported_parameter. Sync: the task result fields (type video).',
      security,
      headers: asyncHeaders,
      body: DigitalHumanGenerationBody,
    },
  }, async (request, reply) => sendOutcome(reply, await services.digitalHumanGenerations.generate(callerOf(request), request.body, modeOf(request))));
};
