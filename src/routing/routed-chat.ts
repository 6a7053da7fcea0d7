/**
 * Chat calls through the channels: a call (or a stream until its first chunk) that fails on one
 * channel moves to the next, then to the model's fallbacks; once a stream's first chunk is out,
 * a failure ends it with that error (the caller's route sends an error event, never [DONE]).
 */
import type { LiveModel } from '../catalog/catalog.ts';
import { languageCapabilityOf } from '../catalog/capabilities.ts';
import type { ChannelChatModels, ChatModelRegistry } from '../providers/registry.ts';
import type { ChatCallOptions, ChatChunk, ChatCompletion, ChatModel, ChatParams, ChatRequest, ResponsesCall, RoutedResponses, UpstreamResponses, UpstreamResponsesEvent } from '../providers/spec.ts';
import type { Channel } from './channel.ts';
import type { ChannelRouter, RouteOutcome, RouteTarget } from './router.ts';
import { translateChatParams } from './translate.ts';
import { DONE } from '../core/iteration-done.ts';

/** A stream whose first chunk came: the rest follows from the same channel. */
interface StartedStream<T = ChatChunk> {
  first: IteratorResult<T>;
  rest: AsyncIterator<T>;
  channel: Channel;
  release(): void;
}

/** What one attempt of a Responses call got: a whole answer, or a stream started on its channel. */
type RespondAttempt =
  | { kind: 'upstream'; answer: Extract<UpstreamResponses, { kind: 'response' }> }
  | { kind: 'completion'; completion: ChatCompletion }
  | { kind: 'upstream-stream'; started: StartedStream<UpstreamResponsesEvent> }
  | { kind: 'stream'; started: StartedStream };

/** Whether the model's catalog entry lists OpenAI's Responses API among its text_generate.supportedApiProtocols. */
function listsResponses(model: LiveModel): boolean {
  return languageCapabilityOf(model)?.supportedApiProtocols?.includes('responses') ?? false;
}

class RoutedChatModel implements ChatModel {
  private readonly router: ChannelRouter;
  private readonly models: ChannelChatModels;

  constructor(
    router: ChannelRouter,
    models: ChannelChatModels,
  ) {
    this.router = router;
    this.models = models;
  }

  private served<T>(outcome: RouteOutcome<T>, options: ChatCallOptions): T {
    if (!outcome.ok) throw outcome.error;
    options.served?.({ model: outcome.record.model, provider: outcome.record.provider, channel: outcome.record.channel });
    return outcome.value;
  }

  private on(target: RouteTarget<ChatParams>, request: ChatRequest): [ChatModel, ChatRequest] {
    return [this.models.chatModelOn(target.model.providerCode, target.channel.name), { ...request, model: target.model, params: target.input }];
  }

  async complete(request: ChatRequest, options: ChatCallOptions): Promise<ChatCompletion> {
    const outcome = await this.router.route({ model: request.model, input: request.params, translate: translateChatParams, signal: options.signal }, (target) => {
      const [model, routed] = this.on(target, request);
      return model.complete(routed, { signal: target.signal });
    });
    return this.served(outcome, options);
  }

  async countTokens(request: ChatRequest, options: ChatCallOptions): Promise<number | undefined> {
    const outcome = await this.router.route({ model: request.model, input: request.params, translate: translateChatParams, signal: options.signal }, (target) => {
      const [model, routed] = this.on(target, request);
      return model.countTokens ? model.countTokens(routed, { signal: target.signal }) : Promise.resolve(undefined);
    });
    return this.served(outcome, options);
  }

  async stream(request: ChatRequest, options: ChatCallOptions): Promise<AsyncIterable<ChatChunk>> {
    const outcome = await this.router.route({ model: request.model, input: request.params, translate: translateChatParams, signal: options.signal }, async (target) => {
      const [model, routed] = this.on(target, request);
      return this.started(await model.stream(routed, { signal: target.signal }), target);
    });
    return this.relay(this.served(outcome, options), options.signal);
  }

  /**
   * A Responses call: on a target whose channel serves the Responses API and whose model lists
   * it, the caller's body as it came; on any other, the chat call it translates to.
   */
  async respond(call: ResponsesCall, options: ChatCallOptions): Promise<RoutedResponses> {
    let messages: Promise<ChatRequest['messages']> | undefined;
    const outcome = await this.router.route({ model: call.model, input: call.params, translate: translateChatParams, signal: options.signal }, async (target): Promise<RespondAttempt> => {
      const channelModel = this.models.chatModelOn(target.model.providerCode, target.channel.name);
      const callOptions = { signal: target.signal };
      if (channelModel.responses && listsResponses(target.model)) {
        const answer = await channelModel.responses.respond(target.model, call.body, callOptions);
        if (answer.kind === 'response') return { kind: 'upstream', answer };
        return { kind: 'upstream-stream', started: await this.started(answer.events, target) };
      }
      messages ??= call.messages();
      const request: ChatRequest = { model: target.model, messages: await messages, params: target.input };
      if (!call.stream) return { kind: 'completion', completion: await channelModel.complete(request, callOptions) };
      return { kind: 'stream', started: await this.started(await channelModel.stream(request, callOptions), target) };
    });
    const attempt = this.served(outcome, options);
    switch (attempt.kind) {
      case 'upstream-stream':
        return { kind: 'upstream', answer: { kind: 'stream', events: this.relay(attempt.started, options.signal) } };
      case 'stream':
        return { kind: 'stream', chunks: this.relay(attempt.started, options.signal) };
      default:
        return attempt;
    }
  }

  /** A stream's first item read on its channel: a failure before it still moves the call to another channel. */
  private async started<T>(stream: AsyncIterable<T>, target: RouteTarget<ChatParams>): Promise<StartedStream<T>> {
    const rest = stream[Symbol.asyncIterator]();
    const first = await rest.next();
    return { first, rest, channel: target.channel, release: target.hold() };
  }

  private relay<T>(stream: StartedStream<T>, signal: AbortSignal): AsyncIterableIterator<T> {
    return new RelayedStream(stream, (err) => {
      if (!signal.aborted) this.router.noteLateFailure(stream.channel, err);
    });
  }
}

/**
 * The rest of a started stream as its caller reads it: the first item, then the channel's own;
 * the channel's hold is released once it ends, fails or is stopped, and a failure is noted
 * before it is passed on. Written out rather than as an async generator, which would cost each
 * chunk another async step and its objects. Read by one reader at a time, as a for-await reads.
 */
class RelayedStream<T> implements AsyncIterableIterator<T> {
  private first: IteratorResult<T> | undefined;
  private ended = false;
  private readonly stream: StartedStream<T>;
  private readonly failed: (err: unknown) => void;

  constructor(stream: StartedStream<T>, failed: (err: unknown) => void) {
    this.stream = stream;
    this.first = stream.first;
    this.failed = failed;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<T>> {
    const first = this.first;
    if (first) {
      this.first = undefined;
      return Promise.resolve(this.passed(first));
    }
    if (this.ended) return Promise.resolve(DONE);
    return this.stream.rest.next().then(this.passed, this.broke);
  }

  async return(): Promise<IteratorResult<T>> {
    if (!this.ended) {
      this.end();
      await this.stream.rest.return?.();
    }
    return DONE;
  }

  private readonly passed = (next: IteratorResult<T>): IteratorResult<T> => {
    if (next.done) this.end();
    return next;
  };

  private readonly broke = (err: unknown): never => {
    this.failed(err);
    this.end();
    throw err;
  };

  private end(): void {
    this.ended = true;
    this.first = undefined;
    this.stream.release();
  }
}

/** The chat model of every catalog model: one that routes each call over its model's channels. */
export class RoutedChatModels implements ChatModelRegistry {
  private readonly routed: RoutedChatModel;

  constructor(router: ChannelRouter, models: ChannelChatModels) {
    this.routed = new RoutedChatModel(router, models);
  }

  chatModelFor(_model: LiveModel): ChatModel {
    return this.routed;
  }

  respond(call: ResponsesCall, options: ChatCallOptions): Promise<RoutedResponses> {
    return this.routed.respond(call, options);
  }
}
