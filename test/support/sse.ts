import assert from 'node:assert/strict';
import { createParser } from 'eventsource-parser';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/** The `data` of each event of a server-sent-events response, as it arrives. */
export async function* sseData(res: Response): AsyncGenerator<string> {
  const queue: string[] = [];
  const parser = createParser({ onEvent: (event) => void queue.push(event.data) });
  const decoder = new TextDecoder();
  for await (const bytes of res.body!) {
    parser.feed(decoder.decode(bytes as Uint8Array, { stream: true }));
    while (queue.length > 0) yield queue.shift()!;
  }
}

/** The events of a chat completion stream: its chunks, and whether it ended with [DONE] (else its last event is the error). */
export async function chatStream(res: Response): Promise<{ chunks: Json[]; done: boolean; error?: Json }> {
  assert.equal(res.status, 200, `the stream answered ${res.status}`);
  const events: string[] = [];
  for await (const data of sseData(res)) events.push(data);
  const done = events.at(-1) === '[DONE]';
  const parsed = events.filter((e) => e !== '[DONE]').map((e) => JSON.parse(e));
  return done ? { chunks: parsed, done } : { chunks: parsed.slice(0, -1), done, error: parsed.at(-1) };
}

/** The text of a chat completion stream's chunks. */
export const contentOf = (chunks: Json[]): string => chunks.map((c) => c.choices?.[0]?.delta?.content ?? '').join('');

/**
 * A whole agent stream: its JSON events, checked to end with exactly one `[DONE]`, after a 200
 * answer of type text/event-stream.
 */
export async function agentEvents(res: Response): Promise<Json[]> {
  assert.equal(res.status, 200, `the stream answered ${res.status}`);
  assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
  const data: string[] = [];
  for await (const each of sseData(res)) data.push(each);
  assert.equal(data[data.length - 1], '[DONE]', 'the stream ends with [DONE]');
  assert.equal(data.filter((d) => d === '[DONE]').length, 1, '[DONE] comes once');
  return data.slice(0, -1).map((d) => JSON.parse(d));
}

/** The run items of base agent mode, in order. */
export function runItems(events: Json[]): Json[] {
  return events.filter((e) => e.type === 'run_item_stream_event').map((e) => e.item);
}

/** One event of a task event stream as it arrived: `id:`, `event:`, parsed `data:`, arrival time. */
export interface StreamedTaskEvent {
  id: number;
  event: string;
  data: Json;
  at: number;
}

/**
 * Reads a task event stream (GET /v1/tasks/:taskId/events) until it ends or `stop` says so:
 * its events and its comment lines, as they arrived.
 */
export async function readTaskEvents(res: Response, stop: (events: StreamedTaskEvent[], comments: string[]) => boolean = () => false): Promise<{ events: StreamedTaskEvent[]; comments: string[] }> {
  assert.equal(res.status, 200, `the stream answered ${res.status}`);
  assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
  const events: StreamedTaskEvent[] = [];
  const comments: string[] = [];
  const parser = createParser({
    onEvent: (e) => void events.push({ id: Number(e.id), event: e.event ?? 'message', data: JSON.parse(e.data), at: Date.now() }),
    onComment: (c) => void comments.push(c.trim()),
  });
  const decoder = new TextDecoder();
  const reader = res.body!.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      parser.feed(decoder.decode(value, { stream: true }));
      if (stop(events, comments)) break;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return { events, comments };
}
