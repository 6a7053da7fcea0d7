/**
 * Chat calls through the channels: a call (or a stream until its first chunk) that fails on one
 * channel moves to the next, then to the model's fallbacks; once a stream's first chunk is out,
 * a failure ends it with that error (the caller's route sends an error event, never [DONE]).
 */
import type { LiveModel } from '../catalog/catalog.ts';
import type { ChannelChatModels, ChatModelRegistry } from '../providers/registry.ts';
import type { ChatCallOptions, ChatChunk, ChatCompletion, ChatModel, ChatParams, ChatRequest } from '../providers/spec.ts';
import type { Channel } from './channel.ts';
import type { ChannelRouter, RouteOutcome, RouteTarget } from './router.ts';
import { translateChatParams } from './translate.ts';

/** A stream whose first chunk came: the rest follows from the same channel. */
interface StartedStream {
  first: IteratorResult<ChatChunk>;
  rest: AsyncIterator<ChatChunk>;
  channel: Channel;
  release(): void;
}

class RoutedChatModel implements ChatModel {
  constructor(
    private readonly router: ChannelRouter,
    private readonly models: ChannelChatModels,
  ) {}

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
    const outcome = await this.router.route({ model: request.model, input: request.params, translate: translateChatParams, signal: options.signal }, async (target): Promise<StartedStream> => {
      const [model, routed] = this.on(target, request);
      const rest = (await model.stream(routed, { signal: target.signal }))[Symbol.asyncIterator]();
      // A failure before the first chunk still moves the call to another channel.
      const first = await rest.next();
      return { first, rest, channel: target.channel, release: target.hold() };
    });
    return this.relay(this.served(outcome, options), options.signal);
  }

  private async *relay(stream: StartedStream, signal: AbortSignal): AsyncGenerator<ChatChunk> {
    try {
      for (let next = stream.first; !next.done; next = await stream.rest.next()) yield next.value;
    } catch (err) {
      if (!signal.aborted) this.router.noteLateFailure(stream.channel, err);
      throw err;
    } finally {
      stream.release();
      await stream.rest.return?.();
    }
  }
}

/** The chat model of every catalog model: one that routes each call over its model's channels. */
export class RoutedChatModels implements ChatModelRegistry {
  private readonly routed: ChatModel;

  constructor(router: ChannelRouter, models: ChannelChatModels) {
    this.routed = new RoutedChatModel(router, models);
  }

  chatModelFor(_model: LiveModel): ChatModel {
    return this.routed;
  }
}
