import type { Histogram, Registry } from 'prom-client';

/**
 * Counters and histograms of the request path, each series bound once to its labels and counted in
 * place; prom-client's registry formats them at each scrape, beside its own metrics. prom-client's
 * Counter and Histogram validate and hash their labels at every inc and observe, a child bound with
 * labels() included: 10 µs and more of each request here.
 */

interface ScrapedValue {
  labels: Record<string, string | number>;
  value: number;
  metricName: string;
}

interface MetricSpec<L extends string> {
  name: string;
  help: string;
  labelNames: readonly L[];
}

abstract class BoundMetric<L extends string, S> {
  readonly name: string;
  readonly help: string;
  abstract readonly type: 'counter' | 'histogram';
  readonly aggregator = 'sum';
  private readonly labelNames: readonly L[];
  protected readonly series = new Map<string, { labels: Record<L, string>; state: S }>();

  constructor(registry: Registry, spec: MetricSpec<L>) {
    this.name = spec.name;
    this.help = spec.help;
    this.labelNames = spec.labelNames;
    // The registry reads any object with this shape (name, help, type, get, reset); its types name only prom-client's classes.
    registry.registerMetric(this as unknown as Histogram);
  }

  protected abstract fresh(): S;
  protected abstract values(labels: Record<L, string>, state: S): ScrapedValue[];

  /** The state of the series of `labels`, made at its first use. */
  protected stateOf(labels: Record<L, string>): S {
    let key = '';
    for (const name of this.labelNames) key += `${labels[name]}\u0000`;
    let series = this.series.get(key);
    if (!series) {
      series = { labels: { ...labels }, state: this.fresh() };
      this.series.set(key, series);
    }
    return series.state;
  }

  get(): { name: string; help: string; type: string; aggregator: string; values: ScrapedValue[] } {
    const values = [...this.series.values()].flatMap(({ labels, state }) => this.values(labels, state));
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    this.series.clear();
  }
}

/** A counter; `labels(…)` answers the series to count on (keep it to count with no look-up). */
export class BoundCounter<L extends string> extends BoundMetric<L, { value: number }> {
  readonly type = 'counter';

  labels(labels: Record<L, string>): { inc(by?: number): void } {
    const state = this.stateOf(labels);
    return { inc: (by = 1) => void (state.value += by) };
  }

  protected fresh() {
    return { value: 0 };
  }

  protected values(labels: Record<L, string>, state: { value: number }): ScrapedValue[] {
    return [{ labels, value: state.value, metricName: this.name }];
  }
}

interface HistogramState {
  /** Observations per bucket (not cumulative), the last one beyond the highest bound. */
  counts: Float64Array;
  sum: number;
  count: number;
}

/** A histogram with the given upper bounds; `labels(…)` answers the series to observe on. */
export class BoundHistogram<L extends string> extends BoundMetric<L, HistogramState> {
  readonly type = 'histogram';
  private readonly buckets: readonly number[];

  constructor(registry: Registry, spec: MetricSpec<L> & { buckets: readonly number[] }) {
    super(registry, spec);
    this.buckets = spec.buckets;
  }

  labels(labels: Record<L, string>): { observe(value: number): void } {
    const state = this.stateOf(labels);
    const buckets = this.buckets;
    return {
      observe: (value) => {
        let bucket = 0;
        while (bucket < buckets.length && value > buckets[bucket]!) bucket++;
        state.counts[bucket]!++;
        state.sum += value;
        state.count++;
      },
    };
  }

  protected fresh(): HistogramState {
    return { counts: new Float64Array(this.buckets.length + 1), sum: 0, count: 0 };
  }

  protected values(labels: Record<L, string>, { counts, sum, count }: HistogramState): ScrapedValue[] {
    const bucket = `${this.name}_bucket`;
    let cumulative = 0;
    const values: ScrapedValue[] = this.buckets.map((le, i) => ({ labels: { le, ...labels }, value: (cumulative += counts[i]!), metricName: bucket }));
    values.push({ labels: { le: '+Inf', ...labels }, value: count, metricName: bucket });
    return [...values, { labels, value: sum, metricName: `${this.name}_sum` }, { labels, value: count, metricName: `${this.name}_count` }];
  }
}
