import type { FastifyInstance } from 'fastify';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { BoundCounter, BoundHistogram } from '../../telemetry/bound-metrics.ts';

/** A registry with the process defaults; domain parts add their figures to it. */
export function createMetricsRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'gengate_' });
  return registry;
}

/** The bound series of one route and method: its latency, and its count by status. */
interface RouteSeries {
  latency: { observe(value: number): void };
  byStatus: Map<number, { inc(by?: number): void }>;
}

/** Prometheus metrics of one server at /metrics: requests by route and status, latency histogram, and the registry's other figures. */
export function registerMetrics(app: FastifyInstance, registry: Registry): void {
  const requests = new BoundCounter(registry, {
    name: 'gengate_http_requests_total',
    help: 'HTTP requests by method, route and status',
    labelNames: ['method', 'route', 'status'],
  });
  const latency = new BoundHistogram(registry, {
    name: 'gengate_http_request_duration_seconds',
    help: 'HTTP request latency by method and route',
    labelNames: ['method', 'route'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  });
  // Each route's series, bound at its first request: a request counts without building labels or a key.
  const routes = new Map<string, Map<string, RouteSeries>>();
  app.addHook('onResponse', (request, reply, done) => {
    // Unmatched URLs share one label so scanners cannot blow up the series count.
    const route = request.routeOptions.url ?? 'unmatched';
    const method = request.method;
    let methods = routes.get(route);
    if (!methods) routes.set(route, (methods = new Map()));
    let series = methods.get(method);
    if (!series) methods.set(method, (series = { latency: latency.labels({ method, route }), byStatus: new Map() }));
    const status = reply.statusCode;
    let count = series.byStatus.get(status);
    if (!count) series.byStatus.set(status, (count = requests.labels({ method, route, status: String(status) })));
    count.inc();
    series.latency.observe(reply.elapsedTime / 1000);
    done();
  });
  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    reply.type(registry.contentType);
    return registry.metrics();
  });
}
