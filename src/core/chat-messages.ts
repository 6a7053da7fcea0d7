/**
 * Chat messages and parameters (OpenAI's chat shape) as the gateway passes them on: chat models
 * receive them (providers/spec.ts), conversations and stored responses keep them.
 */

/** A content part as a chat model receives it: media by URL (base64 was uploaded before), or as text. */
export type ChatContentPart =
  | { type: 'text'; text: string }
  | { type: 'image_url'; image_url: { url: string; detail?: string } }
  | { type: 'video_url'; video_url: { url: string } }
  | { type: 'input_audio'; input_audio: { url: string; format?: string } }
  | { type: 'audio_url'; audio_url: { url: string } }
  | { type: 'file_url'; file_url: { url: string; file_name?: string } };

export interface ChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** One message of a conversation (OpenAI chat shape); other fields a client sent travel along. */
export interface ChatMessage {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool';
  content: string | ChatContentPart[] | null;
  name?: string;
  /** An assistant's calls of the request's tools. */
  tool_calls?: ChatToolCall[];
  /** The call a `tool` message answers. */
  tool_call_id?: string;
  /**
   * An assistant turn's thinking blocks, as Anthropic sent them: Anthropic wants them back,
   * unchanged, with the turn's tool calls. Other upstreams never get them.
   */
  thinking_blocks?: unknown[];
}

export interface ChatTool {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean | null };
}

export type ChatToolChoice = 'none' | 'auto' | 'required' | { type: 'function'; function: { name: string } };

/** The OpenAI parameters of a call; any other key is a provider parameter passed on as it is. */
export interface ChatParams {
  temperature?: number;
  top_p?: number;
  max_tokens?: number;
  max_completion_tokens?: number;
  stop?: string | string[] | null;
  tools?: ChatTool[];
  tool_choice?: ChatToolChoice;
  response_format?: { type: string; [field: string]: unknown };
  stream_options?: { include_usage?: boolean; [field: string]: unknown } | null;
  user?: string;
  [name: string]: unknown;
}
