import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ApiError } from '../../core/errors.ts';
import { MAX_IMAGE_SIDE } from '../../providers/local/image/image-size.ts';
import { asyncBody, asyncHeaders, generateFor, sendOutcome } from '../generation-reply.ts';
import type { AppServices } from '../services.ts';
import type { DrawResponse } from '../../tasks/task-record.ts';

const security = [{ bearer: [] }];

/** The output parameters the image endpoints share (generations and edits). */
export const ImageOutputFields = {
  size: Type.Optional(Type.String({ pattern: '^([1-9][0-9]*x[1-9][0-9]*|auto)$', description: `<width>x<height>, each side at most ${MAX_IMAGE_SIDE}; wins over aspect_ratio and resolution` })),
  n: Type.Optional(Type.Integer({ minimum: 1, maximum: 10, description: 'number of images' })),
  aspect_ratio: Type.Optional(Type.String({ pattern: '^[1-9][0-9]*:[1-9][0-9]*$', description: 'W:H, e.g. 16:9 (default 1:1; for edits, the first image\'s)' })),
  resolution: Type.Optional(Type.Union([Type.Literal('1K'), Type.Literal('2K'), Type.Literal('4K'), Type.Literal('8K')], { description: 'long side 1024, 2048, 4096 or 8192; sides rounded to multiples of 16' })),
  seed: Type.Optional(Type.Integer({ description: 'the same seed, prompt and model give the same images' })),
  output_format: Type.Optional(Type.Union([Type.Literal('png'), Type.Literal('jpeg'), Type.Literal('jpg'), Type.Literal('webp')], { description: 'default png' })),
};

/** A size no engine here can draw is a plain 400 on `size`, not a task that is then rejected. */
export function checkImageSize(size: string | undefined): void {
  const sides = size?.split('x').map(Number);
  if (sides?.some((side) => side > MAX_IMAGE_SIDE)) throw new ApiError('invalid_parameter', `size ${size} is too large: each side is at most ${MAX_IMAGE_SIDE}`, 'size');
}

/** The OpenAI images fields the image endpoints add to a task's result. */
export function openAiImageFields(draw: DrawResponse): { created: number; data: { url: string }[] } {
  return { created: Math.floor((draw.finished_at ?? Date.now()) / 1000), data: draw.output.map((url) => ({ url })) };
}

const ImagesGenerationBody = Type.Object({
  prompt: Type.String({ minLength: 1, description: 'prompt text' }),
  model: Type.String({ minLength: 1, description: 'catalog alias or workflow name' }),
  ...ImageOutputFields,
  // Further parameters of the workflow behind the model are accepted as they are.
}, { additionalProperties: true });

const LegacyGenerationBody = Type.Object({
  params: Type.Object({
    prompt: Type.Optional(Type.String()),
    width: Type.Optional(Type.Integer({ minimum: 1 })),
    height: Type.Optional(Type.Integer({ minimum: 1 })),
    seed: Type.Optional(Type.Integer()),
  }, { additionalProperties: true, description: 'workflow-engine parameters; other keys accepted' }),
  options: Type.Optional(Type.Object({ result_retrieval: Type.Optional(Type.String({ default: 'websocket' })) }, { additionalProperties: false })),
  model: Type.Optional(Type.String({ minLength: 1, description: 'default: GENGATE_CONFIG default_models.image_generate, else the first enabled catalog model with image_generate' })),
}, { additionalProperties: false });

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
  }, async (request, reply) => {
    const { model, ...input } = request.body;
    checkImageSize(input.size);
    const outcome = await generateFor(services.generations, request, {
      endpoint: 'images.generations',
      capabilities: ['image_generate'],
      outputType: 'image',
      model,
      input,
    });
    return sendOutcome(reply, outcome, openAiImageFields);
  });

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
    const outcome = await generateFor(services.generations, request, {
      endpoint: 'ai.generations',
      capabilities: ['image_generate'],
      outputType: 'image',
      model: request.body.model,
      input: { ...request.body.params, ...(request.body.options ? { options: request.body.options } : {}) },
    }, 'async');
    return reply
      .header('Deprecation', 'true')
      .header('Link', '</v1/images/generations>; rel="successor-version"')
      .send(asyncBody(outcome.task));
  });
};
