/**
 * The bodies of Anthropic's Messages API as /anthropic takes them: what the gateway reads is typed
 * (a wrong type is a 400 naming the field), everything else is kept as it came, for an
 * `anthropic` upstream, and left out of the translation for the others.
 */
import { Type, type Static, type TSchema } from 'typebox';

type Schema = Record<string, unknown>;

const raw = (schema: Schema): TSchema => schema as TSchema;
const text: Schema = { type: 'string' };
const object: Schema = { type: 'object' };

const textRule: Schema = { if: { required: ['type'], properties: { type: { const: 'text' } } }, then: { required: ['text'], properties: { text } } };

/** Image and document blocks: a base64 source has its data, a URL source its URL. */
const mediaRule: Schema = {
  if: { required: ['type'], properties: { type: { enum: ['image', 'document'] } } },
  then: {
    required: ['source'],
    properties: {
      source: {
        type: 'object',
        required: ['type'],
        properties: { type: text, media_type: text, data: text, url: text },
        allOf: [
          { if: { required: ['type'], properties: { type: { const: 'base64' } } }, then: { required: ['data'] } },
          { if: { required: ['type'], properties: { type: { const: 'url' } } }, then: { required: ['url'] } },
        ],
      },
    },
  },
};

/** A block inside a tool_result. */
const ResultBlock: Schema = { type: 'object', required: ['type'], properties: { type: text }, allOf: [textRule, mediaRule] };

/** A content block: its type, and for the types the translation reads, the fields it reads. */
const ContentBlock: Schema = {
  type: 'object',
  required: ['type'],
  properties: { type: text },
  allOf: [
    textRule,
    mediaRule,
    { if: { required: ['type'], properties: { type: { const: 'tool_use' } } }, then: { required: ['id', 'name', 'input'], properties: { id: text, name: text, input: object } } },
    {
      if: { required: ['type'], properties: { type: { const: 'tool_result' } } },
      then: { required: ['tool_use_id'], properties: { tool_use_id: text, content: { type: ['string', 'array'], items: ResultBlock }, is_error: { type: 'boolean' } } },
    },
  ],
};

const Message: Schema = {
  type: 'object',
  required: ['role', 'content'],
  properties: {
    // `system` turns come from Claude Code (its environment text in the middle of the conversation).
    role: { type: 'string', enum: ['user', 'assistant', 'system'] },
    content: { type: ['string', 'array'], items: ContentBlock },
  },
};

const Tool: Schema = {
  type: 'object',
  required: ['name'],
  properties: { name: { type: 'string', minLength: 1 }, description: text, input_schema: object, type: text },
};

const ToolChoice: Schema = {
  type: 'object',
  required: ['type'],
  properties: { type: { type: 'string', enum: ['auto', 'any', 'tool', 'none'] }, name: text, disable_parallel_tool_use: { type: 'boolean' } },
  if: { required: ['type'], properties: { type: { const: 'tool' } } },
  then: { required: ['name'] },
};

const System: Schema = { type: ['string', 'array'], items: { type: 'object', required: ['type', 'text'], properties: { type: { const: 'text' }, text } } };

/** The fields a Messages API body and a count_tokens body share. */
const promptFields = {
  model: Type.String({ minLength: 1, description: 'catalog alias of a text_generate model' }),
  messages: Type.Array(raw(Message), { minItems: 1 }),
  system: Type.Optional(raw(System)),
  tools: Type.Optional(Type.Array(raw(Tool))),
  tool_choice: Type.Optional(raw(ToolChoice)),
  thinking: Type.Optional(Type.Object({ type: Type.String(), budget_tokens: Type.Optional(Type.Integer({ minimum: 0 })) }, { additionalProperties: true })),
};

/** `POST /anthropic/v1/messages`. */
export const MessagesBody = Type.Object({
  ...promptFields,
  max_tokens: Type.Integer({ minimum: 1 }),
  stream: Type.Optional(Type.Boolean()),
  stop_sequences: Type.Optional(Type.Array(Type.String())),
  temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
  top_p: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
  top_k: Type.Optional(Type.Integer({ minimum: 0 })),
  metadata: Type.Optional(Type.Object({ user_id: Type.Optional(raw({ type: ['string', 'null'] })) }, { additionalProperties: true })),
}, { additionalProperties: true });

/** `POST /anthropic/v1/messages/count_tokens`. */
export const CountTokensBody = Type.Object(promptFields, { additionalProperties: true });

/** A source of an image or document block. */
export interface BlockSource {
  type: string;
  media_type?: string;
  data?: string;
  url?: string;
}

/** A content block as the translation reads it; other fields ride along. */
export interface ContentBlock {
  type: string;
  text?: string;
  source?: BlockSource;
  id?: string;
  name?: string;
  input?: Record<string, unknown>;
  tool_use_id?: string;
  content?: string | ContentBlock[];
  is_error?: boolean;
  [field: string]: unknown;
}

export interface MessageParam {
  role: 'user' | 'assistant' | 'system';
  content: string | ContentBlock[];
}

export interface ToolParam {
  name: string;
  description?: string;
  input_schema?: Record<string, unknown>;
  /** Anthropic's server tools (web search, …) have a versioned type; client tools none or `custom`. */
  type?: string;
  [field: string]: unknown;
}

export interface ToolChoiceParam {
  type: 'auto' | 'any' | 'tool' | 'none';
  name?: string;
  disable_parallel_tool_use?: boolean;
}

/** The fields of the two bodies the translation reads, typed. */
export type PromptRequest = Omit<Static<typeof CountTokensBody>, 'messages' | 'system' | 'tools' | 'tool_choice'> & {
  messages: MessageParam[];
  system?: string | { type: 'text'; text: string; [field: string]: unknown }[];
  tools?: ToolParam[];
  tool_choice?: ToolChoiceParam;
};

export type MessagesRequest = Omit<Static<typeof MessagesBody>, 'messages' | 'system' | 'tools' | 'tool_choice'> & PromptRequest;
