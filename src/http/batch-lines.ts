/**
 * The executor of batch lines: each line's body checked against the schema of its endpoint's
 * route and run through the services that route calls, under the batch creator's limits (the
 * admission every call passes, its ledger row naming the batch), answered as the route would.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyError } from 'fastify';
import type { TSchema } from 'typebox';
import { ApiError } from '../core/errors.ts';
import { bodyValidators } from '../core/schema-validators.ts';
import { EmbeddingsBody } from '../embeddings/schemas.ts';
import type { Admission } from '../limits/limits-service.ts';
import { OpenAiImageAnswers, OpenAiImagesBody, imageRequest } from '../openai/images.ts';
import { ResponsesBody, type ResponsesRequest } from '../openai/responses-schemas.ts';
import { jsonText } from '../providers/kept-json.ts';
import type { ChatUsage, ServedRoute } from '../providers/spec.ts';
import type { ChatCompletionInput } from '../core/chat-input.ts';
import type { BatchEndpoint } from '../batches/batch-input.ts';
import type { BatchLineCall, BatchLineExecutor, BatchLineResponse } from '../batches/batch-runner.ts';
import type { GenerationOutcome } from '../tasks/generation-service.ts';
import { COUNTS_TOKENS } from './plugins/admission.ts';
import { toApiError } from './plugins/errors.ts';
import { ChatCompletionBody } from './routes/chat.ts';
import { OPENAI_PREFIX } from './routes/openai.ts';
import type { AppServices } from './services.ts';

/** The longest a line waits for the caller's request rate to allow it, per try. */
const MAX_RATE_WAIT_MS = 60_000;

const BODIES: Record<BatchEndpoint, TSchema> = {
  '/v1/chat/completions': ChatCompletionBody,
  '/v1/embeddings': EmbeddingsBody,
  '/v1/responses': ResponsesBody,
  '/v1/images/generations': OpenAiImagesBody,
};

/** What a line learned on its way: who served it. */
interface LineContext {
  call: BatchLineCall;
  admission: Admission;
  served?: ServedRoute;
}

type Handler = (body: Record<string, unknown>, line: LineContext) => Promise<unknown>;

export function batchLineExecutor(services: AppServices): BatchLineExecutor {
  const validators = new Map(Object.entries(BODIES).map(([endpoint, schema]) => [endpoint, bodyValidators.compile(schema)]));
  const imageAnswers = new OpenAiImageAnswers({ catalog: services.catalog, files: services.files });

  const handlers: Record<BatchEndpoint, Handler> = {
    // Lines never stream: each answers one object, as the route does with stream false.
    '/v1/chat/completions': async (body, line) => {
      const outcome = await services.chat.start({ ...(body as unknown as ChatCompletionInput), stream: false }, line.call.principal.userId, line.call.signal);
      if (outcome.route) line.served = outcome.route;
      if (outcome.kind !== 'completion') throw new Error('a chat line answered a stream');
      const usage = outcome.completion.usage;
      if (usage) line.admission.recordUsage(usage);
      return JSON.parse(jsonText(outcome.completion)) as unknown;
    },
    '/v1/embeddings': async (body, line) => {
      const answer = await services.embeddings.embed(body as unknown as EmbeddingsBody, line.call.signal);
      line.admission.recordUsage({ ...answer.usage, completion_tokens: 0 });
      return answer;
    },
    '/v1/responses': async (body, line) => {
      const metered = (usage: ChatUsage) => line.admission.recordUsage(usage);
      const outcome = await services.openaiResponses.create({ ...(body as unknown as ResponsesRequest), stream: false }, line.call.principal, line.call.signal, metered);
      if (outcome.route) line.served = outcome.route;
      if (outcome.kind === 'upstream-response') {
        if (outcome.usage) metered(outcome.usage);
        return JSON.parse(outcome.text) as unknown;
      }
      if (outcome.kind !== 'response') throw new Error('a responses line answered a stream');
      return outcome.response;
    },
    '/v1/images/generations': async (body, line) => {
      const { input, options } = imageRequest({ ...(body as unknown as OpenAiImagesBody), stream: false });
      const caller = { ownerId: line.call.principal.userId, clientId: null, requestId: line.call.requestId, admission: line.admission };
      let outcome: GenerationOutcome = await services.images.generate(caller, input, 'sync');
      try {
        // A line waits for its image however long it takes (the batch's window bounds it).
        while (outcome.kind === 'still_running') {
          line.call.signal.throwIfAborted();
          const record = await services.tasks.waitForEnd(outcome.task.id, services.settings.syncTimeoutMs);
          if (record) outcome = { kind: 'ended', task: outcome.task, record };
        }
        return await imageAnswers.answer(outcome, options);
      } finally {
        await services.limits.tagBatchTask(outcome.task.id, line.call.batchId);
      }
    },
  };

  /** Admits the line as its direct call would be; waits out the caller's request rate instead of failing the line. */
  async function admit(call: BatchLineCall, route: string, body: Record<string, unknown>): Promise<Admission> {
    for (;;) {
      try {
        return await services.limits.admit(call.principal, call.requestId, { route, body, countsTokens: COUNTS_TOKENS.test(route), batchId: call.batchId });
      } catch (err) {
        if (!(err instanceof ApiError) || err.code !== 'rate_limited') throw err;
        const seconds = Number(err.headers['retry-after'] ?? 1);
        await sleep(Math.min(MAX_RATE_WAIT_MS, Math.max(1, seconds) * 1000), undefined, { signal: call.signal });
      }
    }
  }

  function errorResponse(err: unknown): BatchLineResponse {
    const error = toApiError(err as FastifyError, 'api');
    if (error.status >= 500) services.logger.error({ err }, 'a batch line failed');
    return { status_code: error.status, body: error.toBody('api') };
  }

  return async (call) => {
    // The route the direct call takes: the ledger row's endpoint, and what limits count.
    const route = `POST ${OPENAI_PREFIX}${call.endpoint.slice('/v1'.length)}`;
    let admission: Admission;
    try {
      admission = await admit(call, route, call.body);
    } catch (err) {
      return errorResponse(err);
    }
    const line: LineContext = { call, admission };
    let status = 200;
    try {
      const validate = validators.get(call.endpoint)!;
      if (!validate(call.body)) throw Object.assign(new Error('invalid body'), { validation: validate.errors, validationContext: 'body' });
      return { status_code: 200, body: await handlers[call.endpoint](call.body, line) };
    } catch (err) {
      admission.failedWith(err);
      const response = errorResponse(err);
      status = response.status_code;
      return response;
    } finally {
      // As a route's call is settled once its answer is out: the next line need not wait for the ledger's write.
      void admission.end(status, line.served);
    }
  };
}
