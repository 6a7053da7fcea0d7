/**
 * OpenAI's Responses API passed through (adapter `openai`): the caller's body goes to the
 * upstream's /responses with only `model` replaced by the upstream's model name, and its answer
 * or events come back as they were sent; only the usage is read, for the ledger.
 */
import type { Readable } from 'node:stream';
import type { LiveModel } from '../../catalog/catalog.ts';
import { ApiError } from '../../core/errors.ts';
import { midStreamError, sseData, streamFrame } from '../chat-sse.ts';
import type { ChatCallOptions, ChatUsage, ResponsesApi, UpstreamResponses, UpstreamResponsesEvent } from '../spec.ts';
import { readAnswer, type ReplyOf } from '../upstream-reply.ts';
import { parsedAnswer, type ChatTransport } from './chat-transport.ts';
import { OpenAiResponse, OpenAiResponsesEvent } from './reply-schemas.ts';

/** The events after which a Responses stream is complete. */
const FINAL_EVENTS = new Set(['response.completed', 'response.incomplete', 'response.failed', 'error']);

type ResponsesUsage = NonNullable<ReplyOf<typeof OpenAiResponse>['usage']>;

/** A Responses usage in the chat shape the ledger reads; the cached input tokens as prompt_tokens_details. */
export function chatUsageOf(usage: ResponsesUsage): ChatUsage {
  const cached = usage.input_tokens_details?.cached_tokens;
  return {
    prompt_tokens: usage.input_tokens,
    completion_tokens: usage.output_tokens,
    total_tokens: usage.total_tokens ?? usage.input_tokens + usage.output_tokens,
    ...(cached != null ? { prompt_tokens_details: { cached_tokens: cached } } : {}),
  };
}

export class OpenAiResponsesApi implements ResponsesApi {
  private readonly transport: ChatTransport;
  private readonly opts: { provider: string; timeoutMs: number };

  constructor(
    transport: ChatTransport,
    opts: { provider: string; timeoutMs: number },
  ) {
    this.transport = transport;
    this.opts = opts;
  }

  async respond(model: LiveModel, body: Record<string, unknown>, { signal }: ChatCallOptions): Promise<UpstreamResponses> {
    const { provider } = this.opts;
    const stream = body.stream === true;
    const sent = JSON.stringify({ ...body, model: model.defaultRealModelName });
    if (!stream) {
      const text = await this.transport.answer(sent, signal, '/responses');
      const usage = readAnswer(OpenAiResponse, parsedAnswer(text, provider), provider).usage;
      return { kind: 'response', text, usage: usage ? chatUsageOf(usage) : undefined };
    }
    return { kind: 'stream', events: this.events(await this.transport.stream(sent, signal, '/responses'), signal) };
  }

  /** The upstream's events as sent; a broken connection, a frame that is not an event, or an end before the response ended is thrown. */
  private async *events(body: Readable, signal: AbortSignal): AsyncGenerator<UpstreamResponsesEvent> {
    const { provider, timeoutMs } = this.opts;
    let finished = false;
    try {
      for await (const data of sseData(body)) {
        if (finished) continue;
        const event = readAnswer(OpenAiResponsesEvent, streamFrame(data, provider), provider);
        finished = FINAL_EVENTS.has(event.type);
        const usage = event.response?.usage;
        yield { type: event.type, data, ...(usage ? { usage: chatUsageOf(usage) } : {}) };
      }
    } catch (err) {
      signal.throwIfAborted();
      if (err instanceof ApiError) throw err;
      throw midStreamError(provider, err as Error, timeoutMs);
    } finally {
      if (!body.readableEnded) body.destroy();
    }
    if (!finished) throw new ApiError('upstream_error', `${provider} ended the Responses stream before the response ended`);
  }
}
