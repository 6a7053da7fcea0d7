/**
 * What the adapters of chat APIs that do not speak OpenAI's (Anthropic, Gemini) share when they
 * turn an OpenAI chat request into their own and their answers back.
 */
import { ApiError } from '../core/errors.ts';
import type { ChatContentPart, ChatFinishReason, ChatMessage, ChatParams, ChatToolCall } from './spec.ts';

/**
 * OpenAI parameters the upstream has no counterpart for: a request setting one is 400
 * unsupported_parameter naming it, instead of an answer that silently ignores it. `n` is refused
 * above `maxChoices`, `response_format` unless it asks for plain text.
 */
export function refuseParams(params: ChatParams, provider: string, names: readonly string[], maxChoices = 1): void {
  for (const name of names) {
    const value = params[name];
    if (value === undefined || value === null || value === false) continue;
    if (name === 'n' && typeof value === 'number' && value <= maxChoices) continue;
    if (name === 'response_format' && (value as { type?: unknown }).type === 'text') continue;
    throw new ApiError('unsupported_parameter', `${name} is not supported by provider ${provider}`, name);
  }
}

/** The type and base64 payload of a `data:<type>;base64,<data>` URI; undefined for any other reference. */
export function parseDataUri(url: string): { mimeType: string; data: string } | undefined {
  const match = /^data:([\w.+-]+\/[\w.+-]+)?((?:;[^,;]*)*);base64,/i.exec(url);
  if (!match) return undefined;
  return { mimeType: match[1]?.toLowerCase() ?? 'application/octet-stream', data: url.slice(match[0].length) };
}

/** The arguments of a tool call in a conversation as an object; 400 naming the field when they are not a JSON object. */
export function toolArguments(call: ChatToolCall, param: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = call.function.arguments.trim() === '' ? {} : JSON.parse(call.function.arguments);
  } catch {
    value = undefined;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new ApiError('invalid_parameter', `${param} must be a JSON object`, param);
  return value as Record<string, unknown>;
}

/** The text of a message's content (its text parts joined). */
export function contentText(content: ChatMessage['content']): string {
  if (typeof content === 'string') return content;
  return (content ?? []).flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('');
}

/** A media part as the text link a model reads when it cannot take the media itself. */
export function mediaLink(part: Exclude<ChatContentPart, { type: 'text' }>): string {
  switch (part.type) {
    case 'image_url':
      return `[image: ${part.image_url.url}]`;
    case 'video_url':
      return `[video: ${part.video_url.url}]`;
    case 'input_audio':
      return `[audio: ${part.input_audio.url}]`;
    case 'audio_url':
      return `[audio: ${part.audio_url.url}]`;
    case 'file_url':
      return `[file: ${part.file_url.url}]`;
  }
}

/** Seconds since the epoch, as OpenAI's `created`. */
export const nowSeconds = (): number => Math.floor(Date.now() / 1000);

/** A completion's single choice, with its tool calls when there are any. */
export function choiceOf(text: string | null, calls: ChatToolCall[], finishReason: ChatFinishReason) {
  return { index: 0, message: { role: 'assistant' as const, content: text, ...(calls.length > 0 ? { tool_calls: calls } : {}) }, finish_reason: finishReason };
}
