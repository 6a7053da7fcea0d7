import type http from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { RecordingUpstream, sendJson, type RecordedRequest, type Reply } from './recording-upstream.ts';

/** How the fake answers one request; requests without a script answer `Echo: <last user text>`. */
export type AnthropicBehaviour =
  /** This text instead of the echo. */
  | { kind: 'text'; text: string; stopReason?: string; cache?: { read: number; write: number } }
  /**
   * A tool call (after `text` when given), stop_reason tool_use. With `thinking`, a signed thinking
   * block comes first, and a later request must send it back unchanged before that tool_use.
   */
  | { kind: 'tool_use'; name: string; input: Record<string, unknown>; text?: string; thinking?: string }
  /** Streams `afterDeltas` text deltas, then an `error` event (e.g. overloaded_error), then ends. */
  | { kind: 'stream_error'; afterDeltas: number; type: string; message: string }
  /** Streams the answer but ends without message_stop. */
  | { kind: 'no_stop' }
  /** Never answers. */
  | { kind: 'hang' };

/** An Anthropic error answer (`{type: "error", error: {type, message}, request_id}`), for `inject`. */
export function anthropicError(status: number, type: string, message: string, headers: Record<string, string> = {}): Reply {
  return { status, body: { type: 'error', error: { type, message }, request_id: 'req_fakeinjected' }, headers: { 'request-id': 'req_fakeinjected', ...headers } };
}

const WORD = /\s*\S+/g;
const words = (text: string) => text.split(/\s+/).filter(Boolean).length;

type Block = { type: string; text?: string; source?: unknown; content?: unknown; id?: string; tool_use_id?: string };
type Message = { role: string; content: string | Block[] };

function textOf(content: string | Block[] | undefined): string {
  if (typeof content === 'string') return content;
  return (content ?? []).map((b) => (b.type === 'text' ? b.text : b.type === 'tool_result' ? `<tool_result ${typeof b.content === 'string' ? b.content : JSON.stringify(b.content)}>` : `<${b.type}>`)).join(' ');
}

/**
 * A faithful Anthropic Messages API (POST /v1/messages) on 127.0.0.1:0: it checks the headers
 * and the body as the API does (x-api-key, anthropic-version, max_tokens, alternating roles that
 * start with a user turn, every tool_use answered by a tool_result in the next user turn), and
 * answers whole or as the documented event sequence (message_start, content blocks with a ping
 * after the first start, message_delta, message_stop; no [DONE]).
 */
export class AnthropicUpstream extends RecordingUpstream {
  private readonly queue: AnthropicBehaviour[] = [];
  private served = 0;
  /** The thinking block given with each tool_use id, which must come back with it. */
  private readonly thinkingOf = new Map<string, { type: 'thinking'; thinking: string; signature: string }>();

  private readonly apiKey: string;

  constructor(apiKey: string) {
    super();
    this.apiKey = apiKey;
  }

  /** The tool an unscripted request offering it calls until a tool_result is in its conversation (toolLoop). */
  private loop: { name: string; input: Record<string, unknown> } | undefined;

  /** Queues behaviours for the next requests, one each. */
  script(...behaviours: AnthropicBehaviour[]): void {
    this.queue.push(...behaviours);
  }

  /**
   * From now on an unscripted request whose tools include `name` calls it with `input` while its
   * conversation holds no tool_result, and answers `Tool said: <the last result>` once it does:
   * an agent's turn that runs one tool and then answers.
   */
  toolLoop(name: string, input: Record<string, unknown>): void {
    this.loop = { name, input };
  }

  /** The JSON bodies of the requests to /v1/messages, in order. */
  bodies(): Record<string, unknown>[] {
    return this.requestsTo('/v1/messages', 'POST').map((r) => r.json as Record<string, unknown>);
  }

  /** The JSON bodies of the requests to /v1/messages/count_tokens, in order. */
  countBodies(): Record<string, unknown>[] {
    return this.requestsTo('/v1/messages/count_tokens', 'POST').map((r) => r.json as Record<string, unknown>);
  }

  protected async handle(req: RecordedRequest, res: http.ServerResponse): Promise<void> {
    const counting = req.path === '/v1/messages/count_tokens';
    if (req.method !== 'POST' || (req.path !== '/v1/messages' && !counting)) return this.error(res, 404, 'not_found_error', `no route ${req.method} ${req.path}`);
    if (req.headers['x-api-key'] !== this.apiKey) return this.error(res, 401, 'authentication_error', 'invalid x-api-key');
    if (req.headers['anthropic-version'] !== '2023-06-01') return this.error(res, 400, 'invalid_request_error', 'anthropic-version: header is required');
    const body = req.json as { model?: string; max_tokens?: number; messages?: Message[]; stream?: boolean; system?: unknown; tools?: { name: string }[] } | undefined;
    if (counting) return this.count(body, res);
    const problem = body ? this.check(body) : 'the body is not JSON';
    if (problem) return this.error(res, 400, 'invalid_request_error', problem);
    const behaviour = this.queue.shift() ?? this.looped(body!);
    if (behaviour?.kind === 'hang') return;
    await this.answer(body!, behaviour, res);
  }

  /** What the tool loop does with an unscripted request, if it applies. */
  private looped(body: { messages?: Message[]; tools?: { name: string }[] }): AnthropicBehaviour | undefined {
    const loop = this.loop;
    if (!loop || !body.tools?.some((tool) => tool.name === loop.name)) return undefined;
    const results = body.messages!.flatMap((m) => (Array.isArray(m.content) ? m.content.filter((b) => b.type === 'tool_result') : []));
    if (results.length === 0) return { kind: 'tool_use', name: loop.name, input: loop.input };
    const last = results.at(-1)!.content;
    return { kind: 'text', text: `Tool said: ${typeof last === 'string' ? last : textOf(last as Block[])}` };
  }

  /** `POST /v1/messages/count_tokens`: the words of the system prompt, the messages and the tools. */
  private count(body: { model?: string; messages?: Message[]; system?: unknown; tools?: unknown } | undefined, res: http.ServerResponse): void {
    if (typeof body?.model !== 'string') return this.error(res, 400, 'invalid_request_error', 'model: Field required');
    if (!Array.isArray(body.messages)) return this.error(res, 400, 'invalid_request_error', 'messages: Field required');
    const system = typeof body.system === 'string' ? body.system : textOf(body.system as Block[] | undefined);
    const tokens = words(system) + body.messages.reduce((sum, m) => sum + words(textOf(m.content)), 0) + (body.tools ? words(JSON.stringify(body.tools)) : 0);
    sendJson(res, 200, { input_tokens: tokens }, { 'request-id': 'req_fakecount' });
  }

  private error(res: http.ServerResponse, status: number, type: string, message: string): void {
    sendJson(res, status, { type: 'error', error: { type, message }, request_id: 'req_fake' }, { 'request-id': 'req_fake' });
  }

  /** What the real API refuses with 400 invalid_request_error. */
  private check(body: { model?: string; max_tokens?: number; messages?: Message[] }): string | undefined {
    if (typeof body.model !== 'string') return 'model: Field required';
    if (!Number.isInteger(body.max_tokens)) return 'max_tokens: Field required';
    const messages = body.messages;
    if (!Array.isArray(messages) || messages.length === 0) return 'messages: at least one message is required';
    if (messages.find((m) => m.role !== 'system')?.role !== 'user') return 'messages: first message must use the "user" role';
    for (let i = 0; i < messages.length; i++) {
      const { role, content } = messages[i]!;
      // A system turn among the others is taken (Claude Code sends one).
      if (role !== 'user' && role !== 'assistant' && role !== 'system') return `messages.${i}.role: Input should be 'user' or 'assistant'`;
      if (Array.isArray(content) && content.some((b) => b.type === 'text' && !b.text)) return `messages.${i}: text content blocks must be non-empty`;
      const uses = Array.isArray(content) ? content.filter((b) => b.type === 'tool_use') : [];
      const thinking = uses.map((u) => this.thinkingOf.get(u.id!)).find(Boolean);
      if (thinking && JSON.stringify((content as Block[])[0]) !== JSON.stringify(thinking)) {
        return `messages.${i}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${(content as Block[])[0]?.type}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block`;
      }
      if (role === 'assistant' && uses.length > 0) {
        const next = messages[i + 1];
        const answered = new Set(Array.isArray(next?.content) ? next.content.filter((b) => b.type === 'tool_result').map((b) => b.tool_use_id) : []);
        const missing = uses.find((u) => !answered.has(u.id));
        if (missing) return `messages.${i + 1}: tool_use ids were found without tool_result blocks immediately after: ${missing.id}`;
      }
    }
    return undefined;
  }

  private async answer(body: { model?: string; messages?: Message[]; stream?: boolean }, behaviour: AnthropicBehaviour | undefined, res: http.ServerResponse): Promise<void> {
    const id = `msg_fake${++this.served}`;
    const model = `${body.model}-20261001`;
    const lastUser = [...body.messages!].reverse().find((m) => m.role === 'user');
    const text = behaviour?.kind === 'text' ? behaviour.text : behaviour?.kind === 'tool_use' ? behaviour.text ?? '' : `Echo: ${textOf(lastUser?.content)}`;
    const tool = behaviour?.kind === 'tool_use' ? { type: 'tool_use', id: `toolu_fake${this.served}`, name: behaviour.name, input: behaviour.input } : undefined;
    const thinking = behaviour?.kind === 'tool_use' && behaviour.thinking ? { type: 'thinking' as const, thinking: behaviour.thinking, signature: `sig_fake${this.served}` } : undefined;
    if (tool && thinking) this.thinkingOf.set(tool.id, thinking);
    const stopReason = tool ? 'tool_use' : behaviour?.kind === 'text' && behaviour.stopReason ? behaviour.stopReason : 'end_turn';
    const cache = behaviour?.kind === 'text' ? behaviour.cache : undefined;
    const inputTokens = body.messages!.reduce((sum, m) => sum + words(textOf(m.content)), 0);
    const outputTokens = Math.max(1, words(text) + (tool ? words(JSON.stringify(tool.input)) : 0));
    const usage = { input_tokens: inputTokens, cache_creation_input_tokens: cache?.write ?? 0, cache_read_input_tokens: cache?.read ?? 0, output_tokens: outputTokens };
    const content = [...(thinking ? [thinking] : []), ...(text ? [{ type: 'text', text }] : []), ...(tool ? [tool] : [])];

    if (body.stream !== true) {
      sendJson(res, 200, { id, type: 'message', role: 'assistant', model, content, stop_reason: stopReason, stop_sequence: null, usage }, { 'request-id': `req_fake${this.served}` });
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'request-id': `req_fake${this.served}` });
    res.flushHeaders();
    const send = async (event: Record<string, unknown>) => {
      res.write(`event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`);
      await delay(1);
    };
    await send({ type: 'message_start', message: { id, type: 'message', role: 'assistant', content: [], model, stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } } });
    let index = 0;
    if (thinking) {
      await send({ type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '', signature: '' } });
      for (const piece of thinking.thinking.match(WORD) ?? []) await send({ type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: piece } });
      await send({ type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: thinking.signature } });
      await send({ type: 'content_block_stop', index });
      index++;
    }
    if (text) {
      await send({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
      await send({ type: 'ping' });
      for (const [i, piece] of (text.match(WORD) ?? []).entries()) {
        if (behaviour?.kind === 'stream_error' && i === behaviour.afterDeltas) {
          await send({ type: 'error', error: { type: behaviour.type, message: behaviour.message } });
          res.end();
          return;
        }
        await send({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: piece } });
      }
      await send({ type: 'content_block_stop', index });
      index++;
    }
    if (tool) {
      await send({ type: 'content_block_start', index, content_block: { type: 'tool_use', id: tool.id, name: tool.name, input: {} } });
      const json = JSON.stringify(tool.input);
      // The first fragment is empty, as the API sends it.
      for (const fragment of ['', ...(json.match(/.{1,6}/gs) ?? [])]) await send({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: fragment } });
      await send({ type: 'content_block_stop', index });
    }
    await send({ type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: outputTokens } });
    if (behaviour?.kind !== 'no_stop') await send({ type: 'message_stop' });
    res.end();
  }
}
