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
function midStreamError(provider: string, err: Error, timeoutMs: number): ApiError {
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


/** What the gateway knows of a chunk it has kept as the upstream's frame. */
interface FrameState {
  data: string;
  /** The frame parsed, once something read the chunk's content. */
  parsed?: ChatChunk;
  /** The model name given to a chunk not parsed. */
  model?: string;
}

const frames = new WeakMap<object, FrameState>();
const MODEL_FIELD = /"model"\s*:\s*"((?:[^"\\]|\\.)*)"/g;
const NULL_USAGE = /"usage"\s*:\s*null/;

function parsedFrame(state: FrameState): ChatChunk {
  if (!state.parsed) {
    state.parsed = JSON.parse(state.data) as ChatChunk;
    if (state.model !== undefined) state.parsed.model = state.model;
  }
  return state.parsed;
}

/** The chunk's usage read from the frame's text when that tells for sure, else undefined. */
function usageWithoutParsing(data: string): { known: true; usage: undefined | null } | { known: false } {
  const first = data.indexOf('"usage"');
  if (first < 0) return { known: true, usage: undefined };
  if (data.indexOf('"usage"', first + 1) < 0 && NULL_USAGE.test(data)) return { known: true, usage: null };
  return { known: false };
}

const frameHandler: ProxyHandler<FrameState> = {
  get(state, key) {
    // JSON has no symbol keys; `then` is looked up by every await and yield of the chunk.
    if (typeof key === 'symbol' || (key === 'then' && !state.data.includes('"then"'))) return undefined;
    if (key === 'model' && !state.parsed && state.model !== undefined) return state.model;
    if (key === 'usage' && !state.parsed) {
      const read = usageWithoutParsing(state.data);
      if (read.known) return read.usage;
    }
    return Reflect.get(parsedFrame(state), key);
  },
  set(state, key, value) {
    if (key === 'model' && !state.parsed) state.model = value as string;
    else Reflect.set(parsedFrame(state), key, value);
    return true;
  },
  has: (state, key) => Reflect.has(parsedFrame(state), key),
  deleteProperty: (state, key) => Reflect.deleteProperty(parsedFrame(state), key),
  ownKeys: (state) => Reflect.ownKeys(parsedFrame(state)),
  getOwnPropertyDescriptor(state, key) {
    const descriptor = Reflect.getOwnPropertyDescriptor(parsedFrame(state), key);
    return descriptor && { ...descriptor, configurable: true };
  },
  defineProperty: (state, key, descriptor) => Reflect.defineProperty(parsedFrame(state), key, descriptor),
};

/**
 * A chat chunk kept as the upstream's frame (already an OpenAI chunk): parsed only when something
 * reads its content, so a relay that renames the model and looks for usage sends the upstream's
 * bytes (see chunkFrame) without parsing or serialising each frame. Its usage is read from the
 * text when the frame has none or `"usage": null`.
 */
export function frameChunk(data: string): ChatChunk {
  const state: FrameState = { data };
  const chunk = new Proxy(state, frameHandler) as unknown as ChatChunk;
  frames.set(chunk, state);
  return chunk;
}

/** The `data` of the event that sends `chunk`: its frame as it came when nothing changed but its model name, else its JSON. */
export function chunkFrame(chunk: ChatChunk): string {
  const state = frames.get(chunk);
  if (!state || state.parsed) return JSON.stringify(chunk);
  if (state.model === undefined) return state.data;
  const fields = [...state.data.matchAll(MODEL_FIELD)];
  // The model named more than once (a provider's own field): only a parse tells which is the chunk's.
  if (fields.length !== 1) return JSON.stringify(parsedFrame(state));
  const [field, current] = fields[0];
  if (current === state.model) return state.data;
  const at = fields[0].index;
  return `${state.data.slice(0, at)}"model":${JSON.stringify(state.model)}${state.data.slice(at + field.length)}`;
}
