/**
 * Anthropic's Messages API over the chat service: a request goes through the same model checks,
 * routing, fallback and tracing as a chat completion. An `anthropic` upstream gets it as it came
 * and its answer comes back as it came (named by the alias); any other upstream gets its chat
 * translation and its answer is put in Anthropic's shape.
 */
import type { CatalogView, LiveModel } from '../catalog/catalog.ts';
import type { CapabilityName } from '../catalog/schema.ts';
import { CHAT_CAPABILITIES, type ChatService } from '../chat/chat-service.ts';
import { anthropicErrorType, ApiError } from '../core/errors.ts';
import { estimateInputTokens } from '../limits/pricing.ts';
import type { ChatChunk, ChatUsage, NativeCall, NativeEvent, ServedRoute } from '../providers/spec.ts';
import { chatInputOf, countInputOf } from './messages-input.ts';
import { MessageEventStream, messageOf, type MessageEvent } from './messages-output.ts';
import type { MessagesRequest, PromptRequest } from './messages-schemas.ts';

/** The type of the models the surface lists: Anthropic's API is a text API. */
const LISTED_TYPE: CapabilityName = 'text_generate';

/** Headers of a call passed on to an `anthropic` upstream. */
export interface PassedHeaders {
  /** `anthropic-beta`: the betas the caller asked for; an upstream that cannot honour one ignores it. */
  beta?: string;
}

/** A call's answer: one message (JSON text), or its events; and who served it. */
export type MessagesOutcome = (
  | { kind: 'message'; body: string; usage: ChatUsage | undefined }
  /**
   * The events in order. A failure before the first event is thrown by the iteration (the call
   * can still be answered with an error status); a later one ends the events with an `error`
   * event, and `failure` holds it.
   */
  | { kind: 'stream'; events: AsyncIterable<NativeEvent>; readonly failure: unknown; /** The usage the model reported, once the events are read. */ readonly usage: ChatUsage | undefined }
) & { route?: ServedRoute };

/** An item of GET /anthropic/v1/models. */
export interface ModelInfo {
  type: 'model';
  id: string;
  display_name: string;
  created_at: string;
}

export interface MessagesServiceDeps {
  chat: ChatService;
  catalog: CatalogView;
  /** The catalog model a request may use, or the contract's 404/400. */
  resolveModel(alias: string, capabilities: readonly CapabilityName[]): LiveModel;
}

/** What a stream learns while its events are read. */
interface StreamState {
  failure: unknown;
  usage: ChatUsage | undefined;
}

const frame = (event: MessageEvent): NativeEvent => ({ event: event.type, data: JSON.stringify(event) });

/** An upstream's message_start with the model named by its alias; other events as they came. */
function renamed(event: NativeEvent, alias: string): NativeEvent {
  if (event.event !== 'message_start') return event;
  const data = JSON.parse(event.data) as { message?: { model?: string } };
  if (data.message) data.message.model = alias;
  return { event: event.event, data: JSON.stringify(data) };
}

/** A failure as Anthropic's `error` event. */
function errorEvent(err: unknown): NativeEvent {
  const error = err instanceof ApiError ? err : new ApiError('internal_error', 'internal error');
  return frame({ type: 'error', error: { type: anthropicErrorType(error.status), message: error.message } });
}

export class AnthropicMessagesService {
  /** When the listing says the models were created: the catalog names no dates. */
  private readonly listedAt = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');

  private readonly deps: MessagesServiceDeps;

  constructor(deps: MessagesServiceDeps) {
    this.deps = deps;
  }

  /** Runs one Messages API call. `signal` aborts it (the client went away). */
  async create(body: MessagesRequest, headers: PassedHeaders, ownerId: string, signal: AbortSignal): Promise<MessagesOutcome> {
    const model = this.deps.resolveModel(body.model, CHAT_CAPABILITIES);
    const outcome = await this.deps.chat.start(chatInputOf(body, model), ownerId, signal, this.nativeCall(body, headers));
    const route = outcome.route ? { route: outcome.route } : {};
    const stopSequences = body.stop_sequences ?? [];
    if (outcome.kind === 'completion') {
      const { completion } = outcome;
      let answer: string;
      if (completion.native !== undefined) {
        const message = JSON.parse(completion.native) as Record<string, unknown>;
        answer = JSON.stringify({ ...message, model: model.alias });
      } else answer = JSON.stringify(messageOf(completion, model.alias, stopSequences));
      return { kind: 'message', body: answer, usage: completion.usage, ...route };
    }
    const state: StreamState = { failure: undefined, usage: undefined };
    const events = this.events(outcome.chunks, model.alias, stopSequences, estimateInputTokens(body), signal, state);
    return { kind: 'stream', events, get failure() { return state.failure; }, get usage() { return state.usage; }, ...route };
  }

  /** The input tokens of a prompt: the upstream's count for an `anthropic` upstream, else an estimate. */
  async countTokens(body: PromptRequest, headers: PassedHeaders, ownerId: string, signal: AbortSignal): Promise<{ input_tokens: number }> {
    const model = this.deps.resolveModel(body.model, CHAT_CAPABILITIES);
    return { input_tokens: await this.deps.chat.countTokens(countInputOf(body, model), ownerId, signal, this.nativeCall(body, headers)) };
  }

  /** The enabled catalog models that generate text. */
  models(): ModelInfo[] {
    return this.deps.catalog.list(LISTED_TYPE).filter((model) => model.enabled).map((model) => this.modelInfo(model));
  }

  /** One listed model; 404 for a model the listing does not hold. */
  model(alias: string): ModelInfo {
    const model = this.deps.catalog.find(alias);
    if (!model || !model.enabled || !(model.modelTypes as string[]).includes(LISTED_TYPE)) throw new ApiError('model_not_found', `model: ${alias}`, 'model');
    return this.modelInfo(model);
  }

  private modelInfo(model: LiveModel): ModelInfo {
    return { type: 'model', id: model.alias, display_name: model.displayName ?? model.alias, created_at: this.listedAt };
  }

  private nativeCall(body: PromptRequest, headers: PassedHeaders): NativeCall {
    return { api: 'anthropic', body: body as Record<string, unknown>, headers: headers.beta ? { 'anthropic-beta': headers.beta } : {} };
  }

  /**
   * The events of a streamed answer: an upstream's own events as they came (message_start naming
   * the alias), or the chat chunks translated. The chat service's closing usage chunk after an
   * upstream's own events has nothing to add.
   */
  private async *events(chunks: AsyncIterable<ChatChunk>, alias: string, stopSequences: readonly string[], inputTokens: number, signal: AbortSignal, state: StreamState): AsyncGenerator<NativeEvent> {
    let sent = false;
    let native: boolean | undefined;
    let upstreamError = false;
    const translated = new MessageEventStream(alias, stopSequences, inputTokens);
    try {
      for await (const chunk of chunks) {
        if (chunk.usage) state.usage = chunk.usage;
        native ??= chunk.native !== undefined;
        if (native) {
          if (!chunk.native) continue;
          upstreamError ||= chunk.native.event === 'error';
          sent = true;
          yield renamed(chunk.native, alias);
          continue;
        }
        for (const event of translated.chunk(chunk)) {
          sent = true;
          yield frame(event);
        }
      }
      if (!native) for (const event of translated.end()) yield frame(event);
    } catch (err) {
      if (!sent || signal.aborted) throw err;
      state.failure = err;
      if (!upstreamError) yield errorEvent(err);
    }
  }
}
