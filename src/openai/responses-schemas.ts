/**
 * OpenAI's Responses API as /openai/v1/responses takes it: the request body (input items,
 * instructions, tools of every type) and the response object it answers.
 */
import { Type, type TSchema } from 'typebox';

type Schema = Record<string, unknown>;
const raw = (schema: Schema): TSchema => schema as TSchema;
const text: Schema = { type: 'string' };

/** A content part of an input message (and the output parts an earlier answer echoes back); a part of another type is dropped with a warning. */
const InputPart: Schema = {
  type: 'object',
  required: ['type'],
  properties: {
    type: text,
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

/** What an item of `type` (given) must hold; the fields of other item types are not checked against it. */
const itemOfType = (type: string, required: string[], properties: Record<string, Schema>): Schema => ({ if: { properties: { type: { const: type } }, required: ['type'] }, then: { required, properties } });

const callId: Schema = { type: 'string', minLength: 1 };
const toolOutput: Schema = { type: ['string', 'array'], items: InputPart };

/**
 * An input item: a message (type omitted or `message`), a call an earlier answer made (function,
 * custom tool, local shell) or its output, a reasoning item; any other type OpenAI defines is
 * accepted too (dropped with a warning where the target cannot read it). `id` may be present or not.
 */
const InputItem: Schema = {
  type: 'object',
  properties: { type: text, id: { type: ['string', 'null'] } },
  allOf: [
    itemOfType('function_call', ['call_id', 'name', 'arguments'], { call_id: callId, name: text, arguments: text, namespace: text }),
    itemOfType('function_call_output', ['call_id', 'output'], { call_id: callId, output: toolOutput }),
    itemOfType('custom_tool_call', ['call_id', 'name', 'input'], { call_id: callId, name: text, input: text, namespace: text }),
    itemOfType('custom_tool_call_output', ['call_id', 'output'], { call_id: callId, output: toolOutput }),
    itemOfType('local_shell_call', ['action'], { call_id: callId, action: { type: 'object' } }),
    itemOfType('local_shell_call_output', ['output'], { call_id: callId, output: text }),
    itemOfType('reasoning', [], { encrypted_content: { type: ['string', 'null'] } }),
    {
      if: { anyOf: [{ not: { required: ['type'] } }, { properties: { type: { const: 'message' } } }] },
      then: { required: ['role', 'content'], properties: { role: { type: 'string', enum: ['user', 'assistant', 'system', 'developer'] }, content: { type: ['string', 'array'], items: InputPart } } },
    },
  ],
};

const toolName: Schema = { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' };

/**
 * A tool. `function` (flat: `{type, name, parameters}`), `custom` (freeform text input) and
 * `namespace` (a group of function and custom tools) are the caller's; `mcp` and hosted tools
 * (web_search, file_search, local_shell, code_interpreter, image_generation, …) are run by the
 * upstream, and any other type is accepted as such.
 */
const Tool: Schema = {
  type: 'object',
  required: ['type'],
  properties: {
    type: text,
    name: toolName,
    description: { type: ['string', 'null'] },
    parameters: { type: ['object', 'null'] },
    strict: { type: ['boolean', 'null'] },
    format: { type: ['object', 'null'] },
    tools: { type: 'array', items: { type: 'object', required: ['type'], properties: { type: text, name: toolName } } },
  },
  allOf: [
    { if: { properties: { type: { enum: ['function', 'custom'] } } }, then: { required: ['name'] } },
    { if: { properties: { type: { const: 'namespace' } } }, then: { required: ['name', 'tools'] } },
  ],
};

/** `none`, `auto`, `required`, or an object: a function or custom tool by name, allowed_tools, a hosted tool's type. */
const ToolChoice: Schema = {
  type: ['string', 'object'],
  if: { type: 'string' },
  then: { enum: ['none', 'auto', 'required'] },
  else: { required: ['type'], properties: { type: text, name: text, mode: text } },
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
  text: Type.Optional(raw({ type: ['object', 'null'], properties: { format: TextFormat, verbosity: { type: ['string', 'null'] } } })),
  stream: Type.Optional(raw({ type: ['boolean', 'null'], description: 'default false: one response object' })),
  store: Type.Optional(raw({ type: ['boolean', 'null'], description: 'default true: kept for previous_response_id and GET' })),
  metadata: Type.Optional(raw({ type: ['object', 'null'], additionalProperties: { type: 'string' } })),
  user: Type.Optional(Type.String()),
  reasoning: Type.Optional(raw({ type: ['object', 'null'], description: 'passed through; not sent to other upstreams' })),
  include: Type.Optional(raw({ type: ['array', 'null'], items: text, description: 'passed through; reasoning.encrypted_content never leaves the gateway for other upstreams' })),
  prompt_cache_key: Type.Optional(raw({ type: ['string', 'null'], description: 'passed through; the cache key of a chat call otherwise' })),
  client_metadata: Type.Optional(raw({ type: ['object', 'null'], description: 'passed through; not sent to other upstreams' })),
  // truncation, service_tier and any other field are accepted: passed through, else without effect.
}, { additionalProperties: true }));

export interface InputPartBody {
  /** input_text, input_image, input_file, output_text, refusal, or another OpenAI part type. */
  type: string;
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
  /** Absent for a message; message, function_call, custom_tool_call, local_shell_call (and their outputs), reasoning, or another OpenAI item type. */
  type?: string;
  id?: string | null;
  role?: 'user' | 'assistant' | 'system' | 'developer';
  content?: string | InputPartBody[];
  call_id?: string;
  name?: string;
  namespace?: string;
  arguments?: string;
  /** A custom tool call's text input. */
  input?: string;
  output?: string | InputPartBody[];
  /** A local shell call's command (`{type: "exec", command: [...]}`). */
  action?: Record<string, unknown>;
  encrypted_content?: string | null;
  [field: string]: unknown;
}

export interface ToolBody {
  type: string;
  name?: string;
  description?: string | null;
  parameters?: Record<string, unknown> | null;
  strict?: boolean | null;
  /** A custom tool's input format (text, or a grammar). */
  format?: Record<string, unknown> | null;
  /** A namespace's function and custom tools. */
  tools?: ToolBody[];
  [field: string]: unknown;
}

export type ToolChoiceBody = 'none' | 'auto' | 'required' | { type: string; name?: string; mode?: string; [field: string]: unknown };

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
  text?: { format?: TextFormatBody; verbosity?: string | null } | null;
  stream?: boolean | null;
  store?: boolean | null;
  metadata?: Record<string, string> | null;
  user?: string;
  reasoning?: { effort?: string | null; summary?: string | null; [field: string]: unknown } | null;
  include?: string[] | null;
  prompt_cache_key?: string | null;
  client_metadata?: Record<string, unknown> | null;
  [other: string]: unknown;
}

/** An output item of a response. */
export type OutputItem =
  | { type: 'message'; id: string; status: 'in_progress' | 'completed'; role: 'assistant'; content: { type: 'output_text'; text: string; annotations: unknown[]; logprobs?: unknown[] }[] }
  | { type: 'function_call'; id: string; call_id: string; name: string; arguments: string; status: 'in_progress' | 'completed'; namespace?: string }
  | { type: 'custom_tool_call'; id: string; call_id: string; name: string; input: string; status: 'in_progress' | 'completed'; namespace?: string };

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
  reasoning: { effort: string | null; summary: string | null };
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
