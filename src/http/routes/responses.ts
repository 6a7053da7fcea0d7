import type { FastifyRequest } from 'fastify';
import type { MultipartFile } from '@fastify/multipart';
import { Type, type TSchema } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { INPUT_ROLES, parseJsonInput, type ResponsesInput } from '../../agent/agent-input.ts';
import type { ChatInputPart } from '../../core/chat-input.ts';
import { SseWriter } from '../../chat/sse-writer.ts';
import { ApiError } from '../../core/errors.ts';
import { guessMimeType } from '../../core/mime-type.ts';
import type { FileService, PendingFile } from '../../files/file-service.ts';
import type { AppServices } from '../services.ts';
import { ContentPart } from './chat.ts';
import { SkillFields } from './skills.ts';

type Schema = Record<string, unknown>;
const raw = (schema: Schema): TSchema => schema as TSchema;

/** Request ids as the access log accepts them in x-request-id. */
const REQUEST_ID = '^[\\w.:-]{1,128}$';
const MAX_IMAGES = 16;
/** Fields of the multipart form that carry JSON. */
const JSON_FIELDS = ['userMessage', 'skill_options'] as const;
const BOOLEAN_FIELDS = ['stream', 'useGlobalMainAgent'] as const;

const InputMessage: Schema = {
  type: 'object',
  required: ['role', 'content'],
  properties: {
    role: { type: 'string', enum: INPUT_ROLES },
    content: { type: ['string', 'array'], items: ContentPart },
    name: { type: 'string' },
  },
};

const SkillOptions = Type.Object({
  personal_skill_ids: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { maxItems: 50, description: 'the caller\'s skills (POST /v1/skills)' })),
  /** A skill for this request only; not stored. */
  ephemeral_skill: Type.Optional(SkillFields),
}, { additionalProperties: false });

/** The body; other fields are accepted and ignored. */
const ResponsesBody = Type.Object({
  input: raw({
    type: ['string', 'array'],
    minLength: 1,
    minItems: 1,
    items: InputMessage,
    description: 'plain text; a JSON string holding a message array; or an array of messages (role user, assistant or system; content a string or content parts)',
  }),
  model: Type.String({ minLength: 1, description: 'catalog alias of a text_generate or omni model' }),
  stream: Type.Optional(Type.Boolean({ description: 'default true: server-sent events' })),
  images: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { maxItems: MAX_IMAGES, description: 'image URLs appended as image_url parts to the last user message' })),
  requestId: Type.Optional(Type.String({ pattern: REQUEST_ID, description: 'to trace and cancel the run; default: the x-request-id of the request, else generated' })),
  conversationId: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'stored conversation of the caller: its history goes first and the turn is kept' })),
  userMessage: Type.Optional(Type.Object({}, { additionalProperties: true, description: 'the client\'s snapshot of the current user message; not sent to the model' })),
  agentId: Type.Optional(Type.String({ minLength: 1, description: 'a knowledge-base agent of the caller or of the deployment' })),
  useGlobalMainAgent: Type.Optional(Type.Boolean({ description: 'without agentId: use the deployment\'s main agent, when there is one' })),
  skill_options: Type.Optional(SkillOptions),
}, { additionalProperties: true });

/** A file part of a multipart request, written but not yet the caller's. */
interface PendingAttachment {
  pending: PendingFile;
  fileName: string;
  mimeType: string;
}

/** The part a stored file becomes, by its type. */
function attachmentPart(url: string, mimeType: string, fileName: string): ChatInputPart {
  if (mimeType.startsWith('image/')) return { type: 'image_url', image_url: { url } };
  if (mimeType.startsWith('video/')) return { type: 'video_url', video_url: { url } };
  if (mimeType.startsWith('audio/')) return { type: 'input_audio', input_audio: { url } };
  return { type: 'file_url', file_url: { url, file_name: fileName } };
}

function parseJsonField(name: string, value: string): unknown {
  try {
    return JSON.parse(value);
  } catch {
    throw new ApiError('invalid_parameter', `${name} must be a JSON-serialized object`, name);
  }
}

/**
 * The multipart `input`: JSON when it looks like JSON (a message array, one message, or a
 * JSON string), and then it must parse; anything else is plain text.
 */
function formInput(value: string): unknown {
  const start = value.trimStart()[0];
  if (start !== '[' && start !== '{' && start !== '"') return value;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new ApiError('invalid_parameter', 'input starts like JSON but is not valid JSON; send plain text or a JSON-serialized message array', 'input');
  }
  return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? [parsed] : parsed;
}

/** Reads the multipart form: text fields (JSON ones parsed), and every file part written as a pending attachment. */
async function readForm(request: FastifyRequest, files: FileService, maxBytes: number, written: PendingAttachment[]): Promise<Record<string, unknown>> {
  const fields: Record<string, unknown> = {};
  const images: string[] = [];
  for await (const part of request.parts()) {
    if (part.type === 'file') {
      const filePart = part as MultipartFile;
      let pending: PendingFile;
      try {
        pending = await files.write(filePart.file);
      } catch (err) {
        throw (err as { code?: string }).code === 'FST_REQ_FILE_TOO_LARGE' ? new ApiError('file_too_large', `${filePart.fieldname} is larger than the ${+(maxBytes / 1024 / 1024).toFixed(2)} MB limit`, filePart.fieldname) : err;
      }
      const fileName = filePart.filename || filePart.fieldname;
      const declared = filePart.mimetype && filePart.mimetype !== 'application/octet-stream' ? filePart.mimetype : undefined;
      written.push({ pending, fileName, mimeType: declared ?? guessMimeType(fileName, await files.head(pending)) });
      continue;
    }
    const value = String(part.value);
    const name = part.fieldname.replace(/\[\d*\]$/, '');
    if (name === 'images') {
      const list = value.trimStart().startsWith('[') ? parseJsonField('images', value) : [value];
      if (!Array.isArray(list)) throw new ApiError('invalid_parameter', 'images must be URLs or a JSON array of URLs', 'images');
      images.push(...(list as string[]));
    } else if (name === 'input') fields.input = formInput(value);
    else if ((JSON_FIELDS as readonly string[]).includes(name)) fields[name] = parseJsonField(name, value);
    else if ((BOOLEAN_FIELDS as readonly string[]).includes(name)) fields[name] = value === 'true' || value === '1' ? true : value === 'false' || value === '0' ? false : value;
    else fields[name] = value;
  }
  if (images.length > 0) fields.images = images;
  return fields;
}

/**
 * POST /v1/responses, the agent stream, and its cancel.
 * Validation failures answer the contract's JSON error before the stream starts; later
 * failures are `error` events (after response.failed and response.error in knowledge-base
 * mode); every stream ends with `data: [DONE]`.
 */
export const responseRoutes = (services: AppServices): FastifyPluginAsyncTypebox => async (app) => {
  const { files, settings } = services;
  const { responses } = services.agents;
  const validateBody = app.validatorCompiler!({ schema: ResponsesBody, method: 'POST', url: '/v1/responses', httpPart: 'body' });

  /** Checks a body the route schema did not (multipart, or a JSON string input parsed into messages). */
  function checked(body: Record<string, unknown>): ResponsesInput {
    if (validateBody(body) !== true) {
      throw Object.assign(new Error('invalid body'), { validation: (validateBody as { errors?: unknown[] }).errors, validationContext: 'body' });
    }
    return body as unknown as ResponsesInput;
  }

  /** The body with a JSON-string input read as its messages (input forms). */
  function withParsedInput(body: Record<string, unknown>): ResponsesInput {
    const messages = typeof body.input === 'string' ? parseJsonInput(body.input) : undefined;
    return messages ? checked({ ...body, input: messages }) : (body as unknown as ResponsesInput);
  }

  async function fromForm(request: FastifyRequest): Promise<ResponsesInput> {
    const written: PendingAttachment[] = [];
    try {
      const body = withParsedInput(checked(await readForm(request, files, settings.maxFileBytes, written)) as unknown as Record<string, unknown>);
      if (written.length === 0) return body;
      const attachments: ChatInputPart[] = [];
      for (const each of written) {
        const saved = await files.register(request.ctx.principal.userId, each.pending, each.fileName, each.mimeType);
        attachments.push(attachmentPart(saved.url, each.mimeType, each.fileName));
      }
      return { ...body, attachments };
    } catch (err) {
      await Promise.all(written.map((each) => files.discard(each.pending)));
      throw err;
    }
  }

  app.post('/v1/responses', {
    schema: {
      tags: ['agent'],
      summary: 'Run the agent; server-sent events unless stream is false',
      description: 'JSON, or multipart/form-data with `input`, `userMessage` and `skill_options` as JSON-serialized strings and any file parts attached to the last user message. '
        + 'Base agent mode: `agent_updated_stream_event` (with request_id), `raw_model_stream_event` text deltas, then `run_item_stream_event`s (tool_called, tool_approval_requested, tool_output, message_output_created). '
        + 'Knowledge-base mode (agentId or useGlobalMainAgent, and the documents match): `response.*` events with sequence_number. '
        + 'Failures: `{type: "error", message, code}` (code 499 when cancelled). Always ends with `data: [DONE]`. '
        + 'stream false: `{id, object: "response", request_id, status, model, mode, output: [items], output_text, usage}`.',
      security: [{ bearer: [] }],
      body: { content: { 'application/json': { schema: ResponsesBody } } },
    },
  }, async (request, reply) => {
    const body = request.isMultipart() ? await fromForm(request) : withParsedInput(request.body as Record<string, unknown>);
    const requestId = body.requestId ?? request.id;
    const run = await responses.start(body, { principal: request.ctx.principal, requestId });
    reply.header('x-request-id', requestId);
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) run.abort(new ApiError('request_cancelled', 'the client went away'));
    });
    if (body.stream === false) {
      try {
        const answer = await run.complete();
        if (run.route) reply.headers(request.ctx.servedBy(run.route));
        return answer;
      } finally {
        request.ctx.recordUsage(run.usage);
      }
    }

    // The headers name the channel of the run's first model call: the events before its answer wait for it.
    const events = run.stream()[Symbol.asyncIterator]();
    const early = [];
    let next = await events.next();
    for (; !next.done && !run.route; next = await events.next()) early.push(next.value);
    if (run.route) reply.headers(request.ctx.servedBy(run.route));
    reply.hijack();
    const sse = new SseWriter(reply.raw, reply.getHeaders());
    for (const event of early) await sse.send(JSON.stringify(event));
    for (; !next.done; next = await events.next()) await sse.send(JSON.stringify(next.value));
    request.ctx.recordUsage(run.usage);
    sse.end('[DONE]');
  });

  app.post('/v1/responses/cancel/:requestId', {
    schema: {
      tags: ['agent'],
      summary: 'Cancel a running agent stream of the caller',
      description: 'The stream ends with `{type: "error", code: 499}` (after response.failed in knowledge-base mode), then [DONE]; its model call and running tool are stopped. 404 request_not_found when the caller has no running stream with that id.',
      security: [{ bearer: [] }],
      params: Type.Object({ requestId: Type.String({ minLength: 1 }) }),
      response: { 200: Type.Object({ request_id: Type.String(), cancelled: Type.Literal(true) }) },
    },
  }, async (request) => {
    await responses.cancel(request.ctx.principal.userId, request.params.requestId);
    return { request_id: request.params.requestId, cancelled: true as const };
  });
};
