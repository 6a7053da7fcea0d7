import type { ChatInputMessage, ChatInputPart } from '../core/chat-input.ts';
import type { SkillOptions } from './skills-service.ts';

/** Roles an agent request's messages may have. */
export const INPUT_ROLES = ['user', 'assistant', 'system'] as const;

export interface InputMessage extends ChatInputMessage {
  role: (typeof INPUT_ROLES)[number];
}

/** The body of POST /v1/responses after the route checked it (multipart fields already parsed). */
export interface ResponsesInput {
  /** Plain text, or messages (a JSON string holding messages was parsed by the route). */
  input: string | InputMessage[];
  model: string;
  /** Default true. */
  stream?: boolean;
  /** Image URLs appended as image_url parts to the last user message. */
  images?: string[];
  requestId?: string;
  conversationId?: string;
  /** The client's snapshot of the current user message; kept out of the model call. */
  userMessage?: Record<string, unknown>;
  agentId?: string;
  useGlobalMainAgent?: boolean;
  skill_options?: SkillOptions;
  /** Files of a multipart request, stored and given as parts of the last user message. */
  attachments?: ChatInputPart[];
  /** Tools of the request: its `mcp` ones are run by the agent (mcp/request-tools.ts); the others are not read. */
  tools?: { type?: unknown }[];
}

/**
 * Whether a string `input` is the JSON form (a message array): it must start with `[`, and it
 * counts only when it parses as an array, so plain text that starts with a bracket stays text.
 */
export function parseJsonInput(text: string): unknown[] | undefined {
  if (!text.trimStart().startsWith('[')) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return Array.isArray(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** The `images` shortcut as content parts. */
export function imageParts(images: readonly string[] = []): ChatInputPart[] {
  return images.map((url) => ({ type: 'image_url', image_url: { url } }));
}

/**
 * The request's messages: plain text becomes one user message; `attached` parts (the `images`
 * shortcut, files of a multipart request) are appended to the last user message (a new user
 * message when there is none).
 */
export function inputMessages(input: ResponsesInput['input'], attached: readonly ChatInputPart[]): InputMessage[] {
  const messages: InputMessage[] = typeof input === 'string' ? [{ role: 'user', content: input }] : input.slice();
  if (attached.length === 0) return messages;
  let last = -1;
  for (let i = messages.length - 1; i >= 0 && last < 0; i--) if (messages[i].role === 'user') last = i;
  if (last < 0) return [...messages, { role: 'user', content: [...attached] }];
  const { content } = messages[last];
  const existing: ChatInputPart[] = typeof content === 'string' ? [{ type: 'text', text: content }] : content ?? [];
  messages[last] = { ...messages[last], content: [...existing, ...attached] };
  return messages;
}
