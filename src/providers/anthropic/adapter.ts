import type { AdapterContext } from '../adapter-support.ts';
import { translatedChunks } from '../chat-sse.ts';
import { answerJson, ChatTransport } from '../openai/chat-transport.ts';
import type { ChatCallOptions, ChatChunk, ChatCompletion, ChatModel, ChatRequest } from '../spec.ts';
import { ANTHROPIC_VERSION, AnthropicStream, completionOf, messagesBody } from './mapping.ts';

/** Where the `anthropic` adapter's provider is served when its settings name no base_url. */
const ANTHROPIC_BASE_URL = 'https://api.anthropic.com/v1';

/**
 * Claude through Anthropic's Messages API (`POST {base_url}/messages`, key as `x-api-key`).
 * Rate limits, server errors and 529 overloaded_error are tried again before any answer starts.
 */
class AnthropicChatModel implements ChatModel {
  constructor(
    private readonly transport: ChatTransport,
    private readonly opts: { provider: string; timeoutMs: number },
  ) {}

  async complete(request: ChatRequest, { signal }: ChatCallOptions): Promise<ChatCompletion> {
    const { provider } = this.opts;
    const res = await this.transport.post(JSON.stringify(messagesBody(request, false, provider)), false, signal, '/messages');
    const reply = await answerJson(res, provider, signal);
    return completionOf(reply, provider);
  }

  async stream(request: ChatRequest, { signal }: ChatCallOptions): Promise<AsyncIterable<ChatChunk>> {
    const { provider, timeoutMs } = this.opts;
    const res = await this.transport.post(JSON.stringify(messagesBody(request, true, provider)), true, signal, '/messages');
    return translatedChunks(res.body, new AnthropicStream(provider), { provider, timeoutMs, signal });
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
