import { setTimeout as delay } from 'node:timers/promises';
import { failSpan, inSpan, upstreamCallSpec } from '../../telemetry/tracing.ts';
import { Pool, type Dispatcher } from 'undici';
import { ApiError, UpstreamApiError } from '../../core/errors.ts';
import { backoffMs } from '../../core/backoff.ts';
import { mayRetry } from '../retry-gate.ts';
import { retryAfterMs, type RetryPolicy } from '../upstream-client.ts';
import { OpenAiError, OpenAiErrorText, OpenAiMessage } from './reply-schemas.ts';

export interface ChatTransportOptions {
  /** Provider code, named in error messages. */
  provider: string;
  /** e.g. https://api.openai.com/v1; the path of each call is appended. */
  baseURL: string;
  apiKey: string | undefined;
  /** The authentication of an API that takes no bearer key (Anthropic's x-api-key); replaces `Authorization: Bearer <apiKey>`. */
  authHeaders?: Record<string, string>;
  /** Bounds the wait for the answer's headers and every gap between streamed bytes. */
  timeoutMs: number;
  /** Connections kept to the upstream; calls beyond them wait for a free one. */
  concurrency: number;
  retry: RetryPolicy;
}

/** Upstream answers worth trying again: rate limits and server errors. */
const TRANSIENT_STATUS = (status: number) => status === 429 || status >= 500;
/** Upstream answers that mean the caller's parameters were refused (the caller can fix them). */
const REFUSED_STATUS = new Set([400, 422]);
const ERROR_TEXT_LIMIT = 2000;

/** Undici's codes for a request that never got an answer; the request can be sent again. */
const CONNECTION_ERRORS = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_CLOSED']);

/** The message of an OpenAI-style error body (`{error: {message, param}}`), else its text. */
function upstreamErrorOf(text: string): { message: string; param: string | null } {
  try {
    const body: unknown = JSON.parse(text);
    if (OpenAiErrorText.Check(body)) return { message: body.error, param: null };
    if (OpenAiError.Check(body)) return { message: body.error.message, param: body.error.param ?? null };
    if (OpenAiMessage.Check(body)) return { message: body.message, param: null };
  } catch {
    // not JSON: the text itself says what went wrong
  }
  return { message: text.length > ERROR_TEXT_LIMIT ? `${text.slice(0, ERROR_TEXT_LIMIT)}…` : text, param: null };
}

/** The error of an upstream's answer with a failing status. */
function statusError(provider: string, status: number, text: string, retryAfter: number | undefined): UpstreamApiError {
  const { message, param } = upstreamErrorOf(text);
  const what = `${provider} answered HTTP ${status}${message ? `: ${message}` : ''}`;
  if (status === 429) {
    const seconds = Math.max(1, Math.ceil((retryAfter ?? 1000) / 1000));
    return new UpstreamApiError('rate_limited', what, 429, null, { 'retry-after': String(seconds) });
  }
  if (REFUSED_STATUS.has(status)) return new UpstreamApiError('invalid_request', what, status, param);
  return new UpstreamApiError('upstream_error', what, status);
}

/** The message of a transport failure, with its cause when undici wraps one. */
function describe(err: Error): string {
  const cause = err.cause instanceof Error ? err.cause.message : undefined;
  return cause && cause !== err.message ? `${err.message} (${cause})` : err.message;
}

/**
 * HTTP to one chat API (OpenAI-compatible by default; Anthropic's and Gemini's adapters post to
 * their own paths): a keep-alive connection pool (undici), authentication, timeouts, and retries
 * of failures that happen before any answer came back (refused or reset connections, 429, 5xx
 * and Anthropic's 529) with backoff that honours Retry-After, each while the routed call has a
 * try left for this channel (retry-gate.ts).
 */
export class ChatTransport {
  readonly #pool: Pool;
  /** The base URL's path, which every call's path continues. */
  readonly #basePath: string;
  readonly #headers: Record<string, string>;

  private readonly opts: ChatTransportOptions;

  constructor(opts: ChatTransportOptions) {
    this.opts = opts;
    const base = new URL(opts.baseURL);
    this.#pool = new Pool(base.origin, { connections: opts.concurrency, headersTimeout: opts.timeoutMs, bodyTimeout: opts.timeoutMs });
    this.#basePath = base.pathname.replace(/\/+$/, '');
    this.#headers = { 'content-type': 'application/json', ...(opts.authHeaders ?? (opts.apiKey ? { authorization: `Bearer ${opts.apiKey}` } : {})) };
  }

  /**
   * POSTs a chat body to `path` under the base URL (query included), with `extraHeaders` besides
   * the transport's own; resolves with the upstream's 2xx answer, its body unread. Errors are
   * ApiErrors, except the abort of `signal`, which is rethrown as it is.
   */
  async post(body: string, stream: boolean, signal: AbortSignal, path = '/chat/completions', extraHeaders: Record<string, string> = {}): Promise<Dispatcher.ResponseData> {
    const { provider, retry } = this.opts;
    const headers = { ...extraHeaders, ...this.#headers, accept: stream ? 'text/event-stream' : 'application/json' };
    for (let attempt = 0; ; attempt++) {
      const retriesLeft = attempt < retry.attempts;
      let res: Dispatcher.ResponseData;
      try {
        res = await inSpan('POST', () => upstreamCallSpec('POST', new URL(this.#basePath + path, this.opts.baseURL), provider), async (span) => {
          const answer = await this.#pool.request({ method: 'POST', path: this.#basePath + path, headers, body, signal });
          span?.setAttribute('http.response.status_code', answer.statusCode);
          if (span && answer.statusCode >= 400) failSpan(span, `HTTP ${answer.statusCode}`);
          return answer;
        });
      } catch (err) {
        signal.throwIfAborted();
        const code = (err as { code?: string }).code ?? '';
        if (code === 'UND_ERR_HEADERS_TIMEOUT') {
          // It may have been acted on (and billed): not sent again.
          throw new UpstreamApiError('upstream_timeout', `${provider} did not answer within ${this.opts.timeoutMs} ms`, undefined);
        }
        const causeCode = ((err as Error).cause as { code?: string } | undefined)?.code ?? '';
        if (!CONNECTION_ERRORS.has(code) && !CONNECTION_ERRORS.has(causeCode)) throw err;
        const failure = new UpstreamApiError('upstream_error', `${provider} could not be reached: ${describe(err as Error)}`, undefined);
        if (retriesLeft && mayRetry(signal, failure)) {
          await delay(backoffMs(retry, attempt), undefined, { signal });
          continue;
        }
        throw failure;
      }
      if (res.statusCode < 300) return res;

      const text = await res.body.text().catch(() => '');
      const header = res.headers['retry-after'];
      const retryAfter = retryAfterMs(typeof header === 'string' ? header : null);
      const failure = statusError(provider, res.statusCode, text, retryAfter);
      if (TRANSIENT_STATUS(res.statusCode)) {
        // A wait longer than the policy allows is the client's to make, not a held connection's.
        const wait = retryAfter ?? backoffMs(retry, attempt);
        if (retriesLeft && wait <= retry.maxDelayMs && mayRetry(signal, failure)) {
          await delay(wait, undefined, { signal });
          continue;
        }
      }
      throw failure;
    }
  }
}

/**
 * The text of a whole (not streamed) answer. A broken-off or timed-out body is the upstream's
 * failure; the abort of `signal` is rethrown as it is.
 */
export async function answerText(res: Dispatcher.ResponseData, provider: string, signal: AbortSignal): Promise<string> {
  try {
    return await res.body.text();
  } catch (err) {
    signal.throwIfAborted();
    const timedOut = (err as { code?: string }).code === 'UND_ERR_BODY_TIMEOUT';
    throw new ApiError(timedOut ? 'upstream_timeout' : 'upstream_error', `${provider} answer broke off: ${(err as Error).message}`);
  }
}

/** The JSON of an answer's text; a text that is not JSON is the upstream's failure. */
export function parsedAnswer(text: string, provider: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError('upstream_error', `${provider} answered with something that is not JSON: ${text.slice(0, 200)}`);
  }
}

/** The JSON of a whole (not streamed) answer (see answerText and parsedAnswer). */
export async function answerJson(res: Dispatcher.ResponseData, provider: string, signal: AbortSignal): Promise<unknown> {
  return parsedAnswer(await answerText(res, provider, signal), provider);
}
