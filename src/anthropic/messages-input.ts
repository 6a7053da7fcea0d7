/**
 * An Anthropic Messages API request as a chat call (OpenAI's chat shape), for every upstream but
 * an `anthropic` one (which gets the request as it came): system prompt, turns, content blocks,
 * tools and parameters mapped; what chat has no place for (cache_control, context_management,
 * output_config, top_k, defer_loading, server tools, thinking blocks) left out.
 */
import type { LiveModel } from '../catalog/catalog.ts';
import { languageCapabilityOf } from '../catalog/capabilities.ts';
import type { ChatCompletionInput, ChatInputMessage, ChatInputPart } from '../core/chat-input.ts';
import type { ChatTool, ChatToolChoice } from '../core/chat-messages.ts';
import { nearestInOrder } from '../routing/nearest-values.ts';
import { EFFORT_ORDER } from '../routing/translate.ts';
import type { ContentBlock, MessageParam, MessagesRequest, PromptRequest, ToolChoiceParam, ToolParam } from './messages-schemas.ts';

/** A thinking budget as an effort level: below 4k tokens low, below 16k medium, else high. */
function effortOf(budget: number | undefined): string {
  if (budget === undefined) return 'medium';
  return budget < 4096 ? 'low' : budget < 16384 ? 'medium' : 'high';
}

/** The text of a system prompt given as a string or as text blocks. */
function systemText(system: PromptRequest['system']): string {
  return typeof system === 'string' ? system : (system ?? []).map((block) => block.text).join('\n\n');
}

function dataUri(mediaType: string | undefined, data: string): string {
  return `data:${mediaType ?? 'application/octet-stream'};base64,${data}`;
}

/** An image or document block as a content part; undefined for a source it cannot carry. */
function mediaPart(block: ContentBlock): ChatInputPart | undefined {
  const source = block.source;
  if (!source) return undefined;
  if (block.type === 'image') {
    if (source.type === 'base64' && source.data !== undefined) return { type: 'image_url', image_url: { url: dataUri(source.media_type, source.data) } };
    if (source.type === 'url' && source.url !== undefined) return { type: 'image_url', image_url: { url: source.url } };
    return undefined;
  }
  if (source.type === 'base64' && source.data !== undefined) return { type: 'file', file: { file_data: dataUri(source.media_type, source.data), ...(typeof block.title === 'string' ? { filename: block.title } : {}) } };
  if (source.type === 'url' && source.url !== undefined) return { type: 'file_url', file_url: { url: source.url } };
  if (source.type === 'text' && typeof source.data === 'string') return { type: 'text', text: source.data };
  return undefined;
}

/** Text, image and document blocks as content parts; other blocks have no place in a chat message. */
function partOf(block: ContentBlock): ChatInputPart | undefined {
  if (block.type === 'text') return block.text ? { type: 'text', text: block.text } : undefined;
  if (block.type === 'image' || block.type === 'document') return mediaPart(block);
  return undefined;
}

/** A tool result as the text of a tool message (an error said as such) and the media it returned. */
function toolResultOf(block: ContentBlock): { text: string; media: ChatInputPart[] } {
  const content = block.content;
  const texts: string[] = [];
  const media: ChatInputPart[] = [];
  if (typeof content === 'string') texts.push(content);
  else {
    for (const inner of content ?? []) {
      const part = partOf(inner);
      if (part?.type === 'text') texts.push(part.text!);
      else if (part) media.push(part);
    }
  }
  const text = texts.join('\n');
  return { text: block.is_error ? `Error: ${text}` : text, media };
}

/**
 * A user turn as chat messages: its tool results first, one tool message each (they must follow
 * the assistant's calls), then its other blocks, and the media the tools returned, as one user message.
 */
function userMessages(content: MessageParam['content']): ChatInputMessage[] {
  if (typeof content === 'string') return [{ role: 'user', content }];
  const out: ChatInputMessage[] = [];
  const parts: ChatInputPart[] = [];
  const returned: ChatInputPart[] = [];
  for (const block of content) {
    if (block.type === 'tool_result') {
      const result = toolResultOf(block);
      out.push({ role: 'tool', tool_call_id: block.tool_use_id!, content: result.text });
      returned.push(...result.media);
    } else {
      const part = partOf(block);
      if (part) parts.push(part);
    }
  }
  const rest = [...parts, ...returned];
  if (rest.length > 0 || out.length === 0) out.push({ role: 'user', content: rest.length === 1 && rest[0]!.type === 'text' ? rest[0]!.text! : rest });
  return out;
}

/** An assistant turn: its text, and its tool_use blocks as tool calls (thinking blocks stay with Anthropic). */
function assistantMessage(content: MessageParam['content']): ChatInputMessage {
  if (typeof content === 'string') return { role: 'assistant', content };
  const text = content.filter((block) => block.type === 'text').map((block) => block.text ?? '').join('');
  const calls = content.filter((block) => block.type === 'tool_use').map((block) => ({ id: block.id!, type: 'function' as const, function: { name: block.name!, arguments: JSON.stringify(block.input ?? {}) } }));
  return { role: 'assistant', content: text === '' && calls.length > 0 ? null : text, ...(calls.length > 0 ? { tool_calls: calls } : {}) };
}

/** The turns as chat messages, the system prompt first; a `system` turn stays a system message at its place. */
export function chatMessagesOf(request: PromptRequest): ChatInputMessage[] {
  const system = systemText(request.system);
  const out: ChatInputMessage[] = system === '' ? [] : [{ role: 'system', content: system }];
  for (const message of request.messages) {
    if (message.role === 'user') out.push(...userMessages(message.content));
    else if (message.role === 'assistant') out.push(assistantMessage(message.content));
    else {
      const text = typeof message.content === 'string' ? message.content : message.content.filter((block) => block.type === 'text').map((block) => block.text ?? '').join('\n');
      out.push({ role: 'system', content: text });
    }
  }
  return out;
}

/** Client tools as functions; server tools (a versioned `type`, no input schema) have no counterpart. */
function toolsOf(tools: ToolParam[] | undefined): ChatTool[] {
  return (tools ?? []).filter((tool) => tool.input_schema !== undefined && (tool.type === undefined || tool.type === 'custom')).map((tool) => {
    // `$schema` names the JSON Schema dialect; OpenAI-compatible and Gemini upstreams read the schema itself.
    const { $schema: _dialect, ...parameters } = tool.input_schema!;
    return { type: 'function', function: { name: tool.name, ...(tool.description !== undefined ? { description: tool.description } : {}), parameters } };
  });
}

function toolChoiceOf(choice: ToolChoiceParam): ChatToolChoice {
  switch (choice.type) {
    case 'any':
      return 'required';
    case 'tool':
      return { type: 'function', function: { name: choice.name! } };
    case 'none':
      return 'none';
    default:
      return 'auto';
  }
}

/** The OpenAI parameters of the prompt's tools, tool choice and thinking, as far as `model` takes them. */
function promptParams(request: PromptRequest, model: LiveModel): Partial<ChatCompletionInput> {
  const tools = toolsOf(request.tools);
  const choice = request.tool_choice;
  const levels = languageCapabilityOf(model)?.thinkingEffortLevels;
  // Only a model with effort levels has a reasoning setting to take the thinking budget.
  const effort = request.thinking?.type === 'enabled' && levels?.length ? nearestInOrder(effortOf(request.thinking.budget_tokens), levels, EFFORT_ORDER) : undefined;
  return {
    ...(tools.length > 0 ? { tools } : {}),
    ...(tools.length > 0 && choice ? { tool_choice: toolChoiceOf(choice) } : {}),
    ...(tools.length > 0 && choice?.disable_parallel_tool_use ? { parallel_tool_calls: false } : {}),
    ...(effort ? { reasoning_effort: effort } : {}),
  };
}

/**
 * A Messages API request as a chat call on `model`: `max_tokens` held to the model's output limit
 * (Claude Code asks 32000 of every model), stop sequences, sampling and the end user mapped.
 */
export function chatInputOf(request: MessagesRequest, model: LiveModel): ChatCompletionInput {
  const maxOutput = languageCapabilityOf(model)?.max_output_tokens;
  const userId = request.metadata?.user_id;
  return {
    model: request.model,
    messages: chatMessagesOf(request),
    stream: request.stream === true,
    max_tokens: maxOutput !== undefined && request.max_tokens > maxOutput ? maxOutput : request.max_tokens,
    ...(request.stop_sequences?.length ? { stop: request.stop_sequences } : {}),
    ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
    ...(request.top_p !== undefined ? { top_p: request.top_p } : {}),
    ...(typeof userId === 'string' ? { user: userId } : {}),
    ...promptParams(request, model),
  };
}

/** A count_tokens request as the chat call it would be (its tokens are counted, nothing is generated). */
export function countInputOf(request: PromptRequest, model: LiveModel): ChatCompletionInput {
  return { model: request.model, messages: chatMessagesOf(request), ...promptParams(request, model) };
}
