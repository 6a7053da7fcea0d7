/**
 * Server-sent event streams of chat APIs, read and turned into OpenAI chat chunks: the part every
 * chat adapter shares (each has its own StreamTranslator).
 */
import type { Readable } from 'node:stream';
import { ApiError } from '../core/errors.ts';
import type { ChatChunk } from './spec.ts';

/**
 * The `data` of each server-sent event in a byte stream, as soon as its blank line arrives.
 * Comment lines (`: keep-alive`) and the other fields (event, id, retry) are skipped; lines end
 * with LF or CRLF.
 */
export async function* sseData(body: Readable): AsyncGenerator<string> {
  body.setEncoding('utf8');
  let buffer = '';
  let data: string | undefined;
  for await (const text of body as AsyncIterable<string>) {
    buffer += text;
    let start = 0;
    for (let end = buffer.indexOf('\n'); end >= 0; end = buffer.indexOf('\n', start)) {
      const line = buffer.charCodeAt(end - 1) === 13 && end > start ? buffer.slice(start, end - 1) : buffer.slice(start, end);
      start = end + 1;
      if (line === '') {
        if (data !== undefined) yield data;
        data = undefined;
      } else if (line.startsWith('data:')) {
        const value = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
        data = data === undefined ? value : `${data}\n${value}`;
      }
    }
    buffer = buffer.slice(start);
  }
  if (buffer.startsWith('data:')) data = (data === undefined ? '' : `${data}\n`) + buffer.slice(buffer.charCodeAt(5) === 32 ? 6 : 5);
  if (data !== undefined) yield data;
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
  try {
    for await (const data of sseData(body)) {
      if (!translator.finished) yield* translator.push(data);
    }
  } catch (err) {
    opts.signal.throwIfAborted();
    if (err instanceof ApiError) throw err;
    throw midStreamError(opts.provider, err as Error, opts.timeoutMs);
  } finally {
    // The caller stopped early (client gone, error): drop the upstream response.
    if (!body.readableEnded) body.destroy();
  }
  yield* translator.end();
}
