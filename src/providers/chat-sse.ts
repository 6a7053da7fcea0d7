/**
 * Server-sent event streams of chat APIs, read and turned into OpenAI chat chunks: the part every
 * chat adapter shares (each has its own StreamTranslator).
 */
import type { Readable } from 'node:stream';
import { ApiError } from '../core/errors.ts';
import type { ChatChunk } from './spec.ts';
import { DONE } from '../core/iteration-done.ts';

/**
 * The `data` of server-sent events in text that arrives in pieces, each event's as soon as its
 * blank line arrives. Comment lines (`: keep-alive`) and the other fields (event, id, retry) are
 * skipped; lines end with LF or CRLF. Synchronous, so a stream's reader turns a read into its
 * events without an async step for each.
 */
class SseEvents {
  private buffer = '';
  private data: string | undefined;

  /** The data of the events that `text` completes. */
  push(text: string): string[] {
    const events: string[] = [];
    const buffer = this.buffer + text;
    let start = 0;
    for (let end = buffer.indexOf('\n'); end >= 0; end = buffer.indexOf('\n', start)) {
      const line = buffer.charCodeAt(end - 1) === 13 && end > start ? buffer.slice(start, end - 1) : buffer.slice(start, end);
      start = end + 1;
      if (line === '') {
        if (this.data !== undefined) events.push(this.data);
        this.data = undefined;
      } else if (line.startsWith('data:')) {
        const value = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
        this.data = this.data === undefined ? value : `${this.data}\n${value}`;
      }
    }
    this.buffer = buffer.slice(start);
    return events;
  }

  /** The data of an event the stream ended in without its blank line: its last line read as if ended, then the event. */
  end(): string | undefined {
    return this.push('\n\n')[0];
  }
}

/** The `data` of each server-sent event in a byte stream (see SseEvents). */
export async function* sseData(body: Readable): AsyncGenerator<string> {
  body.setEncoding('utf8');
  const events = new SseEvents();
  for await (const text of body as AsyncIterable<string>) for (const data of events.push(text)) yield data;
  const last = events.end();
  if (last !== undefined) yield last;
}

/** What a failure of the upstream connection after the start means for the caller. */
export function midStreamError(provider: string, err: Error, timeoutMs: number): ApiError {
  if ((err as { code?: string }).code === 'UND_ERR_BODY_TIMEOUT') return new ApiError('upstream_timeout', `${provider} sent nothing for ${timeoutMs} ms in the middle of the stream`);
  return new ApiError('upstream_error', `${provider} stream broke off: ${err.message}`);
}

/** The JSON of one stream event's data; data that is not JSON is the upstream's failure. */
export function streamFrame(data: string, provider: string): unknown {
  try {
    return JSON.parse(data);
  } catch {
    throw new ApiError('upstream_error', `${provider} sent a stream frame that is not JSON: ${data.slice(0, 200)}`);
  }
}

/** Turns the events of one upstream's stream into OpenAI chat chunks. */
export interface StreamTranslator {
  /** The chunks of one event's data; an upstream's error event is thrown as an ApiError. */
  push(data: string): ChatChunk[];
  /** The upstream said its answer is complete: later events are read (to free the connection) and dropped. */
  readonly finished: boolean;
  /** The chunks that close the stream (e.g. usage); throws an ApiError when the answer is incomplete. */
  end(): ChatChunk[];
}

export interface StreamOptions {
  provider: string;
  timeoutMs: number;
  signal: AbortSignal;
}

/**
 * The chat chunks of an upstream's server-sent events, as `translator` makes them. The upstream's
 * own error event, a frame that cannot be read, a broken connection and an incomplete answer
 * are all thrown as ApiErrors, so a failed stream never looks finished. The abort of `signal` is
 * rethrown as it is.
 *
 * Written out rather than as an async generator over the body's own async iterator: a stream's
 * chunks come a while apart, and each wait of those two layers kept a dozen promises and
 * generator requests alive across young collections (promoted, then dropped), for every chunk
 * of every open stream. Here the body is read as it arrives (paused while chunks wait for the
 * reader) and a wait costs one promise. Read by one reader at a time, as a for-await reads.
 */
class TranslatedChunks implements AsyncIterableIterator<ChatChunk> {
  private readonly events = new SseEvents();
  /** Chunks made and not yet read. */
  private readonly queue: ChatChunk[] = [];
  /** How the stream ended, once it has, given to the reader after the queued chunks. */
  private outcome: { error?: unknown } | undefined;
  /** Whether the reader was given the outcome: nothing more is read or given. */
  private over = false;
  private waiter: { resolve(result: IteratorResult<ChatChunk>): void; reject(err: unknown): void } | undefined;
  private readonly body: Readable;
  private readonly translator: StreamTranslator;
  private readonly opts: StreamOptions;

  constructor(body: Readable, translator: StreamTranslator, opts: StreamOptions) {
    this.body = body;
    this.translator = translator;
    this.opts = opts;
    body.setEncoding('utf8');
    body.on('data', this.read);
    body.on('end', this.ended);
    body.on('error', this.broke);
    // Destroyed without an error before its end (a for-await over it throws a premature close).
    body.on('close', this.closed);
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<ChatChunk>> {
    const chunk = this.queue.shift();
    if (chunk !== undefined) {
      if (this.queue.length === 0 && this.outcome === undefined) this.body.resume();
      return Promise.resolve({ done: false, value: chunk });
    }
    if (this.outcome !== undefined) return this.settle();
    return new Promise((resolve, reject) => (this.waiter = { resolve, reject }));
  }

  return(): Promise<IteratorResult<ChatChunk>> {
    this.finish();
    return Promise.resolve(DONE);
  }

  private readonly read = (text: string): void => {
    if (this.translate(this.events.push(text))) this.handOver();
  };

  private readonly ended = (): void => {
    const last = this.events.end();
    if (this.translate(last === undefined ? [] : [last])) this.stop({});
  };

  /**
   * Queues the chunks of these events' data; false once the stream has stopped, by a frame refused
   * here (it stops with that error) or before: nothing after a refused frame is read.
   */
  private translate(events: readonly string[]): boolean {
    if (this.outcome !== undefined) return false;
    try {
      for (const data of events) {
        if (!this.translator.finished) this.queue.push(...this.translator.push(data));
      }
    } catch (err) {
      this.stop({ error: err });
      return false;
    }
    return true;
  }

  private readonly broke = (err: Error): void => this.stop({ error: err });

  private readonly closed = (): void => {
    if (this.outcome === undefined) this.stop({ error: Object.assign(new Error('Premature close'), { code: 'ERR_STREAM_PREMATURE_CLOSE' }) });
  };

  /** The body is done with (ended, failed, or a frame refused): what is queued goes first. */
  private stop(outcome: { error?: unknown }): void {
    if (this.outcome !== undefined) return;
    this.outcome = outcome;
    this.handOver();
  }

  /** A waiting reader gets the next chunk, or the outcome; chunks left over pause the body until read. */
  private handOver(): void {
    const waiter = this.waiter;
    if (waiter) {
      const chunk = this.queue.shift();
      if (chunk !== undefined) {
        this.waiter = undefined;
        waiter.resolve({ done: false, value: chunk });
      } else if (this.outcome !== undefined) {
        this.waiter = undefined;
        this.settle().then(waiter.resolve, waiter.reject);
        return;
      }
    }
    if (this.queue.length > 0 && this.outcome === undefined) this.body.pause();
  }

  /** The outcome for the reader: the closing chunks, done, or the failure as the caller sees it. */
  private settle(): Promise<IteratorResult<ChatChunk>> {
    if (this.over) return Promise.resolve(DONE);
    const { error } = this.outcome!;
    this.finish();
    try {
      if (error !== undefined) {
        this.opts.signal.throwIfAborted();
        if (error instanceof ApiError) throw error;
        throw midStreamError(this.opts.provider, error as Error, this.opts.timeoutMs);
      }
      this.queue.push(...this.translator.end());
    } catch (err) {
      return Promise.reject(err);
    }
    const chunk = this.queue.shift();
    return Promise.resolve(chunk === undefined ? DONE : { done: false, value: chunk });
  }

  /** Nothing more is read: the upstream response is dropped unless it ended (client gone, error, or done). */
  private finish(): void {
    if (this.over) return;
    this.over = true;
    this.outcome ??= {};
    this.queue.length = 0;
    const { body } = this;
    body.off('data', this.read);
    body.off('end', this.ended);
    body.off('close', this.closed);
    // An error after this point has no reader; the listener stays so it is not an uncaught one.
    if (!body.readableEnded) body.destroy();
  }
}

/** The chat chunks of an upstream's server-sent events (see TranslatedChunks). */
export function translatedChunks(body: Readable, translator: StreamTranslator, opts: StreamOptions): AsyncIterableIterator<ChatChunk> {
  return new TranslatedChunks(body, translator, opts);
}
