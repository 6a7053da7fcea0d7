/**
 * Chat answers (OpenAI's shape) as Anthropic's: the message object, and the stream as Anthropic's
 * events (message_start, content blocks, message_delta, message_stop).
 */
import { newId } from '../core/ids.ts';
import type { ChatChunk, ChatCompletion, ChatFinishReason, ChatUsage } from '../providers/spec.ts';

export interface AnthropicUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

export type StopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use' | 'refusal';

export type OutputBlock =
  | { type: 'text'; text: string }
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> };

export interface AnthropicMessage {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: OutputBlock[];
  stop_reason: StopReason | null;
  stop_sequence: string | null;
  usage: AnthropicUsage;
}

/** One server-sent event: its type (the `event:` line and the data's `type`) and its data. */
export interface MessageEvent {
  type: string;
  [field: string]: unknown;
}

/** What a chat usage's prompt details say of the cache (an OpenAI upstream's cached tokens, written tokens where told). */
interface PromptDetails {
  cached_tokens?: unknown;
  cache_write_tokens?: unknown;
}

const count = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0);

/**
 * A chat usage in Anthropic's terms: `input_tokens` is the input neither read from the cache nor
 * written to it (a chat usage's `prompt_tokens` counts both).
 */
export function anthropicUsageOf(usage: ChatUsage | null | undefined): AnthropicUsage {
  const details = usage?.prompt_tokens_details as PromptDetails | undefined;
  const read = count(details?.cached_tokens);
  const written = count(details?.cache_write_tokens);
  return {
    input_tokens: Math.max(0, count(usage?.prompt_tokens) - read - written),
    output_tokens: count(usage?.completion_tokens),
    cache_creation_input_tokens: written,
    cache_read_input_tokens: read,
  };
}

/**
 * The stop reason of a chat finish: a stop at one of the request's stop sequences (as vLLM and the
 * local model name it) is `stop_sequence`, tool calls are `tool_use` whatever the finish says.
 */
export function stopOf(finish: ChatFinishReason | null, matched: unknown, stopSequences: readonly string[], calledTools: boolean): { stop_reason: StopReason; stop_sequence: string | null } {
  if (calledTools || finish === 'tool_calls' || finish === 'function_call') return { stop_reason: 'tool_use', stop_sequence: null };
  if (finish === 'length') return { stop_reason: 'max_tokens', stop_sequence: null };
  if (finish === 'content_filter') return { stop_reason: 'refusal', stop_sequence: null };
  if (typeof matched === 'string' && stopSequences.includes(matched)) return { stop_reason: 'stop_sequence', stop_sequence: matched };
  return { stop_reason: 'end_turn', stop_sequence: null };
}

/** Tool-call arguments as the input object; text that is not a JSON object is kept under `input`. */
function inputOf(args: string): Record<string, unknown> {
  if (args.trim() === '') return {};
  try {
    const value: unknown = JSON.parse(args);
    if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // not JSON: handed on as text
  }
  return { input: args };
}

/** A tool call's id, or a new one when the upstream gave none. */
const toolUseId = (id: string | undefined): string => (id ? id : newId('toolu'));

/** A new message id. */
export const messageId = (): string => newId('msg');

/** A chat completion as Anthropic's message object, named by the alias. */
export function messageOf(completion: ChatCompletion, alias: string, stopSequences: readonly string[]): AnthropicMessage {
  const choice = completion.choices[0];
  const message = choice?.message;
  const content: OutputBlock[] = [];
  if (typeof message?.reasoning_content === 'string' && message.reasoning_content !== '') content.push({ type: 'thinking', thinking: message.reasoning_content, signature: '' });
  if (message?.content) content.push({ type: 'text', text: message.content });
  for (const call of message?.tool_calls ?? []) content.push({ type: 'tool_use', id: toolUseId(call.id), name: call.function.name, input: inputOf(call.function.arguments) });
  const calledTools = (message?.tool_calls?.length ?? 0) > 0;
  return {
    id: messageId(),
    type: 'message',
    role: 'assistant',
    model: alias,
    content,
    ...stopOf(choice?.finish_reason ?? null, choice?.stop_reason, stopSequences, calledTools),
    usage: anthropicUsageOf(completion.usage),
  };
}

type OpenBlock = { kind: 'text' | 'thinking' } | { kind: 'tool'; call: number };

/**
 * Chat chunks as Anthropic's events: `message_start` before the first block, one block per run of
 * text, of reasoning, and per tool call, each closed before the next opens; `end` sends the
 * message_delta (stop reason and the whole usage) and message_stop.
 */
export class MessageEventStream {
  private started = false;
  private index = -1;
  private open: OpenBlock | undefined;
  private finish: ChatFinishReason | null = null;
  private matched: unknown;
  private calledTools = false;
  private usage: ChatUsage | null | undefined;

  /** `inputTokens`: the estimate message_start tells before the model's count comes with message_delta. */
  private readonly alias: string;
  private readonly stopSequences: readonly string[];
  private readonly inputTokens: number;

  constructor(
    alias: string,
    stopSequences: readonly string[],
    inputTokens: number,
  ) {
    this.alias = alias;
    this.stopSequences = stopSequences;
    this.inputTokens = inputTokens;
  }

  /** The events of one chunk. */
  chunk(chunk: ChatChunk): MessageEvent[] {
    const events = this.start();
    if (chunk.usage) this.usage = chunk.usage;
    const choice = chunk.choices[0];
    if (!choice) return events;
    const { delta } = choice;
    if (typeof delta.reasoning_content === 'string' && delta.reasoning_content !== '') {
      events.push(...this.openBlock({ kind: 'thinking' }, { type: 'thinking', thinking: '', signature: '' }));
      events.push({ type: 'content_block_delta', index: this.index, delta: { type: 'thinking_delta', thinking: delta.reasoning_content } });
    }
    if (delta.content) {
      events.push(...this.openBlock({ kind: 'text' }, { type: 'text', text: '' }));
      events.push({ type: 'content_block_delta', index: this.index, delta: { type: 'text_delta', text: delta.content } });
    }
    for (const piece of delta.tool_calls ?? []) {
      const open = this.open;
      if (open?.kind !== 'tool' || open.call !== piece.index) {
        this.calledTools = true;
        events.push(...this.openBlock({ kind: 'tool', call: piece.index }, { type: 'tool_use', id: toolUseId(piece.id), name: piece.function?.name ?? '', input: {} }));
      }
      const args = piece.function?.arguments;
      if (args) events.push({ type: 'content_block_delta', index: this.index, delta: { type: 'input_json_delta', partial_json: args } });
    }
    if (choice.finish_reason) this.finish = choice.finish_reason;
    if (choice.stop_reason !== undefined && choice.stop_reason !== null) this.matched = choice.stop_reason;
    return events;
  }

  /** The events that end the message. */
  end(): MessageEvent[] {
    const events = [...this.start(), ...this.closeBlock()];
    const usage = anthropicUsageOf(this.usage);
    events.push({ type: 'message_delta', delta: stopOf(this.finish, this.matched, this.stopSequences, this.calledTools), usage });
    events.push({ type: 'message_stop' });
    return events;
  }

  private start(): MessageEvent[] {
    if (this.started) return [];
    this.started = true;
    const message = { id: messageId(), type: 'message', role: 'assistant', model: this.alias, content: [], stop_reason: null, stop_sequence: null, usage: { ...anthropicUsageOf(undefined), input_tokens: this.inputTokens } };
    return [{ type: 'message_start', message }];
  }

  private openBlock(block: OpenBlock, start: Record<string, unknown>): MessageEvent[] {
    if (this.open && this.open.kind === block.kind && block.kind !== 'tool') return [];
    const events = this.closeBlock();
    this.open = block;
    this.index++;
    events.push({ type: 'content_block_start', index: this.index, content_block: start });
    return events;
  }

  private closeBlock(): MessageEvent[] {
    if (!this.open) return [];
    this.open = undefined;
    return [{ type: 'content_block_stop', index: this.index }];
  }
}
