import { context, SpanStatusCode, trace, type Context, type Span } from '@opentelemetry/api';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { incomingTraceContext, openSpan, SpanKind } from '../../telemetry/tracing.ts';

interface RequestTrace {
  span: Span;
  context: Context;
}

const traces = new WeakMap<FastifyRequest, RequestTrace>();

/**
 * A server span per request, continuing the caller's trace (traceparent), named by the route once
 * known and ended when the answer is over (a stream's end included). Registered only while tracing
 * is on. Each hook phase runs the rest of the request inside the span's context, so the spans
 * that routes and services open are its children.
 */
export function registerTracing(app: FastifyInstance): void {
  app.addHook('onRequest', (request, reply, done) => {
    const parent = incomingTraceContext(request.headers);
    const span = openSpan(request.method, {
      kind: SpanKind.SERVER,
      parent,
      attributes: { 'http.request.method': request.method, 'url.path': request.url.split('?', 1)[0]!, 'url.scheme': request.protocol, ...(request.headers['user-agent'] ? { 'user_agent.original': request.headers['user-agent'] } : {}) },
    });
    if (!span) return done();
    const entry = { span, context: trace.setSpan(parent, span) };
    traces.set(request, entry);
    reply.raw.once('close', () => {
      const route = request.routeOptions.url;
      if (route) {
        span.updateName(`${request.method} ${route}`);
        span.setAttribute('http.route', route);
      }
      const status = reply.raw.statusCode;
      span.setAttribute('http.response.status_code', status);
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      if (!reply.raw.writableFinished) span.setAttribute('error.type', 'connection_closed');
      span.end();
    });
    context.with(entry.context, done);
  });
  // Body parsing continues in the socket's context: each later phase enters the span's again.
  const enter = (request: FastifyRequest, _reply: unknown, done: () => void) => {
    const entry = traces.get(request);
    if (entry) context.with(entry.context, done);
    else done();
  };
  app.addHook('preValidation', enter);
  app.addHook('preHandler', enter);
}
