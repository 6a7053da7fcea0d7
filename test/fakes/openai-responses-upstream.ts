import http, { type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/** A request as the fake received it: the body parsed, and its bytes. */
export interface RecordedResponsesRequest {
  path: string;
  headers: IncomingHttpHeaders;
  body: Json;
  raw: string;
}

export interface FakeResponsesUpstream {
  /** Base URL to configure, ending in /v1. */
  url: string;
  requests: RecordedResponsesRequest[];
  /** What the fake sent for each request: the JSON text, or the whole event stream. */
  sent: string[];
  /** The error status (OpenAI's error body) the next requests get, one each. */
  failNext(...statuses: number[]): void;
  /** The next streamed answer sends this many events, then the connection breaks. */
  cutNextStream(afterEvents: number): void;
  close(): Promise<void>;
}

/** The usage the fake reports: input words (4 of them read from the cache), output words. */
function usageOf(inputWords: number, outputWords: number): Json {
  return { input_tokens: inputWords, input_tokens_details: { cached_tokens: Math.min(4, inputWords) }, output_tokens: outputWords, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: inputWords + outputWords };
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((p: { text?: string }) => p.text ?? '').join(' ');
}

const words = (text: string) => text.split(/\s+/).filter(Boolean).length;

/** JSON with a space after each colon, as no serialiser of the gateway writes it: text relayed unchanged keeps it. */
function spaced(value: unknown): string {
  return JSON.stringify(value, null, 1).replace(/\n\s*/g, '');
}

/**
 * The items the fake answers, like a model that runs shell commands: after a tool's output it
 * reports the output's last line; when the last user message asks to run `…` (in backquotes) and
 * the request has an `exec_command` or `shell` function, it reasons (an encrypted reasoning item)
 * and calls that function; otherwise it greets, quoting the user.
 */
function answerItems(body: Json, n: number): Json[] {
  const input: Json[] = typeof body.input === 'string' ? [{ type: 'message', role: 'user', content: body.input }] : body.input;
  const last = input[input.length - 1];
  if (last?.type === 'function_call_output' || last?.type === 'custom_tool_call_output') {
    const lines = textOf(last.output).split('\n').map((l) => l.trim()).filter(Boolean);
    return [message(`msg_fake${n}`, `Tool output: ${lines[lines.length - 1] ?? ''}`)];
  }
  const said = textOf([...input].reverse().find((item) => (item.type ?? 'message') === 'message' && item.role === 'user')?.content);
  const command = /run `([^`]+)`/.exec(said)?.[1];
  const tool = (body.tools ?? []).find((t: Json) => t.type === 'function' && (t.name === 'exec_command' || t.name === 'shell'));
  if (command && tool) {
    const args = tool.name === 'exec_command' ? { cmd: command } : { command: ['bash', '-lc', command] };
    return [
      { type: 'reasoning', id: `rs_fake${n}`, summary: [], encrypted_content: `encrypted-by-upstream-${n}` },
      { type: 'function_call', id: `fc_fake${n}`, call_id: `call_fake${n}`, name: tool.name, arguments: JSON.stringify(args), status: 'completed' },
    ];
  }
  return [message(`msg_fake${n}`, `Hello from the Responses upstream: ${said}`)];
}

function message(id: string, text: string): Json {
  return { type: 'message', id, status: 'completed', role: 'assistant', content: [{ type: 'output_text', text, annotations: [] }] };
}

/** The events of a streamed response, OpenAI's order, each with its sequence number. */
function streamEvents(response: Json): Json[] {
  const events: Json[] = [];
  const pending = { ...response, status: 'in_progress', output: [], usage: null };
  events.push({ type: 'response.created', response: pending }, { type: 'response.in_progress', response: pending });
  response.output.forEach((item: Json, index: number) => {
    if (item.type === 'message') {
      const text = item.content[0].text;
      events.push({ type: 'response.output_item.added', output_index: index, item: { ...item, status: 'in_progress', content: [] } });
      events.push({ type: 'response.content_part.added', item_id: item.id, output_index: index, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } });
      for (const piece of text.match(/\s*\S+/g) ?? []) events.push({ type: 'response.output_text.delta', item_id: item.id, output_index: index, content_index: 0, delta: piece, logprobs: [] });
      events.push({ type: 'response.output_text.done', item_id: item.id, output_index: index, content_index: 0, text, logprobs: [] });
      events.push({ type: 'response.content_part.done', item_id: item.id, output_index: index, content_index: 0, part: item.content[0] });
    } else if (item.type === 'function_call') {
      events.push({ type: 'response.output_item.added', output_index: index, item: { ...item, arguments: '', status: 'in_progress' } });
      events.push({ type: 'response.function_call_arguments.delta', item_id: item.id, output_index: index, delta: item.arguments });
      events.push({ type: 'response.function_call_arguments.done', item_id: item.id, output_index: index, arguments: item.arguments });
    } else {
      events.push({ type: 'response.output_item.added', output_index: index, item });
    }
    events.push({ type: 'response.output_item.done', output_index: index, item });
  });
  events.push({ type: 'response.completed', response });
  return events.map((event, i) => ({ ...event, sequence_number: i }));
}

/**
 * A fake of OpenAI's Responses API (POST /v1/responses, streamed and not) on 127.0.0.1:0. It
 * records each request with its bytes and what it sent back; its JSON has a space after each
 * colon and an `x_upstream` field of its own, so a relay that re-serialised it would show.
 */
export async function startFakeResponsesUpstream(): Promise<FakeResponsesUpstream> {
  const requests: RecordedResponsesRequest[] = [];
  const sent: string[] = [];
  const failures: number[] = [];
  let cutAfter: number | undefined;
  let served = 0;
  const server = http.createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (raw += d));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/responses') {
        res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `no route ${req.url}`, type: 'invalid_request_error', param: null, code: null } }));
        return;
      }
      const body = JSON.parse(raw);
      requests.push({ path: req.url, headers: req.headers, body, raw });
      const status = failures.shift();
      if (status) {
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `fake failure ${status}`, type: 'server_error', param: null, code: null } }));
        return;
      }
      const n = ++served;
      const output = answerItems(body, n);
      const inputWords = words(JSON.stringify(body.input));
      const outputWords = output.reduce((sum, item) => sum + words(item.type === 'message' ? item.content[0].text : item.arguments ?? ''), 0);
      const response = {
        id: `resp_fake${n}`, object: 'response', created_at: 1_700_000_000 + n, status: 'completed', error: null, incomplete_details: null,
        model: `${body.model}-2026-01-01`, output, parallel_tool_calls: true, store: body.store ?? true, tools: body.tools ?? [], usage: usageOf(inputWords, outputWords), x_upstream: { kept: true },
      };
      if (body.stream === true) {
        const cut = cutAfter;
        cutAfter = undefined;
        const text = streamEvents(response).slice(0, cut).map((event) => `event: ${event.type}\ndata: ${spaced(event)}\n\n`).join('');
        sent.push(text);
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        if (cut === undefined) res.end(text);
        else res.write(text, () => res.destroy());
        return;
      }
      const text = spaced(response);
      sent.push(text);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    requests,
    sent,
    failNext: (...statuses) => void failures.push(...statuses),
    cutNextStream: (afterEvents) => void (cutAfter = afterEvents),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
