import type { LiveModel } from '../catalog/catalog.ts';
import type { CapabilityName } from '../catalog/schema.ts';
import type { OutboundUrlPolicy } from '../core/outbound-urls.ts';
import type { FileService } from '../files/file-service.ts';
import type { ChatModelRegistry } from '../providers/registry.ts';
import type { ChatChunk, ChatCompletion, ChatMessage, ChatModel, ChatParams, ChatRequest, ChatUsage, NativeCall, RoutedResponses, ServedRoute, UpstreamResponsesEvent } from '../providers/spec.ts';
import type { ConversationsRepo } from '../storage/repos/conversations-repo.ts';
import type { ChatCompletionInput, ChatInputMessage } from '../core/chat-input.ts';
import { adaptMessages, mediaSupportOf, normaliseMessages } from './content-parts.ts';
import { StreamedReply } from './streamed-reply.ts';
import { keptCompletionChars } from '../providers/kept-json.ts';
import { failSpan, GEN_AI, openSpan, SpanKind, tracingEnabled, withSpan } from '../telemetry/tracing.ts';
import type { Span } from '@opentelemetry/api';
import { DONE } from '../core/iteration-done.ts';

/** A chat model needs one of these types (else 400 model_capability_mismatch). */
export const CHAT_CAPABILITIES: readonly CapabilityName[] = ['text_generate', 'omni'];
/** Characters per token when a model reports no usage (OpenAI's rule of thumb for English). */
const CHARS_PER_TOKEN = 4;
const NO_HISTORY: ChatMessage[] = [];

export interface ChatServiceDeps {
  models: ChatModelRegistry;
  /** The catalog model a request may use, or the contract's 404/400. */
  resolveModel(alias: string, capabilities: readonly CapabilityName[]): LiveModel;
  files: FileService;
  conversations: ConversationsRepo;
  /** Refuses content-part URLs the gateway would not fetch (docs/security.md). */
  urls: OutboundUrlPolicy;
  /** Largest base64 file a message may carry. */
  maxFileBytes: number;
}

export type ChatOutcome = (
  | { kind: 'completion'; completion: ChatCompletion }
  /** Chunks for the client, the last one a usage chunk; the iteration throws when the model fails midway. */
  | { kind: 'stream'; chunks: AsyncIterable<ChatChunk> }
) & {
  /** The model, provider and channel that took the call (the x-gengate-* headers). */
  route?: ServedRoute;
};

/** A call of OpenAI's Responses API: the caller's body, and the chat call it translates to. */
export interface ResponsesInput {
  model: string;
  body: Record<string, unknown>;
  stream: boolean;
  params: ChatParams;
  /** The conversation as chat messages; read only when the call is made as a chat call. */
  messages(): Promise<ChatInputMessage[]>;
}

/** How a Responses call was answered (see ChatModelRegistry.respond), and who served it. */
export type ResponsesOutcome = RoutedResponses & { route?: ServedRoute };

/** A call's model and messages, settled before the model is called. */
export interface PreparedChat {
  model: LiveModel;
  chatModel: ChatModel;
  /** The request's messages as a conversation keeps them (media by URL). */
  added: ChatMessage[];
  /** The conversation's history, then `added`, as this model reads them. */
  messages: ChatMessage[];
}

interface ConversationTurn {
  ownerId: string;
  id: string;
  /** The turn's new messages as stored (media by URL). */
  added: ChatMessage[];
}

function textLength(message: ChatMessage): number {
  if (typeof message.content === 'string') return message.content.length;
  let length = 0;
  for (const part of message.content ?? []) if (part.type === 'text') length += part.text.length;
  return length;
}

/** The usage of a call whose model reported none, estimated from its text. */
function estimatedUsage(request: ChatRequest, completionChars: number): ChatUsage {
  const prompt = Math.ceil(request.messages.reduce((sum, m) => sum + textLength(m), 0) / CHARS_PER_TOKEN);
  const completion = Math.ceil(completionChars / CHARS_PER_TOKEN);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

/** Characters of text and tool calls in a streamed chunk; a chunk kept as its text is counted in its text, not parsed. */
function completionCharsOf(chunk: ChatChunk): number {
  const kept = keptCompletionChars(chunk);
  if (kept !== undefined) return kept;
  let chars = 0;
  for (const choice of chunk.choices) {
    chars += choice.delta.content?.length ?? 0;
    for (const call of choice.delta.tool_calls ?? []) chars += (call.function?.name?.length ?? 0) + (call.function?.arguments?.length ?? 0);
  }
  return chars;
}

/** The assistant message of a completion as a conversation keeps it. */
function replyOf(completion: ChatCompletion): ChatMessage {
  const message = completion.choices[0]?.message;
  return { role: 'assistant', content: message?.content ?? null, ...(message?.tool_calls?.length ? { tool_calls: message.tool_calls } : {}) };
}

/** Ends a chat call's span with what served it and the tokens counted. */
function endChatSpan(span: Span, route: ServedRoute | undefined, usage: ChatUsage | null | undefined): void {
  if (route) span.setAttributes({ [GEN_AI.responseModel]: route.model, [GEN_AI.providerName]: route.provider, [GEN_AI.system]: route.provider, 'gengate.routing.channel': route.channel });
  if (usage) span.setAttributes({ [GEN_AI.inputTokens]: usage.prompt_tokens, [GEN_AI.outputTokens]: usage.completion_tokens });
  span.end();
}

/**
 * Chat completions: the model checked against the catalog, the messages normalised (uploads,
 * media the model cannot read as links), a named conversation's history sent first, the call
 * made on the model's chat engine, and the turn stored once the answer is complete.
 */
export class ChatService {
  private readonly deps: ChatServiceDeps;

  constructor(deps: ChatServiceDeps) {
    this.deps = deps;
  }

  /**
   * Runs one call. Failures before the answer starts are thrown (ApiError); a stream's later
   * failure is thrown by its iteration. `signal` aborts the call (the client went away). `native`:
   * the call as it came in an upstream API's shape, which `input` translates (providers/spec.ts).
   */
  async start(input: ChatCompletionInput, ownerId: string, signal: AbortSignal, native?: NativeCall): Promise<ChatOutcome> {
    const { model: alias, messages: sent, stream = true, conversationId, sessionId, ...params } = input;
    const conversation = conversationId ?? sessionId;
    const { model, chatModel, added, messages } = await this.prepare(alias, sent, ownerId, conversation);
    const request: ChatRequest = { model, messages, params, ...(native ? { native } : {}) };
    const turn = conversation === undefined ? undefined : { ownerId, id: conversation, added };
    let route: ServedRoute | undefined;
    const options = { signal, served: (served: ServedRoute) => void (route = served) };

    const span = tracingEnabled() ? openSpan(`chat ${model.alias}`, { kind: SpanKind.CLIENT, attributes: { [GEN_AI.operationName]: 'chat', [GEN_AI.requestModel]: model.alias } }) : undefined;
    try {
      if (!stream) {
        const completion = await withSpan(span, () => chatModel.complete(request, options));
        completion.model = model.alias;
        if (span) endChatSpan(span, route, completion.usage);
        if (turn) await this.deps.conversations.append(turn.ownerId, turn.id, [...turn.added, replyOf(completion)]);
        return { kind: 'completion', completion, ...(route ? { route } : {}) };
      }
      const chunks = await withSpan(span, () => chatModel.stream(request, options));
      return { kind: 'stream', chunks: this.relay(chunks, request, turn, span && { span, route }), ...(route ? { route } : {}) };
    } catch (err) {
      if (span?.isRecording()) {
        failSpan(span, err);
        span.end();
      }
      throw err;
    }
  }

  /**
   * Runs one Responses call: passed through to an upstream that serves the Responses API for the
   * model, else as a chat call (named by the alias, its usage estimated when the model sent none,
   * as start's). Failures are as start's.
   */
  async respond(input: ResponsesInput, ownerId: string, signal: AbortSignal): Promise<ResponsesOutcome> {
    const model = this.deps.resolveModel(input.model, CHAT_CAPABILITIES);
    let request: ChatRequest | undefined;
    const messages = async () => {
      const { messages: adapted } = await this.settle(model, await input.messages(), ownerId, undefined);
      request = { model, messages: adapted, params: input.params };
      return adapted;
    };
    let route: ServedRoute | undefined;
    const options = { signal, served: (served: ServedRoute) => void (route = served) };
    const span = tracingEnabled() ? openSpan(`responses ${model.alias}`, { kind: SpanKind.CLIENT, attributes: { [GEN_AI.operationName]: 'chat', [GEN_AI.requestModel]: model.alias } }) : undefined;
    try {
      const routed = await withSpan(span, () => this.deps.models.respond({ model, body: input.body, stream: input.stream, params: input.params, messages }, options));
      const served = route ? { route } : {};
      switch (routed.kind) {
        case 'upstream': {
          const { answer } = routed;
          if (answer.kind === 'response') {
            if (span) endChatSpan(span, route, answer.usage);
            return { ...routed, ...served };
          }
          return { kind: 'upstream', answer: { kind: 'stream', events: this.relayEvents(answer.events, span && { span, route }) }, ...served };
        }
        case 'completion':
          routed.completion.model = model.alias;
          if (span) endChatSpan(span, route, routed.completion.usage);
          return { ...routed, ...served };
        case 'stream':
          return { kind: 'stream', chunks: this.relay(routed.chunks, request!, undefined, span && { span, route }), ...served };
      }
    } catch (err) {
      if (span?.isRecording()) {
        failSpan(span, err);
        span.end();
      }
      throw err;
    }
  }

  /** An upstream's Responses events as they came, the span ended with the usage of the last. */
  private async *relayEvents(events: AsyncIterable<UpstreamResponsesEvent>, traced: { span: Span; route: ServedRoute | undefined } | undefined): AsyncGenerator<UpstreamResponsesEvent> {
    let usage: ChatUsage | undefined;
    try {
      for await (const event of events) {
        if (event.usage) usage = event.usage;
        yield event;
      }
    } catch (err) {
      if (traced) failSpan(traced.span, err);
      throw err;
    } finally {
      if (traced) endChatSpan(traced.span, traced.route, usage);
    }
  }

  /**
   * The input tokens of a call that is not made: the upstream's own count where its API has one
   * (routed as the call would be), else estimated from the text.
   */
  async countTokens(input: ChatCompletionInput, ownerId: string, signal: AbortSignal, native?: NativeCall): Promise<number> {
    const { model: alias, messages: sent, stream: _stream, conversationId: _conversation, sessionId: _session, ...params } = input;
    const { model, chatModel, messages } = await this.prepare(alias, sent, ownerId, undefined);
    const request: ChatRequest = { model, messages, params, ...(native ? { native } : {}) };
    return (await chatModel.countTokens?.(request, { signal })) ?? estimatedUsage(request, 0).prompt_tokens;
  }

  /**
   * The catalog model a chat call may use (its 404/400 thrown at once, before anything is read),
   * the caller's messages normalised (base64 media uploaded for `ownerId`), and the named
   * conversation's history read; the messages adapted to what the model can read.
   */
  prepare(alias: string, sent: ChatInputMessage[], ownerId: string, conversation: string | undefined): Promise<PreparedChat> {
    const model = this.deps.resolveModel(alias, CHAT_CAPABILITIES);
    return this.settle(model, sent, ownerId, conversation);
  }

  private async settle(model: LiveModel, sent: ChatInputMessage[], ownerId: string, conversation: string | undefined): Promise<PreparedChat> {
    const support = mediaSupportOf(model);
    const upload = async (data: Buffer, fileName: string, mimeType: string) => (await this.deps.files.store(ownerId, data, fileName, mimeType)).url;
    const [added, history] = await Promise.all([
      normaliseMessages(sent, { support, upload, urls: this.deps.urls, maxBytes: this.deps.maxFileBytes }),
      conversation === undefined ? NO_HISTORY : this.deps.conversations.history(ownerId, conversation),
    ]);
    const messages = adaptMessages(history.length > 0 ? [...history, ...added] : added, support);
    return { model, chatModel: this.deps.models.chatModelFor(model), added, messages };
  }

  private relay(chunks: AsyncIterable<ChatChunk>, request: ChatRequest, turn: ConversationTurn | undefined, traced: TracedCall | undefined): AsyncIterableIterator<ChatChunk> {
    return new RelayedChunks(chunks, request, turn, traced, this.deps.conversations);
  }
}

interface TracedCall {
  span: Span;
  route: ServedRoute | undefined;
}

/**
 * The model's chunks as the client gets them: named by the catalog alias, always ending with a
 * usage chunk (estimated when the model sent none), and the turn stored before the stream ends.
 * Written out rather than as an async generator, which cost each chunk of every open stream a
 * generator request and two more promises, alive across young collections while the next chunk
 * is awaited. Read by one reader at a time, as a for-await reads.
 */
class RelayedChunks implements AsyncIterableIterator<ChatChunk> {
  private readonly inner: AsyncIterator<ChatChunk>;
  private readonly reply: StreamedReply | undefined;
  private usage: ChatUsage | undefined;
  // Until the model sends its usage, the characters it may have to be estimated from, counted
  // as the chunks pass (keeping the chunks instead held each stream's whole answer to its end).
  private completionChars = 0;
  private last: ChatChunk | undefined;
  /** relaying the model's chunks; closing once they ended (the turn to store, the span to end); over. */
  private state: 'relaying' | 'closing' | 'over' = 'relaying';
  private readonly request: ChatRequest;
  private readonly turn: ConversationTurn | undefined;
  private readonly traced: TracedCall | undefined;
  private readonly conversations: ConversationsRepo;

  constructor(chunks: AsyncIterable<ChatChunk>, request: ChatRequest, turn: ConversationTurn | undefined, traced: TracedCall | undefined, conversations: ConversationsRepo) {
    this.inner = chunks[Symbol.asyncIterator]();
    this.reply = turn ? new StreamedReply() : undefined;
    this.request = request;
    this.turn = turn;
    this.traced = traced;
    this.conversations = conversations;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<ChatChunk>> {
    if (this.state === 'over') return Promise.resolve(DONE);
    if (this.state === 'closing') return this.close();
    return this.inner.next().then(this.passed, this.failed);
  }

  async return(): Promise<IteratorResult<ChatChunk>> {
    const relaying = this.state === 'relaying';
    this.end();
    if (relaying) await this.inner.return?.();
    return DONE;
  }

  private readonly passed = (result: IteratorResult<ChatChunk>): IteratorResult<ChatChunk> | Promise<IteratorResult<ChatChunk>> => {
    if (result.done) {
      this.state = 'closing';
      if (this.usage) return this.close();
      const last = this.last;
      this.usage = estimatedUsage(this.request, this.completionChars);
      return {
        done: false,
        value: {
          id: last?.id ?? 'chatcmpl-usage',
          object: 'chat.completion.chunk',
          created: last?.created ?? Math.floor(Date.now() / 1000),
          model: this.request.model.alias,
          choices: [],
          usage: this.usage,
        },
      };
    }
    const chunk = result.value;
    chunk.model = this.request.model.alias;
    if (chunk.usage) this.usage = chunk.usage;
    else if (!this.usage) this.completionChars += completionCharsOf(chunk);
    this.reply?.add(chunk);
    this.last = chunk;
    return result;
  };

  private readonly failed = (err: unknown): never => {
    if (this.traced && this.state !== 'over') failSpan(this.traced.span, err);
    this.end();
    throw err;
  };

  /** The model's answer is complete: the turn stored, then done. */
  private async close(): Promise<IteratorResult<ChatChunk>> {
    const { turn, reply } = this;
    try {
      if (turn && reply) await this.conversations.append(turn.ownerId, turn.id, [...turn.added, reply.message()]);
    } catch (err) {
      return this.failed(err);
    }
    this.end();
    return DONE;
  }

  private end(): void {
    if (this.state === 'over') return;
    this.state = 'over';
    if (this.traced) endChatSpan(this.traced.span, this.traced.route, this.usage);
  }
}
