import type { ChatParams, ChatToolCall } from './chat-messages.ts';

/** The content-part types of chat completions and the agent. */
export const CONTENT_PART_TYPES = ['text', 'image_url', 'video_url', 'input_audio', 'audio_url', 'file_url', 'file'] as const;
export const MESSAGE_ROLES = ['system', 'developer', 'user', 'assistant', 'tool'] as const;

/** A content part as a client sends it: base64 media and the tolerated spellings included. */
export interface ChatInputPart {
  type: (typeof CONTENT_PART_TYPES)[number];
  text?: string;
  /** `urls` (one URL or several) is tolerated and normalised to `url`. */
  image_url?: { url?: string; urls?: string | string[]; detail?: string };
  video_url?: { url: string };
  /** `data` is base64 (or a data URI), uploaded and replaced by a URL. */
  input_audio?: { url?: string; data?: string; format?: string };
  audio_url?: { url: string };
  file_url?: { url: string; file_name?: string; fileName?: string };
  /** `file_data` is base64 (or a data URI), uploaded and replaced by a URL. */
  file?: { file_data?: string; filename?: string; file_id?: string };
}

export interface ChatInputMessage {
  role: (typeof MESSAGE_ROLES)[number];
  content?: string | ChatInputPart[] | null;
  name?: string;
  tool_calls?: ChatToolCall[];
  tool_call_id?: string;
}

/** The body of POST /v1/chat/completions: the gateway's own fields, then the OpenAI parameters. */
export interface ChatCompletionInput extends ChatParams {
  model: string;
  messages: ChatInputMessage[];
  /** Default true. */
  stream?: boolean;
  /** Names a stored conversation of the caller: its history is sent before `messages`, and the turn is stored. */
  conversationId?: string;
  /** Another name for the conversation, used when conversationId is absent. */
  sessionId?: string;
}
