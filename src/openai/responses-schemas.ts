/**
 * OpenAI's Responses API as /openai/v1/responses takes it: the request body (input items,
 * instructions, function tools) and the response object it answers.
 */
import { Type, type TSchema } from 'typebox';

type Schema = Record<string, unknown>;
const raw = (schema: Schema): TSchema => schema as TSchema;
const text: Schema = { type: 'string' };

/** A content part of an input message (and the output parts an earlier answer echoes back). */
const InputPart: Schema = {
  type: 'object',
  required: ['type'],
  properties: {
    type: { type: 'string', enum: ['input_text', 'input_image', 'input_file', 'output_text', 'refusal'] },
    text,
    image_url: text,
    file_id: text,
    detail: text,
    file_data: text,
    file_url: text,
    filename: text,
    refusal: text,
  },
  allOf: [
    { if: { properties: { type: { enum: ['input_text', 'output_text'] } } }, then: { required: ['text'] } },
    { if: { properties: { type: { const: 'input_image' } } }, then: { anyOf: [{ required: ['image_url'] }, { required: ['file_id'] }] } },
    { if: { properties: { type: { const: 'input_file' } } }, then: { anyOf: [{ required: ['file_data'] }, { required: ['file_url'] }, { required: ['file_id'] }] } },
  ],
};

/** An input item: a message (type omitted or `message`), a function call an earlier answer made, its output, or a reasoning item (ignored). */
const InputItem: Schema = {
  type: 'object',
  properties: {
    type: { type: 'string', enum: ['message', 'function_call', 'function_call_output', 'reasoning'] },
    role: { type: 'string', enum: ['user', 'assistant', 'system', 'developer'] },
    content: { type: ['string', 'array'], items: InputPart },
    call_id: { type: 'string', minLength: 1 },
    name: text,
    arguments: text,
    output: { type: ['string', 'array'], items: InputPart },
  },
  allOf: [
    { if: { properties: { type: { const: 'function_call' } }, required: ['type'] }, then: { required: ['call_id', 'name', 'arguments'] } },
    { if: { properties: { type: { const: 'function_call_output' } }, required: ['type'] }, then: { required: ['call_id', 'output'] } },
    { if: { anyOf: [{ not: { required: ['type'] } }, { properties: { type: { const: 'message' } } }] }, then: { required: ['role', 'content'] } },
  ],
};

/** A tool: function tools are flat (`{type, name, parameters}`); hosted tools are named by type and refused. */
const Tool: Schema = {
  type: 'object',
  required: ['type'],
  properties: {
    type: text,
    name: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' },
    description: { type: ['string', 'null'] },
    parameters: { type: ['object', 'null'] },
    strict: { type: ['boolean', 'null'] },
  },
  if: { properties: { type: { const: 'function' } } },
  then: { required: ['name'] },
};

const ToolChoice: Schema = {
  type: ['string', 'object'],
  if: { type: 'string' },
  then: { enum: ['none', 'auto', 'required'] },
  else: { required: ['type'], properties: { type: text, name: text } },
};

const TextFormat: Schema = {
  type: 'object',
  required: ['type'],
  properties: { type: { type: 'string', enum: ['text', 'json_object', 'json_schema'] }, name: text, schema: { type: 'object' }, strict: { type: ['boolean', 'null'] }, description: text },
};

export const ResponsesBody = Type.Unsafe<ResponsesRequest>(Type.Object({
  model: Type.String({ minLength: 1, description: 'catalog alias of a text_generate or omni model' }),
  input: raw({ type: ['string', 'array'], minLength: 1, items: InputItem, description: 'text (one user message) or a list of input items' }),
  instructions: Type.Optional(raw({ type: ['string', 'null'], description: 'a system message before the input; not carried over by previous_response_id' })),
  previous_response_id: Type.Optional(raw({ type: ['string', 'null'], description: 'a stored response of the caller whose conversation goes first' })),
  tools: Type.Optional(Type.Array(raw(Tool))),
  tool_choice: Type.Optional(raw(ToolChoice)),
  parallel_tool_calls: Type.Optional(raw({ type: ['boolean', 'null'] })),
  max_output_tokens: Type.Optional(raw({ type: ['integer', 'null'], minimum: 1 })),
  temperature: Type.Optional(raw({ type: ['number', 'null'], minimum: 0, maximum: 2 })),
  top_p: Type.Optional(raw({ type: ['number', 'null'], minimum: 0, maximum: 1 })),
  text: Type.Optional(raw({ type: ['object', 'null'], properties: { format: TextFormat } })),
  stream: Type.Optional(raw({ type: ['boolean', 'null'], description: 'default false: one response object' })),
  store: Type.Optional(raw({ type: ['boolean', 'null'], description: 'default true: kept for previous_response_id and GET' })),
  metadata: Type.Optional(raw({ type: ['object', 'null'], additionalProperties: { type: 'string' } })),
  user: Type.Optional(Type.String()),
  // reasoning, include, truncation, service_tier and the like are accepted and have no effect.
}, { additionalProperties: true }));

export interface InputPartBody {
  type: 'input_text' | 'input_image' | 'input_file' | 'output_text' | 'refusal';
  text?: string;
  image_url?: string;
  file_id?: string;
  detail?: string;
  file_data?: string;
  file_url?: string;
  filename?: string;
  refusal?: string;
}

export interface InputItemBody {
  type?: 'message' | 'function_call' | 'function_call_output' | 'reasoning';
  role?: 'user' | 'assistant' | 'system' | 'developer';
  content?: string | InputPartBody[];
  call_id?: string;
  name?: string;
  arguments?: string;
  output?: string | InputPartBody[];
}

export interface ToolBody {
  type: string;
  name?: string;
  description?: string | null;
  parameters?: Record<string, unknown> | null;
  strict?: boolean | null;
}

export type ToolChoiceBody = 'none' | 'auto' | 'required' | { type: string; name?: string };

export interface TextFormatBody {
  type: 'text' | 'json_object' | 'json_schema';
  name?: string;
  schema?: Record<string, unknown>;
  strict?: boolean | null;
  description?: string;
}

/** The request as validated; null stands for absent, as OpenAI's SDKs may send it. */
export interface ResponsesRequest {
  model: string;
  input: string | InputItemBody[];
  instructions?: string | null;
  previous_response_id?: string | null;
  tools?: ToolBody[];
  tool_choice?: ToolChoiceBody;
  parallel_tool_calls?: boolean | null;
  max_output_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  text?: { format?: TextFormatBody } | null;
  stream?: boolean | null;
  store?: boolean | null;
  metadata?: Record<string, string> | null;
  user?: string;
  [other: string]: unknown;
}

/** An output item of a response. */
export type OutputItem =
  | { type: 'message'; id: string; status: 'in_progress' | 'completed'; role: 'assistant'; content: { type: 'output_text'; text: string; annotations: unknown[]; logprobs?: unknown[] }[] }
  | { type: 'function_call'; id: string; call_id: string; name: string; arguments: string; status: 'in_progress' | 'completed' };

export interface ResponseUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

/** The response object. */
export interface ResponseObject {
  id: string;
  object: 'response';
  created_at: number;
  status: 'in_progress' | 'completed' | 'incomplete' | 'failed';
  error: { code: string; message: string } | null;
  incomplete_details: { reason: string } | null;
  instructions: string | null;
  max_output_tokens: number | null;
  model: string;
  output: OutputItem[];
  parallel_tool_calls: boolean;
  previous_response_id: string | null;
  reasoning: { effort: null; summary: null };
  store: boolean;
  temperature: number;
  text: { format: TextFormatBody };
  tool_choice: ToolChoiceBody;
  tools: ToolBody[];
  top_p: number;
  truncation: 'disabled';
  usage: ResponseUsage | null;
  user: string | null;
  metadata: Record<string, string>;
}
