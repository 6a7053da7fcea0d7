import type { LiveModel } from '../../catalog/catalog.ts';
import { languageCapabilityOf } from '../../catalog/capabilities.ts';
import type { AdapterContext } from '../adapter-support.ts';
import type { ChatCallOptions, ChatChunk, ChatCompletion, ChatMessage, ChatModel, ChatParams, ChatRequest, ResponsesApi } from '../spec.ts';
import { OpenAiResponsesApi } from './responses-api.ts';
import { chatChunks } from './chat-stream.ts';
import { keepable, keptJson } from '../kept-json.ts';
import { readAnswer } from '../upstream-reply.ts';
import { ChatTransport, parsedAnswer } from './chat-transport.ts';
import { OpenAiChat } from './reply-schemas.ts';

type OutputTokenParameter = 'max_tokens' | 'max_completion_tokens';

/** The output-token limit parameter the model takes, as its catalog entry says (reasoning models refuse max_tokens). */
function outputTokenParameterOf(model: LiveModel): OutputTokenParameter | undefined {
  return languageCapabilityOf(model)?.outputTokenParameter;
}

/** The client's limit under the name the model takes, when the client used the other name. */
function withOutputTokenParameter(params: ChatParams, model: LiveModel): ChatParams {
  const wanted = outputTokenParameterOf(model);
  if (!wanted) return params;
  const other: OutputTokenParameter = wanted === 'max_tokens' ? 'max_completion_tokens' : 'max_tokens';
  if (params[other] === undefined || params[wanted] !== undefined) return params;
  const { [other]: limit, ...rest } = params;
  return { ...rest, [wanted]: limit };
}

/**
 * The body sent upstream: the upstream's model name, the conversation, the client's parameters
 * as they came (provider-specific ones included), and, when streaming, usage always asked for so
 * every stream ends with a usage chunk.
 */
export function chatBody(request: ChatRequest, stream: boolean): string {
  const params = withOutputTokenParameter(request.params, request.model);
  // No rest pattern and no spread after other fields: V8 takes a slow path per property for both.
  return JSON.stringify({
    ...params,
    model: request.model.defaultRealModelName,
    messages: request.messages.some((m) => m.thinking_blocks !== undefined) ? request.messages.map(withoutThinking) : request.messages,
    stream,
    // The caller's own stream_options gives way: a stream always asks for usage, a whole answer takes none (undefined is left out).
    stream_options: stream ? { ...params.stream_options, include_usage: true } : undefined,
  });
}

/** Thinking blocks are Anthropic's (a conversation that moved here from a Claude model): OpenAI refuses unknown fields. */
function withoutThinking({ thinking_blocks: _thinking, ...message }: ChatMessage): ChatMessage {
  return message;
}

/** An OpenAI-compatible chat API (OpenAI, vLLM, Ollama, DeepSeek, …) behind one base URL. */
export class OpenAiChatModel implements ChatModel {
  readonly responses: ResponsesApi | undefined;

  private readonly transport: ChatTransport;
  private readonly opts: { provider: string; timeoutMs: number; servesResponses?: boolean };

  constructor(
    transport: ChatTransport,
    opts: { provider: string; timeoutMs: number; servesResponses?: boolean },
  ) {
    this.transport = transport;
    this.opts = opts;
    this.responses = opts.servesResponses ? new OpenAiResponsesApi(transport, opts) : undefined;
  }

  async complete(request: ChatRequest, { signal }: ChatCallOptions): Promise<ChatCompletion> {
    const { provider } = this.opts;
    const text = await this.transport.answer(chatBody(request, false), signal);
    // An object naming choices and no error is taken for a completion as it is, and passed on unparsed.
    if (keepable(text)) return keptJson<ChatCompletion>(text);
    return readAnswer(OpenAiChat, parsedAnswer(text, provider), provider) as ChatCompletion;
  }

  async stream(request: ChatRequest, { signal }: ChatCallOptions): Promise<AsyncIterable<ChatChunk>> {
    const body = await this.transport.stream(chatBody(request, true), signal);
    return chatChunks(body, { provider: this.opts.provider, timeoutMs: this.opts.timeoutMs, signal });
  }
}

/** Where the `openai` adapter's provider is served when its settings name no base_url. */
export const OPENAI_BASE_URL = 'https://api.openai.com/v1';

/** The chat model of a configured provider (GENGATE_CONFIG providers.<code>). */
export function createOpenAiChatModel(ctx: AdapterContext): ChatModel {
  const timeoutMs = ctx.client.timeoutMs!;
  const transport = new ChatTransport({
    provider: ctx.provider,
    baseURL: ctx.baseURL ?? OPENAI_BASE_URL,
    apiKey: ctx.apiKey,
    timeoutMs,
    concurrency: ctx.client.concurrency!,
    retry: ctx.client.retry!,
  });
  // Only OpenAI's own API is known to serve /responses; other OpenAI-compatible servers get chat calls.
  const servesResponses = (ctx.settings.adapter ?? ctx.provider) === 'openai';
  return new OpenAiChatModel(transport, { provider: ctx.provider, timeoutMs, servesResponses });
}
