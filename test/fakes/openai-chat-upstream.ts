import http, { type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';

/** A request as the fake received it. */
export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

/** How the fake answers one request; requests without a script get a normal answer. */
export type Behaviour =
  /**
   * A normal answer with this text instead of the echo; with `cached`, a prompt that many tokens
   * longer, all read from the prompt cache (`prompt_tokens_details.cached_tokens`, streamed too).
   */
  | { kind: 'reply'; content: string; cached?: number }
  /** A tool call (streamed in pieces when streaming), finish_reason tool_calls. */
  | { kind: 'tool_call'; name: string; arguments: string }
  /** A normal answer reporting the last line of the latest tool message: `Tool output: <line>`. */
  | { kind: 'read_tool_output' }
  /** An error answer before any stream byte, OpenAI's error body unless `body` is given. */
  | { kind: 'status'; status: number; headers?: Record<string, string>; message?: string; body?: string }
  /** Streams `afterChunks` content chunks, then destroys the connection; a whole answer is cut halfway. */
  | { kind: 'reset_mid_stream'; afterChunks: number }
  /** Streams `afterChunks` content chunks, then OpenAI's `{"error": …}` event, then ends. */
  | { kind: 'error_frame'; afterChunks: number; message: string }
  /** Streams `afterChunks` content chunks, then a frame that is not JSON. */
  | { kind: 'bad_frame'; afterChunks: number }
  /** Streams the answer but ends without `[DONE]`. */
  | { kind: 'no_done' }
  /** Streams without a usage chunk even when asked (as some servers do). */
  | { kind: 'no_usage' }
  /** Streams `afterChunks` content chunks (a whole answer: half its body), then waits for `release` before the rest. */
  | { kind: 'hold'; afterChunks: number; release: Promise<void> }
  /** Waits `delayMs` before each chunk (and before a non-streamed answer). */
  | { kind: 'slow'; delayMs: number }
  /** Never answers. */
  | { kind: 'hang' };

export interface FakeChatUpstream {
  /** Base URL to configure, ending in /v1. */
  url: string;
  port: number;
  /** Every request received, in order (unless started with record: false). */
  requests: RecordedRequest[];
  /** Queues behaviours for the next requests, one each. */
  script(...behaviours: Behaviour[]): void;
  /**
   * From now on an unscripted request whose tools include `name` calls it with `args` (JSON text)
   * while its conversation holds no tool message, and answers `Tool said: <the last tool message>`
   * once it does: an agent's turn that runs one tool and then answers.
   */
  toolLoop(name: string, args: string): void;
  /** Resolves when a request's connection closed before its answer was complete (the caller went away). */
  nextAbort(): Promise<RecordedRequest>;
  /** Resolves with the next request the fake receives. */
  nextRequest(): Promise<RecordedRequest>;
  close(): Promise<void>;
}

const CREATED = 1_700_000_000;
const WORD = /\s*\S+/g;

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((p: { type?: string; text?: string }) => (p.type === 'text' ? p.text : `<${p.type}>`)).join(' ');
}

/** Tokens as the fake counts them: whitespace-separated words. */
function tokens(text: string): number {
  return text.split(/\s+/).filter(Boolean).length;
}

/**
 * Closes the response's connection a turn after its last writes: on Node 24.22 (not on 20),
 * ending the socket in the same turn lost the chunks written just before.
 */
async function cutAfterWrites(res: ServerResponse): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve));
  res.socket?.end();
}

/**
 * A faithful OpenAI chat server (POST /v1/chat/completions, streaming and not) on 127.0.0.1:0.
 * It answers `Echo: <last user text>`, names the model `<requested>-2025-01-01` as OpenAI names
 * snapshots, sends the usage chunk only with `stream_options.include_usage`, and plays scripted
 * failures.
 */
export async function startFakeChatUpstream(opts: { record?: boolean; port?: number } = {}): Promise<FakeChatUpstream> {
  const requests: RecordedRequest[] = [];
  const queue: Behaviour[] = [];
  const abortWaiters: ((r: RecordedRequest) => void)[] = [];
  const aborted: RecordedRequest[] = [];
  const requestWaiters: ((r: RecordedRequest) => void)[] = [];
  const record = opts.record ?? true;
  let served = 0;
  /** Answers the fake itself broke off, which are no caller's abort. */
  const cutByFake = new WeakSet<ServerResponse>();

  const server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (d: Buffer) => parts.push(d));
    req.on('end', () => {
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(Buffer.concat(parts).toString('utf8'));
      } catch {
        res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'invalid JSON body', type: 'invalid_request_error', param: null, code: null } }));
        return;
      }
      const recorded: RecordedRequest = { method: req.method!, path: req.url!, headers: req.headers, body };
      if (record) requests.push(recorded);
      for (const waiter of requestWaiters.splice(0)) waiter(recorded);
      res.on('close', () => {
        if (res.writableFinished || cutByFake.has(res)) return;
        aborted.push(recorded);
        abortWaiters.shift()?.(aborted.shift()!);
      });
      if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
        res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `no route ${req.url}`, type: 'invalid_request_error', param: null, code: 'not_found' } }));
        return;
      }
      void answer(body, queue.shift() ?? looped(body), res).catch(() => res.destroy());
    });
  });

  let loop: { name: string; args: string } | undefined;
  /** What the tool loop does with an unscripted request, if it applies. */
  function looped(body: Record<string, unknown>): Behaviour | undefined {
    const tools = (body.tools as { function?: { name?: string } }[] | undefined) ?? [];
    if (!loop || !tools.some((tool) => tool.function?.name === loop!.name)) return undefined;
    const results = ((body.messages as { role: string; content: unknown }[]) ?? []).filter((m) => m.role === 'tool');
    if (results.length === 0) return { kind: 'tool_call', name: loop.name, arguments: loop.args };
    return { kind: 'reply', content: `Tool said: ${textOf(results.at(-1)!.content)}` };
  }

  async function answer(body: Record<string, unknown>, behaviour: Behaviour | undefined, res: ServerResponse): Promise<void> {
    const id = `chatcmpl-fake${++served}`;
    const model = `${String(body.model)}-2025-01-01`;
    const messages = (body.messages as { role: string; content: unknown }[]) ?? [];
    const lastUser = [...messages].reverse().find((m) => m.role === 'user');
    const lastTool = [...messages].reverse().find((m) => m.role === 'tool');
    const toolLines = textOf(lastTool?.content).split('\n').map((line) => line.trim()).filter(Boolean);
    const content = behaviour?.kind === 'reply' ? behaviour.content : behaviour?.kind === 'read_tool_output' ? `Tool output: ${toolLines[toolLines.length - 1] ?? ''}` : `Echo: ${textOf(lastUser?.content)}`;
    const cached = behaviour?.kind === 'reply' ? behaviour.cached : undefined;
    const promptTokens = messages.reduce((sum, m) => sum + tokens(textOf(m.content)), 0) + (cached ?? 0);
    const toolCall = behaviour?.kind === 'tool_call' ? { id: 'call_fake1', type: 'function', function: { name: behaviour.name, arguments: behaviour.arguments } } : undefined;
    const completionTokens = toolCall ? tokens(`${toolCall.function.name} ${toolCall.function.arguments}`) : tokens(content);
    const usage = { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens };
    const slowMs = behaviour?.kind === 'slow' ? behaviour.delayMs : 0;

    if (behaviour?.kind === 'hang') return;
    if (behaviour?.kind === 'status') {
      res.writeHead(behaviour.status, { 'content-type': 'application/json', ...behaviour.headers });
      res.end(behaviour.body ?? JSON.stringify({ error: { message: behaviour.message ?? `fake failure ${behaviour.status}`, type: 'server_error', param: null, code: null } }));
      return;
    }
    if (body.stream !== true) {
      if (slowMs) await delay(slowMs);
      const completion = JSON.stringify({
        id, object: 'chat.completion', created: CREATED, model, system_fingerprint: 'fp_fake',
        choices: [{ index: 0, message: { role: 'assistant', content: toolCall ? null : content, ...(toolCall ? { tool_calls: [toolCall] } : {}), refusal: null, annotations: [] }, logprobs: null, finish_reason: toolCall ? 'tool_calls' : 'stop' }],
        usage: { ...usage, prompt_tokens_details: { cached_tokens: cached ?? 0 }, completion_tokens_details: { reasoning_tokens: 0 } },
        service_tier: 'default',
      });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(completion) });
      if (behaviour?.kind === 'hold') {
        // Half the answer goes out, then nothing until the release.
        res.write(completion.slice(0, completion.length >> 1));
        await behaviour.release;
        res.end(completion.slice(completion.length >> 1));
        return;
      }
      if (behaviour?.kind !== 'reset_mid_stream') {
        res.end(completion);
        return;
      }
      // Half the answer goes out, then the connection closes.
      cutByFake.add(res);
      res.write(completion.slice(0, completion.length >> 1));
      await cutAfterWrites(res);
      return;
    }

    const includeUsage = (body.stream_options as { include_usage?: boolean } | undefined)?.include_usage === true && behaviour?.kind !== 'no_usage';
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    // The status line goes out at once, before the first chunk, as OpenAI's does.
    res.flushHeaders();
    const send = async (data: string) => {
      if (slowMs) await delay(slowMs);
      res.write(`data: ${data}\n\n`);
    };
    const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) => JSON.stringify({
      id, object: 'chat.completion.chunk', created: CREATED, model, system_fingerprint: 'fp_fake',
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }], ...(includeUsage ? { usage: null } : {}),
    });
    const pieces = toolCall ? [] : content.match(WORD) ?? [];
    const stopAfter = behaviour && 'afterChunks' in behaviour ? behaviour.afterChunks : Infinity;

    await send(chunk(toolCall ? { role: 'assistant', content: null } : { role: 'assistant', content: '', refusal: null }));
    if (toolCall) {
      await send(chunk({ tool_calls: [{ index: 0, id: toolCall.id, type: 'function', function: { name: toolCall.function.name, arguments: '' } }] }));
      for (let at = 0; at < toolCall.function.arguments.length; at += 8) {
        await send(chunk({ tool_calls: [{ index: 0, function: { arguments: toolCall.function.arguments.slice(at, at + 8) } }] }));
      }
    }
    for (const [i, piece] of pieces.entries()) {
      if (i === stopAfter && behaviour) {
        switch (behaviour.kind) {
          case 'reset_mid_stream':
            // The chunks written so far go out first, then the connection closes mid-answer.
            cutByFake.add(res);
            await cutAfterWrites(res);
            return;
          case 'error_frame':
            await send(JSON.stringify({ error: { message: behaviour.message, type: 'server_error', param: null, code: null } }));
            res.end();
            return;
          case 'bad_frame':
            await send('this is not json');
            res.end();
            return;
          case 'hold':
            await behaviour.release;
            break;
        }
      }
      await send(chunk({ content: piece }));
    }
    await send(chunk({}, toolCall ? 'tool_calls' : 'stop'));
    if (includeUsage) {
      const details = cached !== undefined ? { prompt_tokens_details: { cached_tokens: cached, audio_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0 } } : {};
      await send(JSON.stringify({ id, object: 'chat.completion.chunk', created: CREATED, model, system_fingerprint: 'fp_fake', choices: [], usage: { ...usage, ...details } }));
    }
    if (behaviour?.kind !== 'no_done') res.write('data: [DONE]\n\n');
    res.end();
  }

  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    port,
    requests,
    script: (...behaviours) => void queue.push(...behaviours),
    toolLoop: (name, args) => void (loop = { name, args }),
    nextAbort: () => (aborted.length > 0 ? Promise.resolve(aborted.shift()!) : new Promise((resolve) => abortWaiters.push(resolve))),
    nextRequest: () => new Promise((resolve) => requestWaiters.push(resolve)),
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
