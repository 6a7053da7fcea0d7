import type { FastifyInstance } from 'fastify';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { BoundCounter, BoundHistogram } from '../../telemetry/bound-metrics.ts';

/** A registry with the process defaults; domain parts add their figures to it. */
export function createMetricsRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'gengate_' });
  return registry;
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
  app.addHook('onResponse', (request, reply, done) => {
    // Unmatched URLs share one label so scanners cannot blow up the series count.
    const route = request.routeOptions.url ?? 'unmatched';
    requests.labels({ method: request.method, route, status: String(reply.statusCode) }).inc();
    latency.labels({ method: request.method, route }).observe(reply.elapsedTime / 1000);
    done();
  });
  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    reply.type(registry.contentType);
    return registry.metrics();
  });
}
