import { Type, type TSchema } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { CONTENT_PART_TYPES, MESSAGE_ROLES, type ChatCompletionInput } from '../../core/chat-input.ts';
import { SseWriter } from '../../chat/sse-writer.ts';
import { clientGoneSignal } from '../client-gone.ts';
import { jsonText } from '../../providers/kept-json.ts';
import { toApiError } from '../plugins/errors.ts';
import type { AppServices } from '../services.ts';

type Schema = Record<string, unknown>;

const text: Schema = { type: 'string' };
const nonEmpty: Schema = { type: 'string', minLength: 1 };
const link = (extra: Record<string, Schema> = {}): Schema => ({ type: 'object', required: ['url'], properties: { url: nonEmpty, ...extra } });

/** A content part: each type requires its own field (if/then, so a missing one is named exactly). */
export const ContentPart: Schema = {
  type: 'object',
  required: ['type'],
  properties: {
    type: { type: 'string', enum: CONTENT_PART_TYPES },
    text,
    image_url: {
      type: 'object',
      properties: { url: nonEmpty, urls: { type: ['string', 'array'], minLength: 1, minItems: 1, items: nonEmpty }, detail: text },
    },
    video_url: link(),
    input_audio: { type: 'object', properties: { url: nonEmpty, data: nonEmpty, format: text } },
    audio_url: link(),
    file_url: link({ file_name: text, fileName: text }),
    file: { type: 'object', properties: { file_data: nonEmpty, filename: text, file_id: text } },
  },
  allOf: CONTENT_PART_TYPES.map((type) => ({ if: { required: ['type'], properties: { type: { const: type } } }, then: { required: [type] } })),
};

const ToolCall: Schema = {
  type: 'object',
  required: ['id', 'type', 'function'],
  properties: {
    id: text,
    type: { type: 'string', enum: ['function'] },
    function: { type: 'object', required: ['name', 'arguments'], properties: { name: text, arguments: text } },
  },
};

const Message: Schema = {
  type: 'object',
  required: ['role'],
  properties: {
    role: { type: 'string', enum: MESSAGE_ROLES },
    content: { type: ['string', 'array', 'null'], items: ContentPart },
    name: text,
    tool_calls: { type: 'array', items: ToolCall },
    tool_call_id: nonEmpty,
  },
  allOf: [
    { if: { required: ['role'], properties: { role: { const: 'tool' } } }, then: { required: ['tool_call_id', 'content'] } },
    { if: { required: ['role'], properties: { role: { enum: ['system', 'developer', 'user'] } } }, then: { required: ['content'] } },
  ],
};

const Tool: Schema = {
  type: 'object',
  required: ['type', 'function'],
  properties: {
    type: { type: 'string', enum: ['function'] },
    function: {
      type: 'object',
      required: ['name'],
      properties: {
        name: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' },
        description: text,
        parameters: { type: 'object' },
        strict: { type: ['boolean', 'null'] },
      },
    },
  },
};

const ToolChoice: Schema = {
  type: ['string', 'object'],
  if: { type: 'string' },
  then: { enum: ['none', 'auto', 'required'] },
  else: { required: ['type', 'function'], properties: { type: { type: 'string', enum: ['function'] }, function: { type: 'object', required: ['name'], properties: { name: text } } } },
};

const raw = (schema: Schema): TSchema => schema as TSchema;

/**
 * The body: the gateway's fields, then the OpenAI parameters, typed so a wrong type is a 400
 * naming the field; any other parameter is passed on to the upstream as it is.
 */
export const ChatCompletionBody = Type.Unsafe<ChatCompletionInput>(Type.Object({
  model: Type.String({ minLength: 1, description: 'catalog alias of a text_generate or omni model' }),
  messages: Type.Array(raw(Message), { minItems: 1 }),
  stream: Type.Optional(Type.Boolean({ description: 'default true: server-sent events' })),
  conversationId: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'stored conversation of the caller: its history goes first and the turn is kept' })),
  sessionId: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'the conversation, when conversationId is absent' })),
  temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 2 })),
  top_p: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
  n: Type.Optional(Type.Integer({ minimum: 1, maximum: 1, description: 'one choice per call' })),
  max_tokens: Type.Optional(Type.Integer({ minimum: 1 })),
  max_completion_tokens: Type.Optional(Type.Integer({ minimum: 1 })),
  stop: Type.Optional(raw({ type: ['string', 'array', 'null'], items: text })),
  presence_penalty: Type.Optional(Type.Number({ minimum: -2, maximum: 2 })),
  frequency_penalty: Type.Optional(Type.Number({ minimum: -2, maximum: 2 })),
  seed: Type.Optional(Type.Integer()),
  logprobs: Type.Optional(Type.Boolean()),
  top_logprobs: Type.Optional(Type.Integer({ minimum: 0, maximum: 20 })),
  logit_bias: Type.Optional(Type.Record(Type.String(), Type.Number())),
  tools: Type.Optional(Type.Array(raw(Tool))),
  tool_choice: Type.Optional(raw(ToolChoice)),
  parallel_tool_calls: Type.Optional(Type.Boolean()),
  response_format: Type.Optional(Type.Object({ type: Type.String({ minLength: 1 }) }, { additionalProperties: true })),
  stream_options: Type.Optional(raw({ type: ['object', 'null'], properties: { include_usage: { type: 'boolean' } } })),
  user: Type.Optional(Type.String()),
  metadata: Type.Optional(Type.Record(Type.String(), Type.String())),
  store: Type.Optional(Type.Boolean()),
  reasoning_effort: Type.Optional(Type.String()),
}, { additionalProperties: true }));

/** Where a chat-completions route is served and whether it streams when the body says nothing. */
export interface ChatCompletionsRoute {
  path: string;
  /** /v1 streams by default (docs/api/chat.md); /openai/v1 answers one object, as OpenAI does. */
  streamByDefault: boolean;
}

/** A chat-completions route: OpenAI's chat API over the chat service. */
export const chatCompletionsRoute = (services: AppServices, route: ChatCompletionsRoute): FastifyPluginAsyncTypebox => async (app) => {
  app.post(route.path, {
    schema: {
      tags: ['chat'],
      summary: `Chat completion in the OpenAI shape; ${route.streamByDefault ? 'server-sent events unless stream is false' : 'one chat.completion unless stream is true'}`,
      description: 'Streaming: `chat.completion.chunk` events, a usage chunk (`choices: []`), then `data: [DONE]`. ' +
        'A failure after the stream started is sent as `data: {"error": {…}}` and the stream ends without [DONE]. ' +
        'Non-streaming: a `chat.completion` with `usage`.',
      security: [{ bearer: [] }],
      body: ChatCompletionBody,
    },
  }, async (request, reply) => {
    const signal = clientGoneSignal(reply);
    const body = { ...request.body, stream: request.body.stream ?? route.streamByDefault };
    const outcome = await services.chat.start(body, request.ctx.principal.userId, signal);
    if (outcome.route) reply.headers(request.ctx.servedBy(outcome.route));
    if (outcome.kind === 'completion') {
      const usage = outcome.completion.usage;
      if (usage) request.ctx.recordUsage(usage);
      // The upstream's answer as it came when only its model name changed.
      return reply.type('application/json; charset=utf-8').send(jsonText(outcome.completion));
    }

    // Until the first chunk the answer can still be an error status (e.g. 504 when the upstream
    // accepted the call but sent nothing in time); from then on failures are events.
    const chunks = outcome.chunks[Symbol.asyncIterator]();
    let next = await chunks.next();
    reply.hijack();
    const sse = new SseWriter(reply.raw, reply.getHeaders());
    try {
      for (; !next.done; next = await chunks.next()) {
        const usage = next.value.usage;
        if (usage) request.ctx.recordUsage(usage);
        const full = sse.send(jsonText(next.value));
        if (full) await full;
      }
      sse.end('[DONE]');
    } catch (err) {
      if (signal.aborted) return;
      const error = toApiError(err as Parameters<typeof toApiError>[0], 'api');
      request.log.warn({ err, code: error.code }, 'chat stream failed after it started');
      sse.end(JSON.stringify(error.toBody('api')));
    }
  });
};

/** POST /v1/chat/completions: OpenAI's chat API, streaming by default. */
export const chatRoutes = (services: AppServices): FastifyPluginAsyncTypebox => chatCompletionsRoute(services, { path: '/v1/chat/completions', streamByDefault: true });
