import { setTimeout as delay } from 'node:timers/promises';
import { failSpan, inSpan, upstreamCallSpec } from '../../telemetry/tracing.ts';
import type { IncomingHttpHeaders } from 'node:http';
import { errors, Pool, type Dispatcher } from 'undici';
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
const CHAT_PATH = '/chat/completions';

/** A streamed answer's body. */
export type StreamBody = Dispatcher.ResponseData['body'];

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

/** An answer's Retry-After header, when it sent one. */
function retryAfterOf(headers: IncomingHttpHeaders): string | undefined {
  const header = headers['retry-after'];
  return typeof header === 'string' ? header : undefined;
}

/** What every try's answer tells the retry loop: its status, its Retry-After, and its body's text when it failed. */
interface Answered {
  readonly statusCode: number;
  readonly retryAfter: string | undefined;
  errorText(): Promise<string>;
}

/** A streamed answer: its body is read by the caller. */
class StreamAnswer implements Answered {
  readonly statusCode: number;
  readonly retryAfter: string | undefined;
  readonly body: StreamBody;

  constructor(res: Dispatcher.ResponseData) {
    this.statusCode = res.statusCode;
    this.retryAfter = retryAfterOf(res.headers);
    this.body = res.body;
  }

  errorText(): Promise<string> {
    return this.body.text().catch(() => '');
  }
}

/** A whole answer, read as it came. */
class WholeAnswer implements Answered {
  readonly statusCode: number;
  readonly retryAfter: string | undefined;
  readonly text: string;

  constructor(statusCode: number, retryAfter: string | undefined, text: string) {
    this.statusCode = statusCode;
    this.retryAfter = retryAfter;
    this.text = text;
  }

  errorText(): Promise<string> {
    return Promise.resolve(this.text);
  }
}

/** A whole answer's deadline passed (a timer's callback: no closure per call). */
function wholeAnswerTimedOut(handler: WholeAnswerHandler): void {
  handler.timedOut();
}

/**
 * Gathers a whole answer's bytes as they arrive (undici's dispatch handler): no response stream
 * and no async resource per call, which a request whose answer is read whole does not need.
 * Listens to the caller's signal itself (an EventListener object: no closure per call).
 *
 * It keeps the transport's timeout itself, with a timer of Node's that it clears when the answer
 * ends: undici's own timeouts keep each request's timer object in a list for up to a second after
 * the request, long enough for every one to reach V8's old generation, where they piled up as
 * garbage at some 2,000 at a time under load. The same errors as undici's (the retry loop reads
 * their codes): no headers within the timeout, or a gap that long between the body's bytes.
 */
class WholeAnswerHandler implements Dispatcher.DispatchHandler {
  readonly #provider: string;
  readonly #signal: AbortSignal;
  readonly #timeoutMs: number;
  readonly #resolve: (answer: WholeAnswer) => void;
  readonly #reject: (err: unknown) => void;
  #controller: Dispatcher.DispatchController | undefined;
  #timer: NodeJS.Timeout | undefined;
  #statusCode = 0;
  #retryAfter: string | undefined;
  readonly #chunks: Buffer[] = [];

  constructor(provider: string, signal: AbortSignal, timeoutMs: number, resolve: (answer: WholeAnswer) => void, reject: (err: unknown) => void) {
    this.#provider = provider;
    this.#signal = signal;
    this.#timeoutMs = timeoutMs;
    this.#resolve = resolve;
    this.#reject = reject;
    signal.addEventListener('abort', this);
  }

  /** The caller's signal aborted: the request (queued, sent, or half answered) is given up. */
  handleEvent(): void {
    this.#controller?.abort(this.#signal.reason as Error);
  }

  timedOut(): void {
    this.#timer = undefined;
    this.#controller?.abort(this.#statusCode === 0 ? new errors.HeadersTimeoutError() : new errors.BodyTimeoutError());
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    if (this.#signal.aborted) {
      controller.abort(this.#signal.reason as Error);
      return;
    }
    this.#controller = controller;
    this.#timer = setTimeout(wholeAnswerTimedOut, this.#timeoutMs, this);
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    this.#statusCode = statusCode;
    this.#retryAfter = retryAfterOf(headers);
    this.#timer?.refresh();
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.#chunks.push(chunk);
    this.#timer?.refresh();
  }

  onResponseEnd(): void {
    this.#signal.removeEventListener('abort', this);
    clearTimeout(this.#timer);
    const chunks = this.#chunks;
    this.#resolve(new WholeAnswer(this.#statusCode, this.#retryAfter, (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).toString('utf8')));
  }

  /**
   * Before an answer began, the error as undici gave it (the retry loop reads its code); once it
   * began, the upstream's answer broke off. The abort of the caller's signal is the loop's to rethrow.
   */
  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    this.#signal.removeEventListener('abort', this);
    clearTimeout(this.#timer);
    if (this.#statusCode === 0 || this.#signal.aborted) {
      this.#reject(err);
      return;
    }
    const timedOut = (err as { code?: string }).code === 'UND_ERR_BODY_TIMEOUT';
    this.#reject(new ApiError(timedOut ? 'upstream_timeout' : 'upstream_error', `${this.#provider} answer broke off: ${err.message}`));
  }
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
    // Each request sets its own timeouts (#request).
    this.#pool = new Pool(base.origin, { connections: opts.concurrency });
    this.#basePath = base.pathname.replace(/\/+$/, '');
    this.#headers = { 'content-type': 'application/json', ...(opts.authHeaders ?? (opts.apiKey ? { authorization: `Bearer ${opts.apiKey}` } : {})) };
  }

  /**
   * POSTs a chat body to `path` under the base URL (query included), with `extraHeaders` besides
   * the transport's own; resolves with the text of the upstream's whole 2xx answer. Errors are
   * ApiErrors (a body that broke off too), except the abort of `signal`, which is rethrown as it is.
   */
  async answer(body: string, signal: AbortSignal, path = CHAT_PATH, extraHeaders: Record<string, string> = {}): Promise<string> {
    // The handler keeps the timeout (see WholeAnswerHandler): undici's are off for this request.
    const options = this.#request(body, path, extraHeaders, 'application/json', 0);
    const answer = await this.#exchange(path, signal, () => new Promise<WholeAnswer>((resolve, reject) => {
      this.#pool.dispatch(options, new WholeAnswerHandler(this.opts.provider, signal, this.opts.timeoutMs, resolve, reject));
    }));
    return answer.text;
  }

  /** As answer, for a streamed answer: resolves with its body, unread. */
  async stream(body: string, signal: AbortSignal, path = CHAT_PATH, extraHeaders: Record<string, string> = {}): Promise<StreamBody> {
    const options = this.#request(body, path, extraHeaders, 'text/event-stream', this.opts.timeoutMs, signal);
    const answer = await this.#exchange(path, signal, async () => new StreamAnswer(await this.#pool.request(options)));
    return answer.body;
  }

  /**
   * A POST of `body` to `path` with the transport's headers, `extraHeaders` and `accept`, and
   * undici's headers and body timeouts at `undiciTimeoutMs` (0: none); `signal` for a request read
   * as a stream (a whole answer's handler listens to it itself).
   */
  #request(body: string, path: string, extraHeaders: Record<string, string>, accept: string, undiciTimeoutMs: number, signal?: AbortSignal): Dispatcher.RequestOptions {
    return { method: 'POST', path: this.#basePath + path, headers: { ...extraHeaders, ...this.#headers, accept }, body, signal, headersTimeout: undiciTimeoutMs, bodyTimeout: undiciTimeoutMs };
  }

  /** Sends by `send` until an answer is 2xx, or fails for good (see the class). */
  async #exchange<A extends Answered>(path: string, signal: AbortSignal, send: () => Promise<A>): Promise<A> {
    const { provider, retry } = this.opts;
    for (let attempt = 0; ; attempt++) {
      const retriesLeft = attempt < retry.attempts;
      let answer: A;
      try {
        answer = await inSpan('POST', () => upstreamCallSpec('POST', new URL(this.#basePath + path, this.opts.baseURL), provider), async (span) => {
          const answered = await send();
          span?.setAttribute('http.response.status_code', answered.statusCode);
          if (span && answered.statusCode >= 400) failSpan(span, `HTTP ${answered.statusCode}`);
          return answered;
        });
      } catch (err) {
        signal.throwIfAborted();
        if (err instanceof ApiError) throw err;
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
      if (answer.statusCode < 300) return answer;

      const text = await answer.errorText();
      const retryAfter = retryAfterMs(answer.retryAfter ?? null);
      const failure = statusError(provider, answer.statusCode, text, retryAfter);
      if (TRANSIENT_STATUS(answer.statusCode)) {
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

/** The JSON of an answer's text; a text that is not JSON is the upstream's failure. */
export function parsedAnswer(text: string, provider: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError('upstream_error', `${provider} answered with something that is not JSON: ${text.slice(0, 200)}`);
  }
}
