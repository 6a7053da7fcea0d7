/**
 * Server-sent event streams of chat APIs, read and turned into OpenAI chat chunks: the part every
 * chat adapter shares (each has its own StreamTranslator).
 */
import type { Readable } from 'node:stream';
import { ApiError } from '../core/errors.ts';
import type { ChatChunk } from './spec.ts';

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
 */
export async function* translatedChunks(body: Readable, translator: StreamTranslator, opts: StreamOptions): AsyncGenerator<ChatChunk> {
  // The events are read here rather than from sseData: one async step per chunk fewer, and no
  // wrapper per event around the translator's array.
  body.setEncoding('utf8');
  const events = new SseEvents();
  try {
    for await (const text of body as AsyncIterable<string>) {
      for (const data of events.push(text)) {
        if (translator.finished) continue;
        for (const chunk of translator.push(data)) yield chunk;
      }
    }
    const last = events.end();
    if (last !== undefined && !translator.finished) for (const chunk of translator.push(last)) yield chunk;
  } catch (err) {
    opts.signal.throwIfAborted();
    if (err instanceof ApiError) throw err;
    throw midStreamError(opts.provider, err as Error, opts.timeoutMs);
  } finally {
    // The caller stopped early (client gone, error): drop the upstream response.
    if (!body.readableEnded) body.destroy();
  }
  for (const chunk of translator.end()) yield chunk;
}
