/** Chat answers as OpenAI Responses: the response object, and the stream of its events in OpenAI's order. */
import { randomUUID } from 'node:crypto';
import type { ChatInputMessage } from '../core/chat-input.ts';
import type { ChatChunk, ChatCompletion, ChatFinishReason, ChatToolCall, ChatUsage } from '../providers/spec.ts';
import type { DeclaredTools } from './responses-input.ts';
import type { OutputItem, ResponseObject, ResponsesRequest, ResponseUsage } from './responses-schemas.ts';

/** An id with OpenAI's prefix for its kind (`resp`, `msg`, `fc`). */
export function itemId(prefix: string): string {
  return `${prefix}_${randomUUID().replaceAll('-', '')}`;
}

export function responseUsage(usage: ChatUsage | null | undefined): ResponseUsage | null {
  if (!usage) return null;
  return {
    input_tokens: usage.prompt_tokens,
    input_tokens_details: { cached_tokens: usage.prompt_tokens_details?.cached_tokens ?? 0 },
    output_tokens: usage.completion_tokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: usage.total_tokens,
  };
}

/** The response object as it starts (in_progress, no output) from the request's settings. */
export function startResponse(id: string, body: ResponsesRequest, model: string): ResponseObject {
  return {
    id,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status: 'in_progress',
    error: null,
    incomplete_details: null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    model,
    output: [],
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: body.previous_response_id ?? null,
    reasoning: { effort: body.reasoning?.effort ?? null, summary: body.reasoning?.summary ?? null },
    store: body.store ?? true,
    temperature: body.temperature ?? 1,
    text: { format: body.text?.format ?? { type: 'text' } },
    tool_choice: body.tool_choice ?? 'auto',
    tools: body.tools ?? [],
    top_p: body.top_p ?? 1,
    truncation: 'disabled',
    usage: null,
    user: body.user ?? null,
    metadata: body.metadata ?? {},
  };
}

/** The response ended: `length` is incomplete (max_output_tokens), anything else completed. */
export function finishResponse(response: ResponseObject, output: OutputItem[], finish: ChatFinishReason | null, usage: ChatUsage | null | undefined): ResponseObject {
  const incomplete = finish === 'length';
  return {
    ...response,
    status: incomplete ? 'incomplete' : 'completed',
    incomplete_details: incomplete ? { reason: 'max_output_tokens' } : null,
    output,
    usage: responseUsage(usage),
  };
}

function messageItem(id: string, text: string, status: 'in_progress' | 'completed'): OutputItem {
  return { type: 'message', id, status, role: 'assistant', content: status === 'completed' ? [{ type: 'output_text', text, annotations: [], logprobs: [] }] : [] };
}

/** The text input of a custom tool's call: the `input` argument of the function it was sent as (the arguments as they are when they hold none). */
function customInput(args: string): string {
  try {
    const parsed: unknown = JSON.parse(args);
    const input = parsed && typeof parsed === 'object' ? (parsed as { input?: unknown }).input : undefined;
    return typeof input === 'string' ? input : args;
  } catch {
    return args;
  }
}

/** Whether the caller declared the called tool as a custom tool. */
function isCustom(call: ChatToolCall, declared: DeclaredTools): boolean {
  return declared.get(call.function.name)?.kind === 'custom';
}

/** A tool call as the item the caller declared it as: a custom_tool_call, else a function_call (with its namespace). */
function callItem(id: string, call: ChatToolCall, status: 'in_progress' | 'completed', declared: DeclaredTools): OutputItem {
  const tool = declared.get(call.function.name);
  const namespace = tool?.namespace ? { namespace: tool.namespace } : {};
  const done = status === 'completed';
  if (tool?.kind === 'custom') return { type: 'custom_tool_call', id, call_id: call.id, name: call.function.name, input: done ? customInput(call.function.arguments) : '', status, ...namespace };
  return { type: 'function_call', id, call_id: call.id, name: call.function.name, arguments: done ? call.function.arguments : '', status, ...namespace };
}

/** The id prefix of an output item of a call. */
function callPrefix(call: ChatToolCall, declared: DeclaredTools): string {
  return isCustom(call, declared) ? 'ctc' : 'fc';
}

/** The output items of a non-streamed completion: its text as a message, then its tool calls. */
export function completionOutput(completion: ChatCompletion, declared: DeclaredTools): OutputItem[] {
  const message = completion.choices[0]?.message;
  const output: OutputItem[] = [];
  if (message?.content) output.push(messageItem(itemId('msg'), message.content, 'completed'));
  for (const call of message?.tool_calls ?? []) output.push(callItem(itemId(callPrefix(call, declared)), call, 'completed', declared));
  return output;
}

/** The assistant's turn as the conversation keeps it, for a later previous_response_id. */
export function replyMessage(output: OutputItem[]): ChatInputMessage {
  const text = output.flatMap((item) => (item.type === 'message' ? item.content.map((c) => c.text) : [])).join('');
  const calls = output.flatMap((item) => {
    if (item.type === 'function_call') return [{ id: item.call_id, type: 'function' as const, function: { name: item.name, arguments: item.arguments } }];
    if (item.type === 'custom_tool_call') return [{ id: item.call_id, type: 'function' as const, function: { name: item.name, arguments: JSON.stringify({ input: item.input }) } }];
    return [];
  });
  return { role: 'assistant', content: text || null, ...(calls.length ? { tool_calls: calls } : {}) };
}

/**
 * The events of an item that is whole when it is sent (a message's text in one delta), at
 * `index` of the output: added, its text for a message, done.
 */
export function wholeItemEvents(item: unknown, index: number): ResponseEvent[] {
  const whole = item as { type: string; id: string; content?: { text: string }[] };
  if (whole.type !== 'message') return [{ type: 'response.output_item.added', output_index: index, item }, { type: 'response.output_item.done', output_index: index, item }];
  const text = whole.content?.[0]?.text ?? '';
  const position = { item_id: whole.id, output_index: index, content_index: 0 };
  const part = { type: 'output_text', text, annotations: [] };
  return [
    { type: 'response.output_item.added', output_index: index, item: { ...whole, status: 'in_progress', content: [] } },
    { type: 'response.content_part.added', ...position, part: { ...part, text: '' } },
    { type: 'response.output_text.delta', ...position, delta: text, logprobs: [] },
    { type: 'response.output_text.done', ...position, text, logprobs: [] },
    { type: 'response.content_part.done', ...position, part },
    { type: 'response.output_item.done', output_index: index, item },
  ];
}

/** One streamed event: its type and payload (the sequence number is added when sent). */
export interface ResponseEvent {
  type: string;
  [field: string]: unknown;
}

/** An item being streamed: a message's text so far, or a tool call's arguments so far. */
type OpenItem = { kind: 'message'; id: string; index: number; text: string } | { kind: 'call'; id: string; index: number; call: ChatToolCall; chatIndex: number };

/**
 * Turns chat chunks into Responses events: response.created and in_progress, then for each
 * item output_item.added, its deltas and done events (content_part for a message,
 * function_call_arguments for a function call; a custom tool's input, known only once its
 * arguments are complete, as one custom_tool_call_input delta), output_item.done, and at the end
 * response.completed (or incomplete) with the whole response. One item is open at a time; the
 * next one closes it.
 */
export class ResponseEventStream {
  private readonly output: OutputItem[] = [];
  private open: OpenItem | undefined;
  private finish: ChatFinishReason | null = null;
  private usage: ChatUsage | null | undefined;

  private readonly response: ResponseObject;
  private readonly declared: DeclaredTools;

  constructor(
    response: ResponseObject,
    declared: DeclaredTools,
  ) {
    this.response = response;
    this.declared = declared;
  }

  start(): ResponseEvent[] {
    return [{ type: 'response.created', response: this.response }, { type: 'response.in_progress', response: this.response }];
  }

  chunk(chunk: ChatChunk): ResponseEvent[] {
    if (chunk.usage) this.usage = chunk.usage;
    const choice = chunk.choices[0];
    if (!choice) return [];
    if (choice.finish_reason) this.finish = choice.finish_reason;
    const events: ResponseEvent[] = [];
    const delta = choice.delta;
    if (delta.content) {
      if (this.open?.kind !== 'message') {
        events.push(...this.close());
        const open: OpenItem = { kind: 'message', id: itemId('msg'), index: this.output.length, text: '' };
        this.open = open;
        events.push({ type: 'response.output_item.added', output_index: open.index, item: messageItem(open.id, '', 'in_progress') });
        events.push({ type: 'response.content_part.added', item_id: open.id, output_index: open.index, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } });
      }
      const open = this.open as Extract<OpenItem, { kind: 'message' }>;
      open.text += delta.content;
      events.push({ type: 'response.output_text.delta', item_id: open.id, output_index: open.index, content_index: 0, delta: delta.content, logprobs: [] });
    }
    for (const piece of delta.tool_calls ?? []) {
      if (this.open?.kind !== 'call' || this.open.chatIndex !== piece.index) {
        events.push(...this.close());
        const call: ChatToolCall = { id: piece.id ?? itemId('call'), type: 'function', function: { name: piece.function?.name ?? '', arguments: '' } };
        const open: OpenItem = { kind: 'call', id: itemId(callPrefix(call, this.declared)), index: this.output.length, call, chatIndex: piece.index };
        this.open = open;
        events.push({ type: 'response.output_item.added', output_index: open.index, item: callItem(open.id, call, 'in_progress', this.declared) });
      }
      const open = this.open as Extract<OpenItem, { kind: 'call' }>;
      const args = piece.function?.arguments;
      if (args) {
        open.call.function.arguments += args;
        if (!isCustom(open.call, this.declared)) events.push({ type: 'response.function_call_arguments.delta', item_id: open.id, output_index: open.index, delta: args });
      }
    }
    return events;
  }

  /** The closing events and the final response (completed or incomplete). */
  end(): { events: ResponseEvent[]; response: ResponseObject } {
    const events = this.close();
    const response = finishResponse(this.response, this.output, this.finish, this.usage);
    events.push({ type: response.status === 'incomplete' ? 'response.incomplete' : 'response.completed', response });
    return { events, response };
  }

  /** A failure after the stream started: response.failed with the error. */
  fail(code: string, message: string): ResponseEvent {
    return { type: 'response.failed', response: { ...this.response, status: 'failed', error: { code, message }, output: this.output } };
  }

  private close(): ResponseEvent[] {
    const open = this.open;
    if (!open) return [];
    this.open = undefined;
    if (open.kind === 'message') {
      const item = messageItem(open.id, open.text, 'completed');
      this.output.push(item);
      const part = { type: 'output_text', text: open.text, annotations: [] };
      return [
        { type: 'response.output_text.done', item_id: open.id, output_index: open.index, content_index: 0, text: open.text, logprobs: [] },
        { type: 'response.content_part.done', item_id: open.id, output_index: open.index, content_index: 0, part },
        { type: 'response.output_item.done', output_index: open.index, item },
      ];
    }
    const item = callItem(open.id, open.call, 'completed', this.declared);
    this.output.push(item);
    if (item.type === 'custom_tool_call') {
      return [
        { type: 'response.custom_tool_call_input.delta', item_id: open.id, output_index: open.index, delta: item.input },
        { type: 'response.custom_tool_call_input.done', item_id: open.id, output_index: open.index, input: item.input },
        { type: 'response.output_item.done', output_index: open.index, item },
      ];
    }
    return [
      { type: 'response.function_call_arguments.done', item_id: open.id, output_index: open.index, arguments: open.call.function.arguments, name: open.call.function.name },
      { type: 'response.output_item.done', output_index: open.index, item },
    ];
  }
}
