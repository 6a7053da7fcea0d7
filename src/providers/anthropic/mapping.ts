/**
 * OpenAI chat requests as Anthropic Messages API requests, and Anthropic's answers (whole or as
 * server-sent events) as OpenAI chat completions and chunks.
 */
import { ApiError } from '../../core/errors.ts';
import { languageCapabilityOf } from '../../catalog/capabilities.ts';
import { choiceOf, mediaLink, nowSeconds, parseDataUri, refuseParams, toolArguments } from '../chat-conversion.ts';
import { streamFrame, type StreamTranslator } from '../chat-sse.ts';
import { readAnswer } from '../upstream-reply.ts';
import { AnthropicBlocks, AnthropicEvent, AnthropicEvents, AnthropicMessage, type AnthropicUsage } from './reply-schemas.ts';
import type { ChatChunk, ChatCompletion, ChatContentPart, ChatFinishReason, ChatMessage, ChatRequest, ChatTool, ChatToolCall, ChatToolChoice, ChatUsage, NativeCall } from '../spec.ts';

/** The API version every request names (`anthropic-version`). */
export const ANTHROPIC_VERSION = '2023-06-01';

/** `max_tokens` is required upstream: without the client's, the model's output limit (the catalog's candidate_max budget), else this. */
const FALLBACK_MAX_TOKENS = 4096;

/** OpenAI parameters the Messages API has no counterpart for. */
const UNSUPPORTED = ['n', 'logprobs', 'top_logprobs', 'presence_penalty', 'frequency_penalty', 'seed', 'logit_bias', 'response_format', 'reasoning_effort'];

/** OpenAI parameters this mapping turns into Anthropic fields; every other key passes on as it is (top_k, thinking, metadata, …). */
const MAPPED = new Set(['temperature', 'top_p', 'max_tokens', 'max_completion_tokens', 'stop', 'tools', 'tool_choice', 'parallel_tool_calls', 'user', 'stream_options', 'metadata', ...UNSUPPORTED]);

type TextBlock = { type: 'text'; text: string };
type ImageBlock = { type: 'image'; source: { type: 'base64'; media_type: string; data: string } | { type: 'url'; url: string } };
type DocumentBlock = { type: 'document'; source: { type: 'url'; url: string } };
type ToolUseBlock = { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> };
type ToolResultBlock = { type: 'tool_result'; tool_use_id: string; content: string | (TextBlock | ImageBlock | DocumentBlock)[] };
/** A thinking block as Anthropic sent it; it goes back unchanged (its signature is checked) with its turn's tool calls. */
type ThinkingBlock = { type: 'thinking'; thinking: string; signature: string } | { type: 'redacted_thinking'; data: string };
type InputBlock = TextBlock | ImageBlock | DocumentBlock | ToolUseBlock | ToolResultBlock | ThinkingBlock;



interface AnthropicMessage {
  role: 'user' | 'assistant';
  content: string | InputBlock[];
}

/** A content part as a Messages API block: images inline (base64) or by URL, files as documents by URL, other media as links. */
function blockOf(part: ChatContentPart): TextBlock | ImageBlock | DocumentBlock {
  switch (part.type) {
    case 'text':
      return { type: 'text', text: part.text };
    case 'image_url': {
      const inline = parseDataUri(part.image_url.url);
      return { type: 'image', source: inline ? { type: 'base64', media_type: inline.mimeType, data: inline.data } : { type: 'url', url: part.image_url.url } };
    }
    case 'file_url':
      return { type: 'document', source: { type: 'url', url: part.file_url.url } };
    default:
      return { type: 'text', text: mediaLink(part) };
  }
}

/** A message's content as blocks; empty text is dropped (the API refuses empty text blocks). */
function blocksOf(content: ChatMessage['content']): (TextBlock | ImageBlock | DocumentBlock)[] {
  if (content === null) return [];
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  return content.map(blockOf).filter((block) => block.type !== 'text' || block.text !== '');
}

/** The system prompt: the text of every system and developer message, in order. */
function systemOf(messages: ChatMessage[]): TextBlock[] {
  return messages.filter((m) => m.role === 'system' || m.role === 'developer').flatMap((m) => {
    const text = typeof m.content === 'string' ? m.content : (m.content ?? []).map((part) => (part.type === 'text' ? part.text : mediaLink(part))).join('\n');
    return text === '' ? [] : [{ type: 'text' as const, text }];
  });
}

/**
 * The conversation as Messages API turns: assistant tool calls become tool_use blocks, and the
 * tool messages answering them tool_result blocks of one user turn (the API wants every result
 * of a turn in the next user message).
 */
function turnsOf(messages: ChatMessage[]): AnthropicMessage[] {
  const turns: AnthropicMessage[] = [];
  let results: ToolResultBlock[] | undefined;
  messages.forEach((message, i) => {
    if (message.role === 'tool') {
      const result: ToolResultBlock = { type: 'tool_result', tool_use_id: message.tool_call_id ?? '', content: typeof message.content === 'string' ? message.content : blocksOf(message.content) };
      if (results) results.push(result);
      else turns.push({ role: 'user', content: (results = [result]) });
      return;
    }
    results = undefined;
    if (message.role === 'user') turns.push({ role: 'user', content: typeof message.content === 'string' ? message.content : blocksOf(message.content) });
    if (message.role === 'assistant') {
      const uses: ToolUseBlock[] = (message.tool_calls ?? []).map((call, j) => ({ type: 'tool_use', id: call.id, name: call.function.name, input: toolArguments(call, `messages[${i}].tool_calls[${j}].function.arguments`) }));
      const content = [...((message.thinking_blocks ?? []) as ThinkingBlock[]), ...blocksOf(message.content), ...uses];
      if (content.length > 0) turns.push({ role: 'assistant', content });
    }
  });
  return turns;
}

function toolOf(tool: ChatTool) {
  const { name, description, parameters } = tool.function;
  return { name, ...(description !== undefined ? { description } : {}), input_schema: { type: 'object', ...parameters } };
}

function toolChoiceOf(choice: ChatToolChoice | undefined, parallel: unknown): Record<string, unknown> | undefined {
  const single = parallel === false ? { disable_parallel_tool_use: true } : {};
  if (choice === undefined) return parallel === false ? { type: 'auto', ...single } : undefined;
  if (choice === 'none') return { type: 'none' };
  if (choice === 'auto') return { type: 'auto', ...single };
  if (choice === 'required') return { type: 'any', ...single };
  return { type: 'tool', name: choice.function.name, ...single };
}

/** The Messages API body of a chat call: the catalog model's upstream name, `max_tokens` always set, the rest mapped as Anthropic names it. */
export function messagesBody(request: ChatRequest, stream: boolean, provider: string): Record<string, unknown> {
  const { params, model } = request;
  refuseParams(params, provider, UNSUPPORTED);
  const system = systemOf(request.messages);
  const passed = Object.fromEntries(Object.entries(params).filter(([key]) => !MAPPED.has(key)));
  const toolChoice = params.tools?.length ? toolChoiceOf(params.tool_choice, params.parallel_tool_calls) : undefined;
  const metadata = params.user !== undefined ? { ...(params.metadata as object | undefined), user_id: params.user } : params.metadata;
  return {
    model: model.defaultRealModelName,
    max_tokens: params.max_tokens ?? params.max_completion_tokens ?? languageCapabilityOf(model)?.max_output_tokens ?? FALLBACK_MAX_TOKENS,
    ...(system.length > 0 ? { system } : {}),
    messages: turnsOf(request.messages),
    ...(params.temperature !== undefined ? { temperature: Math.min(1, params.temperature) } : {}),
    ...(params.top_p !== undefined ? { top_p: params.top_p } : {}),
    ...(params.stop !== undefined && params.stop !== null ? { stop_sequences: typeof params.stop === 'string' ? [params.stop] : params.stop } : {}),
    ...(params.tools?.length ? { tools: params.tools.map(toolOf) } : {}),
    ...(toolChoice ? { tool_choice: toolChoice } : {}),
    ...(metadata !== undefined ? { metadata } : {}),
    ...passed,
    ...(stream ? { stream: true } : {}),
  };
}

/**
 * The body of a call that came in the Messages API's shape: as it came, with the upstream's model
 * name and, when it names one, the `max_tokens` of the routed params (held to the model's limit).
 */
export function nativeBody(request: ChatRequest, native: NativeCall): string {
  const maxTokens = request.params.max_tokens;
  return JSON.stringify({
    ...native.body,
    model: request.model.defaultRealModelName,
    ...(native.body.max_tokens !== undefined && maxTokens !== undefined ? { max_tokens: maxTokens } : {}),
  });
}

/**
 * The usage in OpenAI's shape: `prompt_tokens` is all the input (uncached, written to the cache
 * and read from it), `prompt_tokens_details` says how much was read from and written to the cache.
 */
export function usageOf(usage: AnthropicUsage): ChatUsage {
  const cacheRead = usage.cache_read_input_tokens ?? 0;
  const cacheWrite = usage.cache_creation_input_tokens ?? 0;
  const prompt = (usage.input_tokens ?? 0) + cacheRead + cacheWrite;
  const completion = usage.output_tokens ?? 0;
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion, prompt_tokens_details: { cached_tokens: cacheRead, cache_write_tokens: cacheWrite } };
}

/** Anthropic's stop reasons as OpenAI finish reasons; an unknown one is a plain stop. */
export function finishReasonOf(stopReason: string | null | undefined): ChatFinishReason {
  switch (stopReason) {
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'tool_use':
      return 'tool_calls';
    case 'refusal':
      return 'content_filter';
    default:
      return 'stop';
  }
}

/** A Messages API answer as a chat completion; an answer of another shape is the upstream's failure. */
export function completionOf(reply: unknown, provider: string): ChatCompletion {
  const message = readAnswer(AnthropicMessage, reply, provider);
  const texts: string[] = [];
  const calls: ChatToolCall[] = [];
  const thinking: ThinkingBlock[] = [];
  for (const [i, block] of message.content.entries()) {
    const at = `/content/${i}`;
    if (block.type === 'text') texts.push(readAnswer(AnthropicBlocks.text, block, provider, at).text);
    if (block.type === 'thinking') thinking.push(readAnswer(AnthropicBlocks.thinking, block, provider, at));
    if (block.type === 'redacted_thinking') thinking.push(readAnswer(AnthropicBlocks.redacted_thinking, block, provider, at));
    if (block.type === 'tool_use') {
      const use = readAnswer(AnthropicBlocks.tool_use, block, provider, at);
      calls.push({ id: use.id, type: 'function', function: { name: use.name, arguments: JSON.stringify(use.input ?? {}) } });
    }
  }
  const choice = choiceOf(texts.length > 0 ? texts.join('') : null, calls, finishReasonOf(message.stop_reason));
  return {
    id: message.id,
    object: 'chat.completion',
    created: nowSeconds(),
    model: message.model,
    choices: [thinking.length > 0 ? { ...choice, message: { ...choice.message, thinking_blocks: thinking } } : choice],
    usage: usageOf(message.usage ?? {}),
  };
}

/**
 * Anthropic's stream events as chat chunks: `message_start` opens the assistant message, text
 * deltas become content, each tool_use block a tool call (its index counting tool blocks) whose
 * argument fragments follow, `message_delta` the finish reason, and `message_stop` the usage
 * chunk that ends the stream. An `error` event (e.g. overloaded_error) fails the stream.
 */
export class AnthropicStream implements StreamTranslator {
  finished = false;
  private id = '';
  private model = '';
  private readonly created = nowSeconds();
  private usage: AnthropicUsage = {};
  /** Content block index → tool call index, for the blocks that are tool calls. */
  private readonly toolIndex = new Map<number, number>();
  /** Content block index → the thinking block being received, sent whole at its stop. */
  private readonly thinking = new Map<number, ThinkingBlock>();

  private readonly provider: string;

  constructor(provider: string) {
    this.provider = provider;
  }

  private chunk(delta: ChatChunk['choices'][number]['delta'], finishReason: ChatFinishReason | null = null): ChatChunk {
    return { id: this.id, object: 'chat.completion.chunk', created: this.created, model: this.model, choices: [{ index: 0, delta, finish_reason: finishReason }] };
  }

  push(data: string): ChatChunk[] {
    const frame = streamFrame(data, this.provider);
    const { type } = readAnswer(AnthropicEvent, frame, this.provider);
    switch (type) {
      case 'message_start': {
        const event = readAnswer(AnthropicEvents.message_start, frame, this.provider);
        this.id = event.message.id;
        this.model = event.message.model;
        this.usage = { ...event.message.usage };
        return [this.chunk({ role: 'assistant', content: '' })];
      }
      case 'content_block_start': {
        const event = readAnswer(AnthropicEvents.content_block_start, frame, this.provider);
        const block = event.content_block;
        if (block.type === 'tool_use') {
          const index = this.toolIndex.size;
          this.toolIndex.set(event.index, index);
          return [this.chunk({ tool_calls: [{ index, id: block.id, type: 'function', function: { name: block.name, arguments: '' } }] })];
        }
        if (block.type === 'thinking') this.thinking.set(event.index, { type: 'thinking', thinking: block.thinking ?? '', signature: block.signature ?? '' });
        if (block.type === 'redacted_thinking') this.thinking.set(event.index, { type: 'redacted_thinking', data: block.data ?? '' });
        return block.type === 'text' && block.text ? [this.chunk({ content: block.text })] : [];
      }
      case 'content_block_delta': {
        const event = readAnswer(AnthropicEvents.content_block_delta, frame, this.provider);
        const { delta } = event;
        if (delta.type === 'text_delta' && delta.text) return [this.chunk({ content: delta.text })];
        const index = this.toolIndex.get(event.index);
        if (delta.type === 'input_json_delta' && delta.partial_json && index !== undefined) return [this.chunk({ tool_calls: [{ index, function: { arguments: delta.partial_json } }] })];
        const thinking = this.thinking.get(event.index);
        if (thinking?.type === 'thinking' && delta.type === 'thinking_delta') thinking.thinking += delta.thinking ?? '';
        if (thinking?.type === 'thinking' && delta.type === 'signature_delta') thinking.signature += delta.signature ?? '';
        // Citations have no place in a chat chunk.
        return [];
      }
      case 'content_block_stop': {
        const thinking = this.thinking.get(readAnswer(AnthropicEvents.content_block_stop, frame, this.provider).index);
        // Sent whole, so a tool loop can send it back (ChatMessage.thinking_blocks).
        return thinking ? [this.chunk({ thinking_blocks: [thinking] })] : [];
      }
      case 'message_delta': {
        const event = readAnswer(AnthropicEvents.message_delta, frame, this.provider);
        // Its usage figures are running totals: they replace the earlier ones.
        this.usage = { ...this.usage, ...event.usage };
        return [this.chunk({}, finishReasonOf(event.delta.stop_reason))];
      }
      case 'message_stop':
        this.finished = true;
        return [{ id: this.id, object: 'chat.completion.chunk', created: this.created, model: this.model, choices: [], usage: usageOf(this.usage) }];
      case 'error': {
        const { error } = readAnswer(AnthropicEvents.error, frame, this.provider);
        const detail = [error?.type, error?.message].filter(Boolean).join(': ');
        throw new ApiError('upstream_error', `${this.provider} failed in the middle of the stream: ${detail || data.slice(0, 200)}`);
      }
      default:
        return [];
    }
  }

  end(): ChatChunk[] {
    if (!this.finished) throw new ApiError('upstream_error', `${this.provider} ended the stream without message_stop`);
    return [];
  }
}

/**
 * Anthropic's stream events of a call that came in the Messages API's shape: each chunk carries
 * the event it was read from (`native`), an event with no chat counterpart (ping, a block's stop)
 * a chunk without choices. The upstream's `error` event is handed on as it came before the
 * stream fails.
 */
export class NativeAnthropicStream implements StreamTranslator {
  private readonly chat: AnthropicStream;
  private failure: unknown;

  private readonly provider: string;

  constructor(provider: string) {
    this.provider = provider;
    this.chat = new AnthropicStream(provider);
  }

  get finished(): boolean {
    return this.chat.finished || this.failure !== undefined;
  }

  push(data: string): ChatChunk[] {
    const frame = streamFrame(data, this.provider);
    const { type } = readAnswer(AnthropicEvent, frame, this.provider);
    const native = { event: type, data };
    let chunks: ChatChunk[];
    try {
      chunks = this.chat.push(data);
    } catch (err) {
      if (type !== 'error') throw err;
      this.failure = err;
      chunks = [];
    }
    if (chunks.length === 0) return [{ id: '', object: 'chat.completion.chunk', created: 0, model: '', choices: [], native }];
    chunks[0] = { ...chunks[0]!, native };
    return chunks;
  }

  end(): ChatChunk[] {
    if (this.failure !== undefined) throw this.failure;
    return this.chat.end();
  }
}
