import type { AdapterContext } from '../adapter-support.ts';
import { translatedChunks } from '../chat-sse.ts';
import { ChatTransport, parsedAnswer } from '../openai/chat-transport.ts';
import { readAnswer } from '../upstream-reply.ts';
import type { ChatCallOptions, ChatChunk, ChatCompletion, ChatModel, ChatRequest, NativeCall } from '../spec.ts';
import { ANTHROPIC_VERSION, AnthropicStream, completionOf, messagesBody, NativeAnthropicStream, nativeBody } from './mapping.ts';
import { AnthropicTokenCount } from './reply-schemas.ts';

/** Where the `anthropic` adapter's provider is served when its settings name no base_url. */
const ANTHROPIC_BASE_URL = 'https://api.anthropic.com/v1';

/** The call as it came in the Messages API's shape, when it did: then it is sent as it is. */
function nativeOf(request: ChatRequest): NativeCall | undefined {
  return request.native?.api === 'anthropic' ? request.native : undefined;
}

/**
 * Claude through Anthropic's Messages API (`POST {base_url}/messages`, key as `x-api-key`).
 * Rate limits, server errors and 529 overloaded_error are tried again before any answer starts.
 * A call that came in the Messages API's shape (/anthropic) goes as it came, and its answer or
 * events come back as they came besides their chat translation.
 */
class AnthropicChatModel implements ChatModel {
  private readonly transport: ChatTransport;
  private readonly opts: { provider: string; timeoutMs: number };

  constructor(
    transport: ChatTransport,
    opts: { provider: string; timeoutMs: number },
  ) {
    this.transport = transport;
    this.opts = opts;
  }

  async complete(request: ChatRequest, { signal }: ChatCallOptions): Promise<ChatCompletion> {
    const { provider } = this.opts;
    const native = nativeOf(request);
    if (!native) {
      const text = await this.transport.answer(JSON.stringify(messagesBody(request, false, provider)), signal, '/messages');
      return completionOf(parsedAnswer(text, provider), provider);
    }
    const text = await this.transport.answer(nativeBody(request, native), signal, '/messages', native.headers);
    return { ...completionOf(parsedAnswer(text, provider), provider), native: text };
  }

  async stream(request: ChatRequest, { signal }: ChatCallOptions): Promise<AsyncIterable<ChatChunk>> {
    const { provider, timeoutMs } = this.opts;
    const native = nativeOf(request);
    const body = native ? nativeBody(request, native) : JSON.stringify(messagesBody(request, true, provider));
    const events = await this.transport.stream(body, signal, '/messages', native?.headers);
    return translatedChunks(events, native ? new NativeAnthropicStream(provider) : new AnthropicStream(provider), { provider, timeoutMs, signal });
  }

  /** Anthropic's own count (`POST /messages/count_tokens`) of a count request that came in its shape. */
  async countTokens(request: ChatRequest, { signal }: ChatCallOptions): Promise<number | undefined> {
    const { provider } = this.opts;
    const native = nativeOf(request);
    if (!native) return undefined;
    const text = await this.transport.answer(nativeBody(request, native), signal, '/messages/count_tokens', native.headers);
    return readAnswer(AnthropicTokenCount, parsedAnswer(text, provider), provider).input_tokens;
  }
}

/** The chat model of a provider configured with `"adapter": "anthropic"` (or the provider `anthropic`). */
export function createAnthropicChatModel(ctx: AdapterContext): ChatModel {
  const timeoutMs = ctx.client.timeoutMs!;
  const transport = new ChatTransport({
    provider: ctx.provider,
    baseURL: ctx.baseURL ?? ANTHROPIC_BASE_URL,
    apiKey: undefined,
    authHeaders: { 'x-api-key': ctx.apiKey ?? '', 'anthropic-version': ANTHROPIC_VERSION },
    timeoutMs,
    concurrency: ctx.client.concurrency!,
    retry: ctx.client.retry!,
  });
  return new AnthropicChatModel(transport, { provider: ctx.provider, timeoutMs });
}
