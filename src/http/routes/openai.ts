/**
 * /openai/v1: OpenAI's API as OpenAI's SDKs expect it, over the same services as /v1. One plugin,
 * registered with the prefix in the admitted group, so it passes the same auth and admission as /v1.
 */
import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { toCompatItem } from '../../catalog/listing.ts';
import { SseWriter } from '../../chat/sse-writer.ts';
import { ApiError } from '../../core/errors.ts';
import { clientGoneSignal } from '../client-gone.ts';
import { callerOf } from '../generation-reply.ts';
import { toApiError } from '../plugins/errors.ts';
import { openAiAudioRoutes } from './audio-openai.ts';
import { chatCompletionsRoute } from './chat.ts';
import { embeddingRoutes } from './embeddings.ts';
import { openAiBatchRoutes } from './openai-batches.ts';
import { imageEditReader } from './image-edits.ts';
import { ImagesEditJsonBody } from '../../endpoints/images.ts';
import type { AppServices } from '../services.ts';
import type { ChatUsage } from '../../providers/spec.ts';
import { answerOptionsOf, imageRequest, OpenAiImageAnswers, OpenAiImagesBody } from '../../openai/images.ts';
import type { ResponseEvent } from '../../openai/responses-output.ts';
import { ResponsesBody } from '../../openai/responses-schemas.ts';

const security = [{ bearer: [] }];

/** The warnings as one header value: `; `-separated, anything but printable ASCII (the caller's own names) as `?`. */
function warningsHeader(warnings: string[]): string {
  return warnings.join('; ').replace(/[^\x20-\x7e]/g, '?');
}

export const OPENAI_PREFIX = '/openai/v1';

/** The routes under /openai/v1 (register with `{prefix: OPENAI_PREFIX}`). */
export const openAiRoutes = (services: AppServices): FastifyPluginAsyncTypebox => async (app) => {
  const { catalog } = services;
  const imageAnswers = new OpenAiImageAnswers({ catalog: services.catalog, files: services.files });
  const readEdit = imageEditReader(app, services);

  await app.register(chatCompletionsRoute(services, { path: '/chat/completions', streamByDefault: false }));
  await app.register(embeddingRoutes(services));
  await app.register(openAiAudioRoutes(services));
  await app.register(openAiBatchRoutes(services));

  const created = Math.floor(Date.now() / 1000);
  const modelItem = (alias: string) => {
    const model = catalog.find(alias);
    if (!model) throw new ApiError('model_not_found', `The model '${alias}' does not exist`, 'model');
    const { id, object, owned_by: ownedBy } = toCompatItem(model, created);
    return { id, object, created, owned_by: ownedBy };
  };
  app.get('/models', { schema: { tags: ['openai'], summary: 'The catalog\'s models as OpenAI lists them', security } },
    async () => ({ object: 'list', data: catalog.list().map((model) => modelItem(model.alias)) }));
  app.get('/models/:model', {
    schema: { tags: ['openai'], summary: 'One model', security, params: Type.Object({ model: Type.String() }) },
  }, async (request) => modelItem(request.params.model));

  app.post('/images/generations', {
    schema: { tags: ['openai'], summary: 'Generate images (OpenAI\'s images API); answers when they are ready', security, body: OpenAiImagesBody },
  }, async (request) => {
    const caller = callerOf(request);
    const { input, options } = imageRequest(request.body);
    return imageAnswers.answer(await services.images.generate(caller, input, 'sync'), options);
  });

  app.post('/images/edits', {
    schema: {
      tags: ['openai'],
      summary: 'Edit images (OpenAI\'s images API): multipart `image[]`/`image` and `mask` parts, or JSON with image URLs',
      security,
      body: { content: { 'application/json': { schema: ImagesEditJsonBody } } },
    },
  }, async (request) => {
    const { checked, submitFields, ...refs } = await readEdit(request);
    const options = answerOptionsOf(checked.input, checked.model.alias);
    return imageAnswers.answer(await services.images.edit(callerOf(request, submitFields), checked, refs, 'sync'), options);
  });

  app.post('/responses', {
    schema: {
      tags: ['openai'],
      summary: 'OpenAI\'s Responses API: one response object, or its events with stream: true',
      description: 'Input items (messages of roles user, assistant, system, developer with input_text, input_image, input_file parts; function_call, custom_tool_call, local_shell_call and their outputs; reasoning), instructions, tools of every type (function, custom, namespace, mcp, hosted), previous_response_id over stored responses. ' +
        'A model whose upstream serves the Responses API (adapter openai, supportedApiProtocols holding responses) gets the request as it came and its answer or events come back unchanged; for any other, function, custom and namespace tools become function calling, and what cannot be sent (hosted tools, reasoning items) is dropped and named in `x-gengate-warnings`. ' +
        'Streaming: `event:` + `data:` frames, each with a sequence_number, ending with response.completed (or response.incomplete, response.failed); no [DONE].',
      security,
      body: ResponsesBody,
    },
  }, async (request, reply) => {
    const signal = clientGoneSignal(reply);
    const outcome = await services.openaiResponses.create(request.body, request.ctx.principal, signal, (usage) => request.ctx.recordUsage(usage));
    if (outcome.route) reply.headers(request.ctx.servedBy(outcome.route));
    if (outcome.warnings.length > 0) reply.header('x-gengate-warnings', warningsHeader(outcome.warnings));
    const recordChatUsage = (usage: ChatUsage | undefined) => {
      if (usage) request.ctx.recordUsage(usage);
    };
    switch (outcome.kind) {
      case 'response':
        return outcome.response;
      case 'upstream-response':
        recordChatUsage(outcome.usage);
        return reply.type('application/json; charset=utf-8').send(outcome.text);
      case 'upstream-stream': {
        reply.hijack();
        const sse = new SseWriter(reply.raw, reply.getHeaders());
        let sent = 0;
        try {
          for await (const event of outcome.events) {
            recordChatUsage(event.usage);
            await sse.send(event.data, event.type);
            sent++;
          }
        } catch (err) {
          if (signal.aborted) return;
          const error = toApiError(err as Parameters<typeof toApiError>[0], 'api');
          request.log.warn({ err, code: error.code }, 'responses stream failed after it started');
          // OpenAI's own stream error event, numbered after the upstream's events.
          await sse.send(JSON.stringify({ type: 'error', code: error.code, message: error.message, param: null, sequence_number: sent }), 'error');
        }
        sse.end();
        return;
      }
      case 'stream': {
        reply.hijack();
        const sse = new SseWriter(reply.raw, reply.getHeaders());
        let sequence = 0;
        const send = (event: ResponseEvent) => sse.send(JSON.stringify({ ...event, sequence_number: sequence++ }), event.type);
        try {
          for await (const event of outcome.events) await send(event);
        } catch (err) {
          if (signal.aborted) return;
          const error = toApiError(err as Parameters<typeof toApiError>[0], 'api');
          request.log.warn({ err, code: error.code }, 'responses stream failed after it started');
          await send(outcome.failed(error.code, error.message));
        }
        sse.end();
      }
    }
  });

  app.get('/responses/:id', {
    schema: { tags: ['openai'], summary: 'A stored response of the caller', security, params: Type.Object({ id: Type.String() }) },
  }, async (request) => services.openaiResponses.find(request.ctx.principal.userId, request.params.id));
};
