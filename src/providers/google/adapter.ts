import type { AdapterContext } from '../adapter-support.ts';
import { translatedChunks } from '../chat-sse.ts';
import { ChatTransport, parsedAnswer } from '../openai/chat-transport.ts';
import type { ChatCallOptions, ChatChunk, ChatCompletion, ChatModel, ChatRequest } from '../spec.ts';
import { completionOf, GeminiStream, generateBody } from './mapping.ts';

/** Where the `google` adapter's provider is served when its settings name no base_url. */
const GEMINI_BASE_URL = 'https://generativelanguage.googleapis.com/v1beta';

/**
 * Gemini through the Gemini API: `POST {base_url}/models/{model}:generateContent`, or
 * `:streamGenerateContent?alt=sse` when streaming, key as `x-goog-api-key`.
 */
class GeminiChatModel implements ChatModel {
  private readonly transport: ChatTransport;
  private readonly opts: { provider: string; timeoutMs: number };

  constructor(
    transport: ChatTransport,
    opts: { provider: string; timeoutMs: number },
  ) {
    this.transport = transport;
    this.opts = opts;
  }

  private path(request: ChatRequest, method: string): string {
    return `/models/${encodeURIComponent(request.model.defaultRealModelName)}:${method}`;
  }

  async complete(request: ChatRequest, { signal }: ChatCallOptions): Promise<ChatCompletion> {
    const { provider } = this.opts;
    const text = await this.transport.answer(JSON.stringify(generateBody(request, provider)), signal, this.path(request, 'generateContent'));
    return completionOf(parsedAnswer(text, provider), provider, request.model.defaultRealModelName);
  }

  async stream(request: ChatRequest, { signal }: ChatCallOptions): Promise<AsyncIterable<ChatChunk>> {
    const { provider, timeoutMs } = this.opts;
    const body = await this.transport.stream(JSON.stringify(generateBody(request, provider)), signal, this.path(request, 'streamGenerateContent?alt=sse'));
    return translatedChunks(body, new GeminiStream(provider, request.model.defaultRealModelName), { provider, timeoutMs, signal });
  }
}

/** The chat model of a provider configured with `"adapter": "google"` (or the provider `google`). */
export function createGeminiChatModel(ctx: AdapterContext): ChatModel {
  const timeoutMs = ctx.client.timeoutMs!;
  const transport = new ChatTransport({
    provider: ctx.provider,
    baseURL: ctx.baseURL ?? GEMINI_BASE_URL,
    apiKey: undefined,
    authHeaders: { 'x-goog-api-key': ctx.apiKey ?? '' },
    timeoutMs,
    concurrency: ctx.client.concurrency!,
    retry: ctx.client.retry!,
  });
  return new GeminiChatModel(transport, { provider: ctx.provider, timeoutMs });
}
