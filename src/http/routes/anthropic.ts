/**
 * /anthropic/v1: Anthropic's Messages API as Anthropic's SDKs and Claude Code call it, over the
 * same services as /v1. Registered as its own group in app.ts: API tokens as `x-api-key` or
 * bearer, the same admission as /v1, Anthropic's error shape and a `request-id` on every answer.
 */
import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { SseWriter } from '../../chat/sse-writer.ts';
import { ApiError } from '../../core/errors.ts';
import { CountTokensBody, MessagesBody, type MessagesRequest, type PromptRequest } from '../../anthropic/messages-schemas.ts';
import type { PassedHeaders } from '../../anthropic/messages-service.ts';
import { clientGoneSignal } from '../client-gone.ts';
import type { AppServices } from '../services.ts';

export const ANTHROPIC_PREFIX = '/anthropic';

/** The header that carries an API token besides `Authorization: Bearer`. */
export const ANTHROPIC_KEY_HEADER = 'x-api-key';

const security = [{ bearer: [] }];
const tags = ['anthropic'];

function passedHeaders(headers: Record<string, string | string[] | undefined>): PassedHeaders {
  const beta = headers['anthropic-beta'];
  const joined = Array.isArray(beta) ? beta.join(',') : beta;
  return joined ? { beta: joined } : {};
}

/** The routes under /anthropic (register with `{prefix: ANTHROPIC_PREFIX}` in their own group). */
export const anthropicRoutes = (services: AppServices): FastifyPluginAsyncTypebox => async (app) => {
  const messages = services.anthropicMessages;

  app.post('/v1/messages', {
    config: { callName: 'anthropic.messages', countsTokens: true },
    schema: {
      tags,
      summary: 'Anthropic\'s Messages API: one message, or its events with stream: true',
      description: 'Any text_generate model of the catalog. An `anthropic` upstream gets the request as it came (its model replaced); other upstreams get it translated. ' +
        'Streaming: `event:` + `data:` frames (message_start, content_block_start/delta/stop, message_delta, message_stop; ping at any time); a failure after the first event ends the stream with an `error` event.',
      security,
      body: MessagesBody,
    },
  }, async (request, reply) => {
    const signal = clientGoneSignal(reply);
    const outcome = await messages.create(request.body as MessagesRequest, passedHeaders(request.headers), request.ctx.principal.userId, signal);
    if (outcome.route) reply.headers(request.ctx.servedBy(outcome.route));
    if (outcome.kind === 'message') {
      if (outcome.usage) request.ctx.recordUsage(outcome.usage);
      return reply.type('application/json; charset=utf-8').send(outcome.body);
    }
    // Until the first event the answer can still be an error status (and the call move to another channel).
    const events = outcome.events[Symbol.asyncIterator]();
    let next = await events.next();
    reply.hijack();
    const sse = new SseWriter(reply.raw, reply.getHeaders());
    try {
      for (; !next.done; next = await events.next()) await sse.send(next.value.data, next.value.event);
    } catch (err) {
      // Only the client's going away ends the events with a throw: nothing more reaches it.
      if (!signal.aborted) request.log.warn({ err }, 'anthropic stream failed');
    }
    if (outcome.failure) request.log.warn({ err: outcome.failure }, 'anthropic stream failed after it started');
    const usage = outcome.usage;
    if (usage) request.ctx.recordUsage(usage);
    sse.end();
  });

  app.post('/v1/messages/count_tokens', {
    schema: { tags, summary: 'The input tokens of a Messages API request: the upstream\'s count for an `anthropic` upstream, else an estimate', security, body: CountTokensBody },
  }, async (request, reply) => messages.countTokens(request.body as PromptRequest, passedHeaders(request.headers), request.ctx.principal.userId, clientGoneSignal(reply)));

  app.get('/v1/models', {
    schema: { tags, summary: 'The enabled text_generate models, as Anthropic lists models', security },
  }, async () => {
    const data = messages.models();
    return { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
  });

  app.get('/v1/models/:model_id', {
    schema: { tags, summary: 'One model', security, params: Type.Object({ model_id: Type.String() }) },
  }, async (request) => messages.model(request.params.model_id));

  app.setNotFoundHandler((request, reply) => {
    const error = new ApiError('route_not_found', `no route ${request.method} ${request.url.split('?')[0]}`);
    return reply.code(error.status).type('application/json; charset=utf-8').send(error.toBody('anthropic', request.id));
  });
};
