import { Gauge, type Registry } from 'prom-client';
import { BoundCounter, BoundHistogram } from '../telemetry/bound-metrics.ts';
import type { Channel } from './channel.ts';

const STATE_VALUE = { healthy: 0, cooling_down: 1, disabled: 2 } as const;

/** The per-channel figures of /metrics: calls by outcome, latency, state and calls in flight. */
export class ChannelMetrics {
  private readonly calls: BoundCounter<'provider' | 'channel' | 'outcome'>;
  private readonly latency: BoundHistogram<'provider' | 'channel'>;

  constructor(registry: Registry, channels: () => Iterable<Channel>) {
    this.calls = new BoundCounter(registry, {
      name: 'gengate_channel_calls_total',
      help: 'Calls sent to a channel, by outcome (success, failure: the upstream failed it, refused: the request was refused)',
      labelNames: ['provider', 'channel', 'outcome'],
    });
    this.latency = new BoundHistogram(registry, {
      name: 'gengate_channel_call_duration_seconds',
      help: 'Duration of calls on a channel (streams: until the first chunk)',
      labelNames: ['provider', 'channel'],
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    });
    new Gauge({
      name: 'gengate_channel_state',
      help: 'Channel state: 0 healthy, 1 cooling down, 2 disabled',
      labelNames: ['provider', 'channel'] as const,
      registers: [registry],
      collect() {
        for (const c of channels()) this.set({ provider: c.provider, channel: c.name }, STATE_VALUE[c.state]);
      },
    });
    new Gauge({
      name: 'gengate_channel_in_flight',
      help: 'Calls under way on a channel',
      labelNames: ['provider', 'channel'] as const,
      registers: [registry],
      collect() {
        for (const c of channels()) this.set({ provider: c.provider, channel: c.name }, c.inFlight);
      },
    });
  }

  /** Handles bound to one channel's labels, so recording a call looks nothing up. */
  forChannel(channel: Channel): ChannelFigures {
    const labels = { provider: channel.provider, channel: channel.name };
    return {
      success: this.calls.labels({ ...labels, outcome: 'success' }),
      failure: this.calls.labels({ ...labels, outcome: 'failure' }),
      refused: this.calls.labels({ ...labels, outcome: 'refused' }),
      latency: this.latency.labels(labels),
    };
  }
}

export interface ChannelFigures {
  success: { inc(): void };
  failure: { inc(): void };
  refused: { inc(): void };
  latency: { observe(seconds: number): void };
}
