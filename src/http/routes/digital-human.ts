import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { DIGITAL_HUMAN_CREATE, DIGITAL_HUMAN_GENERATIONS, RESOURCE_ID_ROLE } from '../../digital-human/digital-human-engines.ts';
import { digitalHumanModeOf, generationInputFor } from '../../digital-human/digital-human-options.ts';
import { asyncHeaders, generateFor, sendOutcome } from '../generation-reply.ts';
import type { AppServices } from '../services.ts';
import { mediaReference } from './video.ts';

const security = [{ bearer: [] }];
const CAPABILITIES = ['digital_human_generate'] as const;

const CreateBody = Type.Object({
  model: Type.String({ minLength: 1, description: 'catalog alias or workflow name' }),
  video_id: mediaReference('the source video: a URL from /v1/files/upload, an asset hash blake3:<hex>, or an http(s) URL'),
  interaction_optimise: Type.Enum([0, 1], { default: 1, description: '1 on, 0 off: optimisation for live streaming' }),
}, { additionalProperties: false });

const GenerationBody = Type.Object({
  model: Type.String({ minLength: 1, description: 'catalog alias or workflow name; its mode (Lite or Basic) decides which options apply' }),
  resource_id: Type.String({ minLength: 1, description: 'from POST /v1/digital-human/create; 404 resource_not_found when unknown or another user\'s' }),
  audio_url: mediaReference('the speech to lip-sync: MP3, WAV or M4A'),
  image_url: Type.Optional(mediaReference('a picture to animate instead of the resource video')),
  video_url: Type.Optional(mediaReference('a video to lip-sync instead of the resource video')),
  templ_start_strategy: Type.Optional(Type.Enum(['start_from_given_seconds'])),
  templ_start_seconds: Type.Optional(Type.Number({ minimum: 0, maximum: 86_400, description: 'Lite only; default 0; taken modulo the template length' })),
  separate_vocal: Type.Optional(Type.Boolean({ description: 'isolate the voice from background noise' })),
  open_scenedet: Type.Optional(Type.Boolean({ description: 'Basic only: scene split and speaker detection' })),
  align_audio: Type.Optional(Type.Boolean({ description: 'Lite only; default true: loop the video to the audio length' })),
  align_audio_reverse: Type.Optional(Type.Boolean({ description: 'Lite only; needs align_audio: loop forwards then backwards' })),
}, { additionalProperties: false });

/** Digital humans: a resource made from a source video, then lip-synced videos of it. */
export const digitalHumanRoutes = (services: AppServices): FastifyPluginAsyncTypebox => async (app) => {
  app.post('/v1/digital-human/create', {
    schema: {
      tags: ['generation'],
      summary: 'Create a digital-human resource from a video; waits for it unless x-async is set',
      description: 'Sync: the task result fields plus `resource_id`; the result\'s output_content has `{type: "text", content: <resource id>, role: "resource_id"}` and the source video, kept as an asset. Async: `{task_id, request_id, status}`.',
      security,
      headers: asyncHeaders,
      body: CreateBody,
    },
  }, async (request, reply) => {
    const { model, ...input } = request.body;
    const outcome = await generateFor(services.generations, request, {
      endpoint: DIGITAL_HUMAN_CREATE,
      capabilities: CAPABILITIES,
      outputType: 'text',
      model,
      input,
    });
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
      body: GenerationBody,
    },
  }, async (request, reply) => {
    const { model: alias, ...params } = request.body;
    const model = services.generations.resolveModel(alias, CAPABILITIES);
    const input = generationInputFor(digitalHumanModeOf(model), params);
    await services.digitalHumans.require(request.principal.userId, params.resource_id);
    const outcome = await generateFor(services.generations, request, {
      endpoint: DIGITAL_HUMAN_GENERATIONS,
      capabilities: CAPABILITIES,
      outputType: 'video',
      model: alias,
      input,
    });
    return sendOutcome(reply, outcome);
  });
};
