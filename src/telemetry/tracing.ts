/**
 * OpenTelemetry traces. Off unless an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT): then the SDK is loaded (a dynamic import, so a gateway
 * without tracing never loads it) and spans go out over OTLP/HTTP. While off, every helper here
 * calls straight through: no span objects, no context switches on the hot path.
 */
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span } from '@opentelemetry/api';
import type { Logger } from 'pino';

/**
 * GenAI semantic-convention attribute names. The conventions are still "development" status;
 * their package's guidance is to copy such names rather than import the incubating entry point.
 */
export const GEN_AI = {
  operationName: 'gen_ai.operation.name',
  providerName: 'gen_ai.provider.name',
  /** The older name of gen_ai.provider.name, which many backends still read. */
  system: 'gen_ai.system',
  requestModel: 'gen_ai.request.model',
  responseModel: 'gen_ai.response.model',
  responseId: 'gen_ai.response.id',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
} as const;

const tracer = trace.getTracer('gengate');
let enabled = false;

/** True while spans are recorded and exported. */
export function tracingEnabled(): boolean {
  return enabled;
}

export interface Tracing {
  /** Exports the spans still buffered, then stops tracing. */
  shutdown(): Promise<void>;
}

/** Whether the standard OTel variables ask for traces: an OTLP endpoint, and neither the SDK nor the trace exporter switched off. */
export function tracingWanted(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true' || env.OTEL_TRACES_EXPORTER?.trim() === 'none') return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());
}

/**
 * Starts exporting traces when the environment asks for them; undefined otherwise. The exporter
 * reads the rest of the standard variables itself (headers, timeout, compression), the resource
 * takes OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
 */
export async function startTracing(env: NodeJS.ProcessEnv, logger: Logger): Promise<Tracing | undefined> {
  // One provider per process: a second server in the same process shares the first one's.
  if (enabled || !tracingWanted(env)) return undefined;
  const [{ NodeTracerProvider }, { BatchSpanProcessor }, { OTLPTraceExporter }, resources, { ATTR_SERVICE_NAME }] = await Promise.all([
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/semantic-conventions'),
  ]);
  const resource = resources
    .defaultResource()
    .merge(resources.resourceFromAttributes({ [ATTR_SERVICE_NAME]: 'gengate' }))
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  const provider = new NodeTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())] });
  // The async-hooks context manager and the W3C trace-context propagator, as globals.
  provider.register();
  enabled = true;
  logger.info({ endpoint: env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_ENDPOINT }, 'exporting OpenTelemetry traces');
  return {
    async shutdown() {
      enabled = false;
      await provider.shutdown().catch((err: unknown) => logger.warn({ err }, 'flushing the last traces failed'));
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}

/** Marks a span failed, with the error recorded as an exception event. */
export function failSpan(span: Span, error: unknown): void {
  const err = error instanceof Error ? error : new Error(String(error));
  span.recordException(err);
  span.setStatus({ code: SpanStatusCode.ERROR, message: err.message });
}

export interface SpanSpec {
  kind?: SpanKind;
  attributes?: Attributes;
  /** The parent; the active context when omitted. */
  parent?: Context;
}

/**
 * Runs `fn` inside a span that ends when it settles (failed when it throws); `span` is undefined
 * while tracing is off, and `fn` is then called directly (a spec given as a function is not even built).
 */
export function inSpan<T>(name: string, describe: SpanSpec | (() => SpanSpec), fn: (span: Span | undefined) => Promise<T>): Promise<T> {
  if (!enabled) return fn(undefined);
  const spec = typeof describe === 'function' ? describe() : describe;
  return tracer.startActiveSpan(name, { kind: spec.kind ?? SpanKind.INTERNAL, ...(spec.attributes ? { attributes: spec.attributes } : {}) }, spec.parent ?? context.active(), async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      failSpan(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

/** A span the caller ends (one that outlives the call that starts it, such as a stream's); undefined while tracing is off. */
export function openSpan(name: string, spec: SpanSpec): Span | undefined {
  if (!enabled) return undefined;
  return tracer.startSpan(name, { kind: spec.kind ?? SpanKind.INTERNAL, ...(spec.attributes ? { attributes: spec.attributes } : {}) }, spec.parent ?? context.active());
}

/** Runs `fn` with `span` as the active span (directly when there is none). */
export function withSpan<T>(span: Span | undefined, fn: () => T): T {
  return span ? context.with(trace.setSpan(context.active(), span), fn) : fn();
}

/** The active trace context as W3C headers in JSON (kept with a task so its run joins the trace), or null. */
export function savedTraceContext(): string | null {
  if (!enabled) return null;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent ? JSON.stringify(carrier) : null;
}

/** The context a saved trace context names (the root context when there is none). */
export function restoredTraceContext(saved: string | null | undefined): Context {
  if (!saved) return ROOT_CONTEXT;
  try {
    return propagation.extract(ROOT_CONTEXT, JSON.parse(saved) as Record<string, string>);
  } catch {
    return ROOT_CONTEXT;
  }
}

/** The context an incoming request's headers carry (traceparent, tracestate). */
export function incomingTraceContext(headers: Record<string, string | string[] | undefined>): Context {
  return propagation.extract(ROOT_CONTEXT, headers);
}

/** The span of an outgoing HTTP call to an upstream: the URL without its query (which may hold a key). */
export function upstreamCallSpec(method: string, url: URL, provider: string): SpanSpec {
  return {
    kind: SpanKind.CLIENT,
    attributes: {
      'http.request.method': method,
      'url.full': `${url.origin}${url.pathname}`,
      'server.address': url.hostname,
      ...(url.port ? { 'server.port': Number(url.port) } : {}),
      [GEN_AI.providerName]: provider,
    },
  };
}

export { SpanKind };
