import type { Readable } from 'node:stream';
import { ApiError } from '../../core/errors.ts';
import type { ChatChunk } from '../spec.ts';

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
function midStreamError(provider: string, err: Error, timeoutMs: number): ApiError {
  if ((err as { code?: string }).code === 'UND_ERR_BODY_TIMEOUT') return new ApiError('upstream_timeout', `${provider} sent nothing for ${timeoutMs} ms in the middle of the stream`);
  return new ApiError('upstream_error', `${provider} stream broke off: ${err.message}`);
}

/**
 * The chunks of an OpenAI chat stream. The upstream's own `error` event, a frame that is not a
 * chunk, a broken connection and an end without `[DONE]` are all thrown as ApiErrors, so a
 * failed stream never looks finished. The abort of `signal` is rethrown as it is.
 */
export async function* chatChunks(body: Readable, opts: { provider: string; timeoutMs: number; signal: AbortSignal }): AsyncGenerator<ChatChunk> {
  let done = false;
  try {
    for await (const data of sseData(body)) {
      // Read on to the end after [DONE], so the connection goes back to the pool.
      if (done) continue;
      if (data === '[DONE]') {
        done = true;
        continue;
      }
      let frame: { choices?: unknown; error?: { message?: unknown } | string };
      try {
        frame = JSON.parse(data);
      } catch {
        throw new ApiError('upstream_error', `${opts.provider} sent a stream frame that is not JSON: ${data.slice(0, 200)}`);
      }
      if (frame.error !== undefined) {
        const message = typeof frame.error === 'string' ? frame.error : typeof frame.error?.message === 'string' ? frame.error.message : JSON.stringify(frame.error);
        throw new ApiError('upstream_error', `${opts.provider} failed in the middle of the stream: ${message}`);
      }
      if (!Array.isArray(frame.choices)) throw new ApiError('upstream_error', `${opts.provider} sent a stream frame that is not a chat chunk: ${data.slice(0, 200)}`);
      yield frame as ChatChunk;
    }
  } catch (err) {
    opts.signal.throwIfAborted();
    if (err instanceof ApiError) throw err;
    throw midStreamError(opts.provider, err as Error, opts.timeoutMs);
  } finally {
    // The caller stopped early (client gone, error): drop the upstream response.
    if (!body.readableEnded) body.destroy();
  }
  if (!done) throw new ApiError('upstream_error', `${opts.provider} ended the stream without [DONE]`);
}
