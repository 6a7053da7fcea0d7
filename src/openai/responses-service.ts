/**
 * OpenAI's Responses API over the chat service. A model whose upstream serves the Responses API
 * gets the request as it came, and its answer or events go back unchanged; for any other, the
 * input items and instructions become chat messages after the conversation of
 * previous_response_id, the answer becomes the response object (or its events), and a stored
 * response keeps its conversation for the next turn.
 */
import type { Principal } from '../auth/tokens.ts';
import type { ChatService } from '../chat/chat-service.ts';
import type { McpService } from '../mcp/mcp-service.ts';
import { McpToolset } from '../mcp/request-tools.ts';
import type { ChatInputMessage } from '../core/chat-input.ts';
import { ApiError } from '../core/errors.ts';
import type { ChatUsage, ServedRoute, UpstreamResponsesEvent } from '../providers/spec.ts';
import type { OpenAiResponsesRepo } from '../storage/repos/openai-responses-repo.ts';
import { chatParams, inputMessages } from './responses-input.ts';
import { completionOutput, finishResponse, itemId, replyMessage, ResponseEventStream, startResponse, wholeItemEvents, type ResponseEvent } from './responses-output.ts';
import type { OutputItem, ResponseObject, ResponsesRequest } from './responses-schemas.ts';

export type ResponsesOutcome = (
  | { kind: 'response'; response: ResponseObject }
  /** The events in order; the iteration throws when the model fails midway, and `failed` is then the last event to send. */
  | { kind: 'stream'; events: AsyncIterable<ResponseEvent>; failed(code: string, message: string): ResponseEvent }
  /** The upstream's response object, as its JSON text came. */
  | { kind: 'upstream-response'; text: string; usage: ChatUsage | undefined }
  /** The upstream's events as they came; the iteration throws when the upstream fails midway. */
  | { kind: 'upstream-stream'; events: AsyncIterable<UpstreamResponsesEvent> }
) & {
  /** The model, provider and channel that took the call. */
  route?: ServedRoute;
  /** What the translation for a chat model dropped (tools, items), one line each. */
  warnings: string[];
};

export class OpenAiResponsesService {
  private readonly deps: {
    chat: ChatService;
    store: OpenAiResponsesRepo;
    /** Runs the request's `mcp` tools. */
    mcp: McpService;
    /** Model calls of a run with MCP tools (GENGATE_CONFIG agent.max_steps); the last one is offered no tools. */
    maxSteps: number;
  };

  constructor(deps: {
    chat: ChatService;
    store: OpenAiResponsesRepo;
    /** Runs the request's `mcp` tools. */
    mcp: McpService;
    /** Model calls of a run with MCP tools (GENGATE_CONFIG agent.max_steps); the last one is offered no tools. */
    maxSteps: number;
  }) {
    this.deps = deps;
  }

  /** Runs one request; `metered` is told a chat model's usage once it is known (before the last event). */
  async create(body: ResponsesRequest, principal: Principal, signal: AbortSignal, metered: (usage: ChatUsage) => void): Promise<ResponsesOutcome> {
    const ownerId = principal.userId;
    // Refused before anything runs (400 naming tools[i]…).
    const mcp = McpToolset.named(body.tools) ? await McpToolset.open(this.deps.mcp, principal, body.tools!) : undefined;
    if (mcp) return this.withMcpTools(body, mcp, { ownerId, signal, metered });
    const warnings: string[] = [];
    const { params, declared } = chatParams(body, warnings);
    const stream = body.stream === true;
    let history: ChatInputMessage[] = [];
    let added: ChatInputMessage[] = [];
    // Read only for a chat model: an upstream that serves the Responses API keeps its own conversations.
    const messages = async (): Promise<ChatInputMessage[]> => {
      history = body.previous_response_id ? await this.history(ownerId, body.previous_response_id) : [];
      added = inputMessages(body.input, warnings);
      return [...(body.instructions ? [{ role: 'system' as const, content: body.instructions }] : []), ...history, ...added];
    };
    const outcome = await this.deps.chat.respond({ model: body.model, body, stream, params, messages }, ownerId, signal);
    const route = outcome.route ? { route: outcome.route } : {};

    if (outcome.kind === 'upstream') {
      const { answer } = outcome;
      if (answer.kind === 'stream') return { kind: 'upstream-stream', events: answer.events, warnings: [], ...route };
      return { kind: 'upstream-response', text: answer.text, usage: answer.usage, warnings: [], ...route };
    }

    const started = startResponse(itemId('resp'), body, body.model);
    const keep = async (response: ResponseObject) => {
      if (body.store !== false) await this.deps.store.insert(ownerId, response.id, { messages: [...history, ...added, replyMessage(response.output)], response: response as unknown as Record<string, unknown> });
    };
    if (outcome.kind === 'completion') {
      const { completion } = outcome;
      if (completion.usage) metered(completion.usage);
      const response = finishResponse(started, completionOutput(completion, declared), completion.choices[0]?.finish_reason ?? null, completion.usage);
      await keep(response);
      return { kind: 'response', response, warnings, ...route };
    }
    const { chunks } = outcome;
    const events = new ResponseEventStream(started, declared);
    async function* all(): AsyncGenerator<ResponseEvent> {
      yield* events.start();
      for await (const chunk of chunks) {
        if (chunk.usage) metered(chunk.usage);
        yield* events.chunk(chunk);
      }
      const end = events.end();
      await keep(end.response);
      yield* end.events;
    }
    return { kind: 'stream', events: all(), failed: (code, message) => events.fail(code, message), warnings, ...route };
  }

  /**
   * A request with MCP tools: the gateway runs the model's calls of them in a loop, each model
   * call answered whole, and returns the `mcp_list_tools` and `mcp_call` items with the others
   * (streamed as output_item.added / .done). A call of another tool ends the loop, for the client.
   */
  private async withMcpTools(body: ResponsesRequest, mcp: McpToolset, turn: { ownerId: string; signal: AbortSignal; metered: (usage: ChatUsage) => void }): Promise<ResponsesOutcome> {
    const { chat, store, maxSteps } = this.deps;
    const warnings: string[] = [];
    const { params, declared } = chatParams({ ...body, tools: body.tools!.filter((t) => t.type !== 'mcp') }, warnings);
    const history = body.previous_response_id ? await this.history(turn.ownerId, body.previous_response_id) : [];
    const added = inputMessages(body.input, warnings);
    const conversation: ChatInputMessage[] = [...(body.instructions ? [{ role: 'system' as const, content: body.instructions }] : []), ...history, ...added];
    const tools = [...(params.tools ?? []), ...mcp.definitions];
    const started = startResponse(itemId('resp'), body, body.model);
    const output: unknown[] = [];
    const usage: ChatUsage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
    let finish: Parameters<typeof finishResponse>[2] = null;
    const item = (done: unknown): ResponseEvent[] => {
      output.push(done);
      return wholeItemEvents(done, output.length - 1);
    };
    async function* run(): AsyncGenerator<ResponseEvent> {
      try {
        for (const listed of mcp.listItems) yield* item(listed);
        for (let step = 1; ; step++) {
          const offered = step < maxSteps ? { tools } : {};
          const outcome = await chat.start({ model: body.model, messages: conversation, stream: false, ...params, ...offered }, turn.ownerId, turn.signal);
          if (outcome.kind !== 'completion') throw new Error('a completion was asked for');
          const { completion } = outcome;
          if (completion.usage) {
            turn.metered(completion.usage);
            for (const key of ['prompt_tokens', 'completion_tokens', 'total_tokens'] as const) usage[key] += completion.usage[key];
          }
          finish = completion.choices[0]?.finish_reason ?? null;
          const message = completion.choices[0]?.message;
          const calls = message?.tool_calls ?? [];
          if (calls.length === 0 || !calls.every((c) => mcp.has(c.function.name))) {
            for (const each of completionOutput(completion, declared)) yield* item(each);
            break;
          }
          conversation.push({ role: 'assistant', content: message?.content ?? null, tool_calls: calls });
          for (const call of calls) {
            const pending = mcp.pending(call.function.name, call.function.arguments);
            yield { type: 'response.output_item.added', output_index: output.length, item: pending };
            const done = await mcp.call(pending, call.function.name, turn.signal);
            output.push(done);
            yield { type: 'response.output_item.done', output_index: output.length - 1, item: done };
            conversation.push({ role: 'tool', tool_call_id: call.id, content: done.error ?? done.output ?? '' });
          }
        }
      } finally {
        await mcp.close();
      }
      const response = finishResponse(started, output as OutputItem[], finish, usage);
      if (body.store !== false) {
        const final = (output as OutputItem[]).filter((o) => o.type === 'message' || o.type === 'function_call');
        await store.insert(turn.ownerId, response.id, { messages: [...history, ...added, replyMessage(final)], response: response as unknown as Record<string, unknown> });
      }
      yield { type: response.status === 'incomplete' ? 'response.incomplete' : 'response.completed', response };
    }
    if (body.stream === true) {
      async function* events(): AsyncGenerator<ResponseEvent> {
        yield { type: 'response.created', response: started };
        yield { type: 'response.in_progress', response: started };
        yield* run();
      }
      return { kind: 'stream', events: events(), failed: (code, message) => ({ type: 'response.failed', response: { ...started, status: 'failed', error: { code, message }, output } }), warnings };
    }
    let last: ResponseEvent | undefined;
    for await (const event of run()) last = event;
    return { kind: 'response', response: last!.response as ResponseObject, warnings };
  }

  /** The conversation a stored response of the caller ends. */
  private async history(ownerId: string, id: string): Promise<ChatInputMessage[]> {
    const stored = await this.deps.store.find(ownerId, id);
    if (!stored) throw new ApiError('previous_response_not_found', `Previous response with id '${id}' not found.`, 'previous_response_id');
    return stored.messages;
  }

  /** GET /responses/{id}: the caller's stored response. */
  async find(ownerId: string, id: string): Promise<ResponseObject> {
    const stored = await this.deps.store.find(ownerId, id);
    if (!stored) throw new ApiError('previous_response_not_found', `Response with id '${id}' not found.`, 'response_id');
    return stored.response as unknown as ResponseObject;
  }
}
