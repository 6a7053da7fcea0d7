/**
 * Channel selection, health and failover. A call goes to the lowest priority tier that has a
 * channel available for its model, weighted at random within the tier (channels below their
 * concurrency first); a failure the upstream did not take the work for moves it to another
 * channel, then to the model's fallbacks. Up to policy.maxAttempts requests per model go out, a
 * channel's own retries among them: the transport sends a failed request to the same channel again
 * only when no other channel is left to move to (providers/retry-gate.ts). Failures cool a channel
 * down (doubling, one probe decides its return); a refused key disables it until an administrator
 * enables it. State changes are announced on the bus, so with Redis every instance follows them;
 * disables are stored.
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { LiveModel } from '../catalog/catalog.ts';
import { ApiError } from '../core/errors.ts';
import type { RoutingRecord } from '../core/result-types.ts';
import { gatedSignal, type GatedSignal, type RetryGate } from '../providers/retry-gate.ts';
import { DEFAULT_CONCURRENCY } from '../providers/upstream-client.ts';
import type { ChannelsRepo } from '../storage/repos/channels-repo.ts';
import type { ChannelStateMessage, EventBus } from '../storage/event-bus.ts';
import { Channel, type ChannelState } from './channel.ts';
import type { ChannelSpec, RoutingPolicy } from '../config/channel-config.ts';
import { ChannelMetrics, type ChannelFigures } from './channel-metrics.ts';
import { classifyFailure, type Failure } from './failures.ts';
import { failSpan, GEN_AI, inSpan } from '../telemetry/tracing.ts';

/** The name of the channel of a provider the built-in engine serves (no configuration). */
export const LOCAL_CHANNEL = 'local';

export type { RoutingAttempt, RoutingRecord } from '../core/result-types.ts';

/** Where one attempt goes. */
export interface RouteTarget<I> {
  model: LiveModel;
  channel: Channel;
  /** The route so far, naming this attempt's model and channel. */
  record: RoutingRecord;
  /** The input as this model takes it (translated for a fallback). */
  input: I;
  /** The attempt continues the saved route of an earlier run (the same model and channel). */
  resumed: boolean;
  /** The caller's signal, carrying the call's retry gate: the attempt's upstream requests go with it. */
  signal: AbortSignal;
  /**
   * Keeps the channel counted in flight after the call resolves (a stream that goes on); the
   * function answered ends it. Without it the call's end ends it.
   */
  hold(): () => void;
}

/** What a fallback model makes of the input: the input it takes and a warning per change, or why it cannot take it. */
export type Translation<I> = { input: I; warnings: string[] } | { skip: string };

export interface RoutePlan<I> {
  /** The model the caller asked for. */
  model: LiveModel;
  input: I;
  /** A route an earlier run saved: the call goes on there first. */
  resume?: RoutingRecord;
  translate(input: I, target: LiveModel): Translation<I>;
  /** Called before each attempt but a resumed one, with the record naming where it goes (a task saves it). */
  beforeAttempt?(record: RoutingRecord): Promise<void>;
  /** The caller went away or the task was cancelled: no more attempts, nothing counted. */
  signal?: AbortSignal;
}

export type RouteOutcome<T> = { ok: true; value: T; record: RoutingRecord } | { ok: false; error: unknown; record: RoutingRecord };

export interface ChannelView {
  provider: string;
  name: string;
  models: string[];
  state: ChannelState;
  disabled_reason: string | null;
  consecutive_failures: number;
  error_rate_1m: number;
  latency_p50_ms_1m: number | null;
  in_flight: number;
}

export interface RouterDeps {
  specs: ChannelSpec[];
  policy: RoutingPolicy;
  /** The catalog model (or workflow) of an alias. */
  findModel(alias: string): LiveModel | undefined;
  /** GENGATE_CONFIG models.<alias>.fallbacks. */
  fallbacks(alias: string): readonly string[];
  /** The aliases of a provider's catalog models (what a channel without `models` serves). */
  modelsOf(provider: string): string[];
  bus: EventBus;
  repo: ChannelsRepo;
  metrics: Registry;
  instanceId: string;
  logger: Logger;
  random?: () => number;
}

interface ChannelEntry {
  channel: Channel;
  figures: ChannelFigures;
}

const NO_CHANNELS: Channel[][] = [];

const sameModels = (a: ReadonlySet<string> | undefined, b: ReadonlySet<string> | undefined) =>
  a === b || (a !== undefined && b !== undefined && a.size === b.size && [...a].every((m) => b.has(m)));

/** The attributes of one attempt's span: where it went, and the how-manieth on this model. */
function attemptAttributes(model: LiveModel, channel: Channel, number: number, resumed: boolean) {
  return { [GEN_AI.requestModel]: model.alias, [GEN_AI.providerName]: channel.provider, 'gengate.routing.channel': channel.name, 'gengate.routing.attempt': number, 'gengate.routing.resumed': resumed };
}

export class ChannelRouter {
  private readonly entries = new Map<Channel, ChannelEntry>();
  /** Configured channels by provider, in configuration order. */
  private readonly byProvider = new Map<string, Channel[]>();
  /** The built-in engine's stand-in channel of each unconfigured provider. */
  private readonly localChannels = new Map<string, Channel>();
  /** A model's channels grouped by priority, lowest first; filled on first use. */
  private readonly tiers = new Map<string, Channel[][]>();
  private readonly metrics: ChannelMetrics;
  private readonly random: () => number;
  private unsubscribe: (() => void) | undefined;
  private policy: RoutingPolicy;

  private readonly deps: RouterDeps;

  constructor(deps: RouterDeps) {
    this.deps = deps;
    this.random = deps.random ?? Math.random;
    this.policy = deps.policy;
    this.metrics = new ChannelMetrics(deps.metrics, () => this.configured());
    this.reconfigure(deps.specs, deps.policy);
  }

  /**
   * Takes the channels of changed runtime settings. A channel whose routing fields are unchanged
   * stays the same object (its health, figures and calls in flight go on); a changed one keeps
   * its state. Calls in flight finish on the channel objects they hold.
   */
  reconfigure(specs: readonly ChannelSpec[], policy: RoutingPolicy): void {
    const previous = new Map([...this.configured()].map((c) => [`${c.provider}/${c.name}`, c]));
    this.byProvider.clear();
    this.tiers.clear();
    this.entries.clear();
    this.policy = policy;
    for (const spec of specs) {
      const concurrency = spec.settings.concurrency ?? DEFAULT_CONCURRENCY;
      const old = previous.get(`${spec.provider}/${spec.name}`);
      const same = old && old.weight === spec.weight && old.priority === spec.priority && old.concurrency === concurrency && sameModels(old.models, spec.models);
      const channel = same ? old : new Channel(spec, concurrency, true);
      if (old && !same) channel.takeStateOf(old);
      this.entries.set(channel, { channel, figures: this.metrics.forChannel(channel) });
      const list = this.byProvider.get(spec.provider) ?? [];
      list.push(channel);
      this.byProvider.set(spec.provider, list);
    }
  }

  /** Applies the stored disables and follows the other instances' announcements. */
  async start(): Promise<void> {
    this.unsubscribe = this.deps.bus.subscribe('channel.state', (message) => {
      if (message.origin !== this.deps.instanceId) this.apply(message);
    });
    for (const row of await this.deps.repo.disabled()) {
      const channel = this.find(row.provider, row.name);
      if (channel) this.setDisabled(channel, row.reason);
    }
  }

  close(): void {
    this.unsubscribe?.();
  }

  /** Every configured channel. */
  *configured(): Iterable<Channel> {
    for (const list of this.byProvider.values()) yield* list;
  }

  find(provider: string, name: string): Channel | undefined {
    return this.byProvider.get(provider)?.find((c) => c.name === name);
  }

  /** The models a call for `model` may move to, in order, after its own channels failed. */
  fallbacksOf(model: LiveModel): LiveModel[] {
    return this.deps.fallbacks(model.alias).flatMap((alias) => this.deps.findModel(alias) ?? []);
  }

  /** A model's channels by priority tier; a provider without configuration has the built-in engine's one. */
  tiersOf(model: LiveModel): Channel[][] {
    let tiers = this.tiers.get(model.alias);
    if (tiers) return tiers;
    const configured = this.byProvider.get(model.providerCode);
    if (!configured) {
      tiers = [[this.localChannel(model.providerCode)]];
    } else {
      const serving = configured.filter((c) => c.serves(model.alias));
      const priorities = [...new Set(serving.map((c) => c.priority))].sort((a, b) => a - b);
      tiers = serving.length === 0 ? NO_CHANNELS : priorities.map((p) => serving.filter((c) => c.priority === p));
    }
    this.tiers.set(model.alias, tiers);
    return tiers;
  }

  private localChannel(provider: string): Channel {
    let channel = this.localChannels.get(provider);
    if (!channel) {
      channel = new Channel({ provider, name: LOCAL_CHANNEL, weight: 1, priority: 0, models: undefined }, Number.POSITIVE_INFINITY, false);
      this.localChannels.set(provider, channel);
    }
    return channel;
  }

  /**
   * The channel the next call for `model` goes to, or undefined when none is available. Within
   * the first tier that has one: weighted at random among those below their concurrency, else
   * among all of them. A cooled-down channel picked this way carries the probe.
   */
  pick(model: LiveModel, tried?: ReadonlySet<Channel>): Channel | undefined {
    const now = Date.now();
    for (const tier of this.tiersOf(model)) {
      if (tier.length === 1) {
        const only = tier[0]!;
        if (only.available(now) && !tried?.has(only)) return only;
        continue;
      }
      const open = tier.filter((c) => c.available(now) && !tried?.has(c));
      if (open.length === 0) continue;
      const free = open.filter((c) => c.inFlight < c.concurrency);
      return this.weighted(free.length > 0 ? free : open);
    }
    return undefined;
  }

  private weighted(channels: Channel[]): Channel {
    if (channels.length === 1) return channels[0]!;
    let total = 0;
    for (const c of channels) total += c.weight;
    let point = this.random() * total;
    for (const c of channels) {
      point -= c.weight;
      if (point < 0) return c;
    }
    return channels[channels.length - 1]!;
  }

  /**
   * Runs `call` on the model's channels, then on its fallbacks' (the input translated for each),
   * until one serves or a failure is final; up to policy.maxAttempts tries per model, each a line of
   * the record's attempts, a channel's own retries included.
   */
  async route<I, T>(plan: RoutePlan<I>, call: (target: RouteTarget<I>) => Promise<T>): Promise<RouteOutcome<T>> {
    const chain = [plan.model, ...this.fallbacksOf(plan.model)];
    const resume = plan.resume;
    let start = resume ? chain.findIndex((m) => m.alias === resume.model) : 0;
    if (start < 0) start = 0;
    const record: RoutingRecord = { model: plan.model.alias, provider: plan.model.providerCode, channel: '', attempts: resume ? [...resume.attempts] : [], warnings: [] };
    let lastError: unknown;
    for (let i = start; i < chain.length; i++) {
      const model = chain[i]!;
      let input = plan.input;
      let warnings: string[] = [];
      if (i > 0) {
        if (!model.enabled) {
          record.attempts.push({ model: model.alias, provider: model.providerCode, channel: null, error: `model is disabled${model.disabled_reason ? `: ${model.disabled_reason}` : ''}` });
          continue;
        }
        const translated = plan.translate(plan.input, model);
        if ('skip' in translated) {
          record.attempts.push({ model: model.alias, provider: model.providerCode, channel: null, error: translated.skip });
          continue;
        }
        ({ input, warnings } = translated);
      }
      const tried = new Set<Channel>();
      let made = 0;
      for (const attempt of record.attempts) {
        const channel = attempt.model === model.alias && attempt.channel !== null ? this.find(model.providerCode, attempt.channel) : undefined;
        if (!channel) continue;
        tried.add(channel);
        made++;
      }
      let resumeChannel = i === start && resume?.model === model.alias ? this.find(model.providerCode, resume.channel) ?? (resume.channel === LOCAL_CHANNEL ? this.tiersOf(model)[0]?.[0] : undefined) : undefined;
      while (made < this.policy.maxAttempts) {
        const channel = resumeChannel ?? this.pick(model, tried);
        const resumed = resumeChannel !== undefined;
        resumeChannel = undefined;
        if (!channel) {
          if (made === 0) record.attempts.push({ model: model.alias, provider: model.providerCode, channel: null, error: 'no channel of this model is available (none serves it, or all are cooling down or disabled)' });
          break;
        }
        tried.add(channel);
        made++;
        record.model = model.alias;
        record.provider = model.providerCode;
        record.channel = channel.name;
        record.warnings = warnings;
        if (!resumed) await plan.beforeAttempt?.(record);
        const gate: RetryGate = {
          again: (error) => {
            if (made >= this.policy.maxAttempts || this.hasUntried(model, tried)) return false;
            made++;
            record.attempts.push({ model: model.alias, provider: model.providerCode, channel: channel.name, error: error.message });
            return true;
          },
        };
        const gated = gatedSignal(plan.signal, gate);
        const target = this.target(model, channel, record, input, resumed, gated);
        const outcome = await inSpan(`routing attempt ${channel.provider}/${channel.name}`, () => ({ attributes: attemptAttributes(model, channel, made, resumed) }), async (span) => {
          const result = await this.attempt(channel, () => call(target.target), plan.signal);
          if (span && !result.ok) {
            span.setAttribute('gengate.routing.failure', result.failure.kind);
            failSpan(span, result.error);
          }
          return result;
        });
        // A held target (a stream that goes on) releases its signal when it ends.
        if (!target.held()) gated.release();
        if (outcome.ok) return { ok: true, value: outcome.value, record };
        lastError = outcome.error;
        if (plan.signal?.aborted) return { ok: false, error: outcome.error, record };
        record.attempts.push({ model: model.alias, provider: model.providerCode, channel: channel.name, error: outcome.failure.message });
        if (outcome.failure.kind === 'final') return { ok: false, error: outcome.error, record };
      }
    }
    return { ok: false, error: lastError ?? new ApiError('upstream_error', `no channel could take model ${plan.model.alias}: ${record.attempts.map((a) => a.error).join('; ')}`), record };
  }

  /** Whether a channel of the model not tried yet could take a call now. */
  private hasUntried(model: LiveModel, tried: ReadonlySet<Channel>): boolean {
    const now = Date.now();
    return this.tiersOf(model).some((tier) => tier.some((c) => !tried.has(c) && c.available(now)));
  }

  /** An attempt's target, and whether its call holds it past its end. */
  private target<I>(model: LiveModel, channel: Channel, record: RoutingRecord, input: I, resumed: boolean, gated: GatedSignal): { target: RouteTarget<I>; held(): boolean } {
    let held = false;
    const target: RouteTarget<I> = {
      model,
      channel,
      record,
      input,
      resumed,
      signal: gated.signal,
      hold: () => {
        held = true;
        channel.inFlight++;
        let released = false;
        return () => {
          if (released) return;
          released = true;
          channel.inFlight--;
          gated.release();
        };
      },
    };
    return { target, held: () => held };
  }

  /** One call on one channel, counted in its health and figures. */
  private async attempt<T>(channel: Channel, call: () => Promise<T>, signal: AbortSignal | undefined): Promise<{ ok: true; value: T } | { ok: false; error: unknown; failure: Failure }> {
    // Aborted before the call (a task cancelled while its route was being saved): no call. An
    // engine listening for 'abort' would never hear it on a signal that has already fired.
    if (signal?.aborted) return { ok: false, error: signal.reason, failure: { kind: 'final', message: 'aborted' } };
    const probe = channel.state === 'cooling_down';
    if (probe) channel.probing = true;
    channel.inFlight++;
    const started = performance.now();
    try {
      const value = await call();
      this.succeeded(channel, performance.now() - started, probe);
      return { ok: true, value };
    } catch (error) {
      if (signal?.aborted) {
        if (probe) channel.probing = false;
        return { ok: false, error, failure: { kind: 'final', message: 'aborted' } };
      }
      const failure = classifyFailure(error);
      this.failed(channel, failure, performance.now() - started, probe);
      return { ok: false, error, failure };
    } finally {
      channel.inFlight--;
    }
  }

  /** Counts a failure that came after a call was served (a stream that broke off). */
  noteLateFailure(channel: Channel, error: unknown): void {
    const failure = classifyFailure(error);
    if (failure.kind !== 'final') this.failed(channel, failure, 0, false);
  }

  private succeeded(channel: Channel, latencyMs: number, probe: boolean, refused = false): void {
    if (!channel.configured) return;
    const now = Date.now();
    const { figures } = this.entries.get(channel)!;
    (refused ? figures.refused : figures.success).inc();
    figures.latency.observe(latencyMs / 1000);
    channel.count(true, latencyMs, now);
    channel.consecutiveFailures = 0;
    if (probe) {
      channel.probing = false;
      if (channel.state === 'cooling_down') {
        channel.state = 'healthy';
        channel.cooldownMs = 0;
        channel.coolingUntil = 0;
        this.deps.logger.info({ provider: channel.provider, channel: channel.name }, 'channel recovered: its probe call succeeded');
        this.announce(channel);
      }
    }
  }

  private failed(channel: Channel, failure: Failure, latencyMs: number, probe: boolean): void {
    if (!channel.configured) return;
    // A refused request shows the channel works.
    if (failure.kind === 'final') return this.succeeded(channel, latencyMs, probe, true);
    const now = Date.now();
    this.entries.get(channel)!.figures.failure.inc();
    channel.count(false, latencyMs, now);
    channel.consecutiveFailures++;
    if (probe) channel.probing = false;
    if (failure.kind === 'disable') {
      void this.disable(channel.provider, channel.name, `the upstream refused the channel's key: ${failure.message}`).catch((err: unknown) => this.deps.logger.error({ err }, 'storing a channel disable failed'));
      return;
    }
    const { policy } = this;
    if (channel.state === 'cooling_down' && probe) {
      this.coolDown(channel, Math.min(policy.maxCooldownMs, channel.cooldownMs * 2 || policy.cooldownMs), now, 'its probe call failed');
    } else if (channel.state === 'healthy') {
      const { calls, failures } = channel.window(now);
      if (channel.consecutiveFailures >= policy.failureThreshold) this.coolDown(channel, policy.cooldownMs, now, `${channel.consecutiveFailures} failures in a row`);
      else if (calls >= policy.minCallsForRate && failures / calls > policy.maxErrorRate) this.coolDown(channel, policy.cooldownMs, now, `${failures} of ${calls} calls failed in the last minute`);
    }
  }

  private coolDown(channel: Channel, cooldownMs: number, now: number, why: string): void {
    channel.state = 'cooling_down';
    channel.cooldownMs = cooldownMs;
    channel.coolingUntil = now + cooldownMs;
    this.deps.logger.warn({ provider: channel.provider, channel: channel.name, cooldownMs }, `channel cooling down: ${why}`);
    this.announce(channel);
  }

  private setDisabled(channel: Channel, reason: string): void {
    channel.state = 'disabled';
    channel.disabledReason = reason;
    channel.probing = false;
  }

  /** Disables a channel until an administrator enables it; stored, and announced to every instance. */
  async disable(provider: string, name: string, reason: string): Promise<Channel> {
    const channel = this.require(provider, name);
    this.setDisabled(channel, reason);
    this.deps.logger.warn({ provider, channel: name, reason }, 'channel disabled');
    await this.deps.repo.disable(provider, name, reason);
    this.announce(channel);
    return channel;
  }

  /** Enables a channel with a fresh start (no failures counted). */
  async enable(provider: string, name: string): Promise<Channel> {
    const channel = this.require(provider, name);
    await this.deps.repo.enable(provider, name);
    channel.reset();
    this.announce(channel);
    return channel;
  }

  private require(provider: string, name: string): Channel {
    const channel = this.find(provider, name);
    if (!channel) throw new ApiError('channel_not_found', `provider ${provider} has no channel ${name}`, 'name');
    return channel;
  }

  private announce(channel: Channel): void {
    const message: ChannelStateMessage = {
      origin: this.deps.instanceId,
      provider: channel.provider,
      name: channel.name,
      state: channel.state,
      coolingUntil: channel.coolingUntil,
      cooldownMs: channel.cooldownMs,
      disabledReason: channel.disabledReason,
    };
    void this.deps.bus.publish('channel.state', message).catch((err: unknown) => this.deps.logger.warn({ err }, 'announcing a channel state failed'));
  }

  private apply(message: ChannelStateMessage): void {
    const channel = this.find(message.provider, message.name);
    if (!channel) return;
    if (message.state === 'healthy') {
      if (channel.state === 'disabled') channel.reset();
      channel.state = 'healthy';
      channel.consecutiveFailures = 0;
    } else if (message.state === 'disabled') {
      this.setDisabled(channel, message.disabledReason ?? 'disabled');
    } else {
      channel.state = 'cooling_down';
      channel.disabledReason = null;
    }
    channel.coolingUntil = message.coolingUntil;
    channel.cooldownMs = message.cooldownMs;
  }

  /** GET /admin/channels. */
  list(): ChannelView[] {
    const now = Date.now();
    return [...this.configured()].map((c) => {
      const { calls, failures } = c.window(now);
      return {
        provider: c.provider,
        name: c.name,
        models: c.models ? [...c.models] : this.deps.modelsOf(c.provider),
        state: c.state,
        disabled_reason: c.disabledReason,
        consecutive_failures: c.consecutiveFailures,
        error_rate_1m: calls === 0 ? 0 : Math.round((failures / calls) * 1000) / 1000,
        latency_p50_ms_1m: c.latencyP50(now),
        in_flight: c.inFlight,
      };
    });
  }

  view(channel: Channel): ChannelView {
    return this.list().find((v) => v.provider === channel.provider && v.name === channel.name)!;
  }
}
