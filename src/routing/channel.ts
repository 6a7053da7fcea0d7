/**
 * One channel as routing sees it: where it stands (healthy, cooling down, disabled), what it is
 * doing (calls in flight) and how it has fared (failures in a row, the last minute's calls and
 * errors, recent latencies). Plain counters: recording a call costs a few assignments.
 */
import type { ChannelSpec } from '../config/channel-config.ts';

export type ChannelState = 'healthy' | 'cooling_down' | 'disabled';

const BUCKET_MS = 10_000;
const BUCKETS = 6;
const WINDOW_MS = BUCKET_MS * BUCKETS;
const LATENCY_SAMPLES = 256;

export class Channel {
  readonly provider: string;
  readonly name: string;
  readonly weight: number;
  readonly priority: number;
  readonly models: ReadonlySet<string> | undefined;
  /** Calls at once beyond which other channels of its tier are preferred. */
  readonly concurrency: number;
  /** Configured in GENGATE_CONFIG (listed by /admin/channels), or the built-in engine's stand-in. */
  readonly configured: boolean;

  state: ChannelState = 'healthy';
  disabledReason: string | null = null;
  /** While cooling down: when a probe call may go. */
  coolingUntil = 0;
  /** The current cool-down; doubles on each failed probe. */
  cooldownMs = 0;
  /** A probe call is under way; no other call goes here until it ends. */
  probing = false;
  consecutiveFailures = 0;
  inFlight = 0;

  private readonly bucketAt = new Float64Array(BUCKETS);
  private readonly bucketCalls = new Uint32Array(BUCKETS);
  private readonly bucketFailures = new Uint32Array(BUCKETS);
  private readonly latencies = new Float64Array(LATENCY_SAMPLES);
  private readonly latencyAt = new Float64Array(LATENCY_SAMPLES);
  private latencyNext = 0;

  constructor(spec: Pick<ChannelSpec, 'provider' | 'name' | 'weight' | 'priority' | 'models'>, concurrency: number, configured: boolean) {
    this.provider = spec.provider;
    this.name = spec.name;
    this.weight = spec.weight;
    this.priority = spec.priority;
    this.models = spec.models;
    this.concurrency = concurrency;
    this.configured = configured;
  }

  /** Whether a call may go here now: healthy, or cooled down long enough for one probe. */
  available(now: number): boolean {
    if (this.state === 'healthy') return true;
    return this.state === 'cooling_down' && !this.probing && now >= this.coolingUntil;
  }

  serves(alias: string): boolean {
    return this.models === undefined || this.models.has(alias);
  }

  /** Counts a finished call in the last minute's figures. */
  count(ok: boolean, latencyMs: number, now: number): void {
    const slot = Math.floor(now / BUCKET_MS);
    const i = slot % BUCKETS;
    if (this.bucketAt[i] !== slot) {
      this.bucketAt[i] = slot;
      this.bucketCalls[i] = 0;
      this.bucketFailures[i] = 0;
    }
    this.bucketCalls[i]!++;
    if (!ok) this.bucketFailures[i]!++;
    const j = this.latencyNext++ % LATENCY_SAMPLES;
    this.latencies[j] = latencyMs;
    this.latencyAt[j] = now;
  }

  /** Calls and failures of the last minute. */
  window(now: number): { calls: number; failures: number } {
    const oldest = Math.floor((now - WINDOW_MS) / BUCKET_MS);
    let calls = 0;
    let failures = 0;
    for (let i = 0; i < BUCKETS; i++) {
      if (this.bucketAt[i]! <= oldest) continue;
      calls += this.bucketCalls[i]!;
      failures += this.bucketFailures[i]!;
    }
    return { calls, failures };
  }

  /** The median latency of the last minute's calls, or null without any. */
  latencyP50(now: number): number | null {
    const recent: number[] = [];
    const samples = Math.min(this.latencyNext, LATENCY_SAMPLES);
    for (let i = 0; i < samples; i++) if (now - this.latencyAt[i]! <= WINDOW_MS) recent.push(this.latencies[i]!);
    if (recent.length === 0) return null;
    recent.sort((a, b) => a - b);
    return Math.round(recent[Math.floor((recent.length - 1) / 2)]!);
  }

  /** Carries over where a channel stands when its settings change (runtime settings). */
  takeStateOf(old: Channel): void {
    this.state = old.state;
    this.disabledReason = old.disabledReason;
    this.coolingUntil = old.coolingUntil;
    this.cooldownMs = old.cooldownMs;
    this.consecutiveFailures = old.consecutiveFailures;
  }

  /** Back to a fresh start (an administrator enabled it). */
  reset(): void {
    this.state = 'healthy';
    this.disabledReason = null;
    this.coolingUntil = 0;
    this.cooldownMs = 0;
    this.probing = false;
    this.consecutiveFailures = 0;
    this.bucketAt.fill(0);
    this.bucketCalls.fill(0);
    this.bucketFailures.fill(0);
  }
}
