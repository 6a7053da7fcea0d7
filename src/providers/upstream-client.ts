import { setTimeout as delay } from 'node:timers/promises';
import { backoffMs, type Backoff } from '../core/backoff.ts';
import { failSpan, inSpan, upstreamCallSpec } from '../telemetry/tracing.ts';
import { mayRetry } from './retry-gate.ts';
import { followingSignal } from '../core/following-signal.ts';
import { TaskFailedError } from './spec.ts';

/** How transient upstream failures are retried (GENGATE_CONFIG providers.<code>.retry). */
export interface RetryPolicy extends Backoff {
  /** Retries after the first try. */
  attempts: number;
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 3, baseDelayMs: 500, maxDelayMs: 10_000 };
export const DEFAULT_TIMEOUT_MS = 60_000;
export const DEFAULT_CONCURRENCY = 16;

export interface UpstreamClientOptions {
  /** Provider code, named in error messages. */
  provider: string;
  baseURL: string;
  /** Headers sent with every request (authentication). */
  headers?: Record<string, string>;
  timeoutMs?: number;
  concurrency?: number;
  retry?: RetryPolicy;
  fetch?: typeof fetch;
  /** The upstream's own words in an error body (its JSON envelope unwrapped); default: the body text. */
  errorMessage?: (text: string) => string;
}

export interface UpstreamRequest {
  method?: string;
  /** Joined to the base URL; an absolute URL is used as it is. */
  path: string;
  query?: Record<string, string | number | undefined>;
  headers?: Record<string, string>;
  /** Sent as JSON. */
  json?: unknown;
  /** Sent as it is (multipart, bytes). */
  body?: BodyInit;
  signal?: AbortSignal;
  /** Whether the request may be sent again after a timeout (it may have been acted on). Default: GET only. */
  idempotent?: boolean;
}

export interface UpstreamResponse {
  status: number;
  headers: Headers;
  body: Buffer;
  json<T = unknown>(): T;
}

/**
 * An upstream's refusal or failure; the task fails with `message` and the upstream's own text as
 * original_error_message.
 */
export class UpstreamError extends TaskFailedError {
  readonly status: number | undefined;

  constructor(message: string, originalMessage: string | undefined, status: number | undefined) {
    super(message, originalMessage);
    this.status = status;
    this.name = 'UpstreamError';
  }
}

/** Milliseconds a Retry-After header asks for (seconds or an HTTP date), if any. */
export function retryAfterMs(header: string | null, now = Date.now()): number | undefined {
  if (!header) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Bounds concurrent work; waiters are served in arrival order. */
class Semaphore {
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  private readonly limit: number;

  constructor(limit: number) {
    this.limit = limit;
  }

  async acquire(signal?: AbortSignal): Promise<() => void> {
    if (this.active >= this.limit) {
      await new Promise<void>((resolve, reject) => {
        const onAbort = () => {
          const i = this.waiting.indexOf(go);
          if (i >= 0) this.waiting.splice(i, 1);
          reject(signal!.reason);
        };
        const go = () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        };
        this.waiting.push(go);
        signal?.addEventListener('abort', onAbort, { once: true });
      });
    }
    this.active++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.active--;
      this.waiting.shift()?.();
    };
  }
}

function errorText(body: Buffer): string {
  const text = body.toString('utf8').trim();
  return text.length > 2000 ? `${text.slice(0, 2000)}…` : text;
}

/**
 * HTTP towards one provider: base URL and authentication apart from each adapter's payload
 * mapping, a per-request timeout, a concurrency limit, and retries of transient failures
 * (connection errors, 429, 5xx) with backoff that honours Retry-After. A request that sends work
 * (not idempotent) is sent again only when its routed call has a try left for this channel
 * (retry-gate.ts); reads (polls, downloads) retry by the policy alone.
 */
export class UpstreamClient {
  private readonly retry: RetryPolicy;
  private readonly timeoutMs: number;
  private readonly slots: Semaphore;
  private readonly doFetch: typeof fetch;

  private readonly opts: UpstreamClientOptions;

  constructor(opts: UpstreamClientOptions) {
    this.opts = opts;
    this.retry = opts.retry ?? DEFAULT_RETRY;
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.slots = new Semaphore(opts.concurrency ?? DEFAULT_CONCURRENCY);
    this.doFetch = opts.fetch ?? fetch;
  }

  urlOf(path: string, query?: UpstreamRequest['query']): URL {
    const url = /^https?:\/\//.test(path) ? new URL(path) : new URL(this.opts.baseURL.replace(/\/+$/, '') + (path.startsWith('/') ? path : `/${path}`));
    for (const [key, value] of Object.entries(query ?? {})) if (value !== undefined) url.searchParams.set(key, String(value));
    return url;
  }

  /** Sends the request; answers any status below 400, throws UpstreamError otherwise. */
  async request(req: UpstreamRequest): Promise<UpstreamResponse> {
    const method = req.method ?? (req.json !== undefined || req.body !== undefined ? 'POST' : 'GET');
    const idempotent = req.idempotent ?? method === 'GET';
    const url = this.urlOf(req.path, req.query);
    for (let attempt = 0; ; attempt++) {
      const retriesLeft = attempt < this.retry.attempts;
      let res: Response;
      let body: Buffer;
      const release = await this.slots.acquire(req.signal);
      const bounded = followingSignal(req.signal);
      const timer = setTimeout(() => bounded.controller.abort(new DOMException(`timed out after ${this.timeoutMs} ms`, 'TimeoutError')), this.timeoutMs).unref();
      try {
        const headers: Record<string, string> = { ...this.opts.headers, ...req.headers };
        if (req.json !== undefined) headers['content-type'] = 'application/json';
        ({ res, body } = await inSpan(method, () => upstreamCallSpec(method, url, this.opts.provider), async (span) => {
          const answer = await this.doFetch(url, {
            method,
            headers,
            body: req.json !== undefined ? JSON.stringify(req.json) : req.body,
            signal: bounded.controller.signal,
          });
          span?.setAttribute('http.response.status_code', answer.status);
          if (span && answer.status >= 400) failSpan(span, `HTTP ${answer.status}`);
          return { res: answer, body: Buffer.from(await answer.arrayBuffer()) };
        }));
      } catch (err) {
        req.signal?.throwIfAborted();
        const timedOut = (err as Error).name === 'TimeoutError';
        const what = timedOut ? `timed out after ${this.timeoutMs} ms` : `could not be reached (${(err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message})`;
        const failure = new UpstreamError(`${this.opts.provider} ${what}`, `${method} ${url.pathname}: ${what}`, undefined);
        if (retriesLeft && (idempotent || (!timedOut && mayRetry(req.signal, failure)))) {
          await delay(backoffMs(this.retry, attempt), undefined, { signal: req.signal });
          continue;
        }
        throw failure;
      } finally {
        clearTimeout(timer);
        bounded.stop();
        release();
      }
      if (res.status < 400) return { status: res.status, headers: res.headers, body, json: <T>() => JSON.parse(body.toString('utf8')) as T };
      const text = errorText(body) || `HTTP ${res.status}`;
      const failure = new UpstreamError(`${this.opts.provider} answered HTTP ${res.status}`, this.opts.errorMessage?.(text) ?? text, res.status);
      const transient = res.status === 429 || res.status >= 500;
      if (transient && retriesLeft && (idempotent || mayRetry(req.signal, failure))) {
        const wait = retryAfterMs(res.headers.get('retry-after')) ?? backoffMs(this.retry, attempt);
        await delay(Math.min(wait, this.retry.maxDelayMs * 6), undefined, { signal: req.signal });
        continue;
      }
      throw failure;
    }
  }
}
