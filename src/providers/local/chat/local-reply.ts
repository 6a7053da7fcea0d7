import { createHash } from 'node:crypto';
import type { ChatContentPart, ChatFinishReason, ChatMessage, ChatRequest, ChatTool, ChatToolCall, ChatUsage } from '../../spec.ts';

/** What the local model answers to a conversation: text, or calls of the request's tools. */
export interface LocalReply {
  content: string | null;
  toolCalls: ChatToolCall[];
  finishReason: ChatFinishReason;
  /** The stop sequence that cut the text, when one did. */
  stopSequence?: string;
  usage: ChatUsage;
}

/** The local model's tokens: words and single punctuation marks. */
const TOKEN = /\w+|[^\w\s]/g;
/** Tokens every message costs beyond its text (role and separators), as OpenAI's models count. */
const MESSAGE_OVERHEAD_TOKENS = 3;

function countTokens(text: string): number {
  return text.match(TOKEN)?.length ?? 0;
}

/** Media parts are read as the links they are. */
function partText(part: ChatContentPart): string {
  switch (part.type) {
    case 'text': return part.text;
    case 'image_url': return `[image: ${part.image_url.url}]`;
    case 'video_url': return `[video: ${part.video_url.url}]`;
    case 'input_audio': return `[audio: ${part.input_audio.url}]`;
    case 'audio_url': return `[audio: ${part.audio_url.url}]`;
    case 'file_url': return `[file: ${part.file_url.url}]`;
  }
}

function messageText(message: ChatMessage): string {
  if (typeof message.content === 'string') return message.content;
  return message.content ? message.content.map(partText).join(' ') : '';
}

/** The tool the last user message asks for: forced by tool_choice, else the first one it names, else (when required) the first tool. */
function toolAskedFor(request: ChatRequest, text: string): ChatTool | undefined {
  const { tools, tool_choice: choice } = request.params;
  if (!tools?.length || choice === 'none') return undefined;
  if (typeof choice === 'object') return tools.find((t) => t.function.name === choice.function.name);
  let first: { tool: ChatTool; at: number } | undefined;
  const lower = text.toLowerCase();
  for (const tool of tools) {
    const name = tool.function.name.toLowerCase();
    for (let at = lower.indexOf(name); at >= 0; at = lower.indexOf(name, at + 1)) {
      const before = lower.charAt(at - 1);
      const after = lower.charAt(at + name.length);
      // A whole name, not a part of a longer word (get_weather does not match get_weather_history).
      if (!/[\w-]/.test(before) && !/[\w-]/.test(after)) {
        if (!first || at < first.at) first = { tool, at };
        break;
      }
    }
  }
  return first?.tool ?? (choice === 'required' ? tools[0] : undefined);
}

/** Spans tried when looking for a JSON object in a message, so a text full of braces stays cheap. */
const MAX_ARGUMENT_SPANS = 32;

/** The first JSON object written in the message, as the call's arguments; `{}` when there is none. */
function argumentsIn(text: string): string {
  let tries = 0;
  for (let start = text.indexOf('{'); start >= 0; start = text.indexOf('{', start + 1)) {
    for (let end = text.lastIndexOf('}'); end > start; end = text.lastIndexOf('}', end - 1)) {
      if (++tries > MAX_ARGUMENT_SPANS) return '{}';
      try {
        const value: unknown = JSON.parse(text.slice(start, end + 1));
        if (value && typeof value === 'object' && !Array.isArray(value)) return JSON.stringify(value);
      } catch {
        // not JSON between these braces; try a shorter span
      }
    }
  }
  return '{}';
}

/**
 * The call's arguments: the first JSON object of the message; without one, the message itself
 * for each required text parameter, so "generate_image of a red fox" works offline as asked.
 */
function argumentsFor(tool: ChatTool, said: string): string {
  const written = argumentsIn(said);
  if (written !== '{}') return written;
  const schema = tool.function.parameters as { required?: unknown; properties?: Record<string, { type?: unknown }> } | undefined;
  const required = Array.isArray(schema?.required) ? schema.required.filter((name): name is string => typeof name === 'string') : [];
  const texts = required.filter((name) => schema?.properties?.[name]?.type === 'string');
  return JSON.stringify(Object.fromEntries(texts.map((name) => [name, said])));
}

/** What the trailing tool messages returned, named by the calls they answer. */
function toolResults(messages: ChatMessage[]): string {
  const names = new Map<string, string>();
  for (const message of messages) for (const call of message.tool_calls ?? []) names.set(call.id, call.function.name);
  const results: string[] = [];
  for (let i = messages.length - 1; i >= 0 && messages[i].role === 'tool'; i--) {
    const id = messages[i].tool_call_id ?? '';
    results.unshift(`${names.get(id) ?? id} returned ${messageText(messages[i])}`);
  }
  return `Tool results: ${results.join('; ')}`;
}

/** The text cut at the earliest stop sequence (named in `stopSequence`), then at the output-token limit. */
function limited(text: string, request: ChatRequest): { text: string; finishReason: ChatFinishReason; stopSequence?: string } {
  const { stop } = request.params;
  let cut: { at: number; sequence: string } | undefined;
  for (const sequence of typeof stop === 'string' ? [stop] : stop ?? []) {
    const at = sequence ? text.indexOf(sequence) : -1;
    if (at >= 0 && (!cut || at < cut.at)) cut = { at, sequence };
  }
  if (cut) text = text.slice(0, cut.at);
  const limit = request.params.max_completion_tokens ?? request.params.max_tokens;
  if (limit !== undefined) {
    TOKEN.lastIndex = 0;
    let count = 0;
    for (let match = TOKEN.exec(text); match; match = TOKEN.exec(text)) {
      if (++count > limit) return { text: text.slice(0, match.index).trimEnd(), finishReason: 'length' };
    }
  }
  return cut ? { text, finishReason: 'stop', stopSequence: cut.sequence } : { text, finishReason: 'stop' };
}

/**
 * The local model's deterministic answer. After tool results it reports them; when the request
 * has tools and the last user message names one (or tool_choice forces one), it calls that tool
 * with the first JSON object of the message as arguments (else the message as its required text
 * parameters); otherwise it echoes the last user
 * message, numbered by the user turns of the conversation. Stop sequences and the output-token
 * limit apply; `response_format: json_object` wraps the text as `{"reply": …}`.
 */
export function localReply(request: ChatRequest): LocalReply {
  // Instructions after the last turn (Claude Code puts its environment there) are not a turn.
  let turns = request.messages.length;
  while (turns > 0 && (request.messages[turns - 1].role === 'system' || request.messages[turns - 1].role === 'developer')) turns--;
  const messages = turns === request.messages.length ? request.messages : request.messages.slice(0, turns);
  const promptTokens = request.messages.reduce((sum, m) => sum + countTokens(messageText(m)) + MESSAGE_OVERHEAD_TOKENS, 0);
  const usage = (completion: number): ChatUsage => ({ prompt_tokens: promptTokens, completion_tokens: completion, total_tokens: promptTokens + completion });
  const last = messages[messages.length - 1];
  if (last?.role === 'tool') {
    const content = toolResults(messages);
    return { content, toolCalls: [], finishReason: 'stop', usage: usage(countTokens(content)) };
  }

  const userMessages = messages.filter((m) => m.role === 'user');
  const said = userMessages.length > 0 ? messageText(userMessages[userMessages.length - 1]) : '';
  const tool = last?.role === 'user' ? toolAskedFor(request, said) : undefined;
  if (tool) {
    const args = argumentsFor(tool, said);
    const id = `call_${createHash('sha256').update(`${userMessages.length}\n${said}\n${tool.function.name}`).digest('hex').slice(0, 24)}`;
    const call: ChatToolCall = { id, type: 'function', function: { name: tool.function.name, arguments: args } };
    return { content: null, toolCalls: [call], finishReason: 'tool_calls', usage: usage(countTokens(`${tool.function.name} ${args}`)) };
  }

  let text = `You said: ${said} (message ${userMessages.length} of this conversation, answered by the local model ${request.model.alias})`;
  if (request.params.response_format?.type === 'json_object') text = JSON.stringify({ reply: text });
  const { text: content, finishReason, stopSequence } = limited(text, request);
  return { content, toolCalls: [], finishReason, ...(stopSequence !== undefined ? { stopSequence } : {}), usage: usage(countTokens(content)) };
}
