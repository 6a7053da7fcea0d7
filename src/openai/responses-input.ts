/**
 * OpenAI Responses input (items, instructions, tools, text format) translated to the chat
 * service's input, for an upstream that does not serve the Responses API itself. What a chat
 * model cannot take (hosted tools, reasoning items, items of other kinds) is dropped, and each
 * drop is a warning the answer names.
 */
import type { ChatInputMessage, ChatInputPart } from '../core/chat-input.ts';
import { ApiError } from '../core/errors.ts';
import type { ChatParams, ChatTool, ChatToolCall, ChatToolChoice } from '../providers/spec.ts';
import type { InputItemBody, InputPartBody, ResponsesRequest, TextFormatBody, ToolBody, ToolChoiceBody } from './responses-schemas.ts';

/** How the caller declared a tool the chat model may call, so its calls come back as the caller expects them. */
export interface DeclaredTool {
  kind: 'function' | 'custom';
  /** The namespace tool that holds it. */
  namespace?: string;
}

/** The caller's callable tools by name. */
export type DeclaredTools = ReadonlyMap<string, DeclaredTool>;

/** The function a shell command of a `local_shell_call` item becomes in a chat conversation. */
const LOCAL_SHELL_FUNCTION = 'local_shell';

function part(part: InputPartBody, param: string, warnings: string[]): ChatInputPart | undefined {
  switch (part.type) {
    case 'input_text':
    case 'output_text':
      return { type: 'text', text: part.text ?? '' };
    case 'refusal':
      return { type: 'text', text: part.refusal ?? '' };
    case 'input_image':
      if (!part.image_url) throw new ApiError('unsupported_parameter', 'file_id is not supported: send image_url (a URL or a data URL)', `${param}.file_id`);
      return { type: 'image_url', image_url: { url: part.image_url, ...(part.detail ? { detail: part.detail } : {}) } };
    case 'input_file':
      if (part.file_data) return { type: 'file', file: { file_data: part.file_data, ...(part.filename ? { filename: part.filename } : {}) } };
      if (part.file_url) return { type: 'file_url', file_url: { url: part.file_url, ...(part.filename ? { file_name: part.filename } : {}) } };
      throw new ApiError('unsupported_parameter', 'file_id is not supported: send file_data or file_url', `${param}.file_id`);
    default:
      warnings.push(`${param} (${part.type}) dropped: a chat model cannot read it`);
      return undefined;
  }
}

function content(value: string | InputPartBody[], param: string, warnings: string[]): string | ChatInputPart[] {
  if (typeof value === 'string') return value;
  return value.flatMap((each, i) => part(each, `${param}[${i}]`, warnings) ?? []);
}

/** The text of a tool call's output (OpenAI also takes content parts there). */
function outputText(output: string | InputPartBody[]): string {
  return typeof output === 'string' ? output : output.map((p) => p.text ?? '').join('');
}

/** A chat conversation being built: a run of calls becomes one assistant message with tool_calls. */
class Conversation {
  readonly messages: ChatInputMessage[] = [];

  call(call: ChatToolCall): void {
    const last = this.messages[this.messages.length - 1];
    if (last?.role === 'assistant') last.tool_calls = [...(last.tool_calls ?? []), call];
    else this.messages.push({ role: 'assistant', content: null, tool_calls: [call] });
  }

  output(callId: string, output: string | InputPartBody[]): void {
    this.messages.push({ role: 'tool', tool_call_id: callId, content: outputText(output) });
  }
}

/**
 * The input items as chat messages. Reasoning items are dropped (their encrypted content never
 * leaves the gateway), and so is any item a chat conversation has no place for; each drop is a
 * line of `warnings`.
 */
export function inputMessages(input: string | InputItemBody[], warnings: string[]): ChatInputMessage[] {
  if (typeof input === 'string') return [{ role: 'user', content: input }];
  const conversation = new Conversation();
  // A local_shell_call_output names its call by the call item's id (or its call_id).
  const shellCalls = new Map<string, string>();
  input.forEach((item, i) => {
    const param = `input[${i}]`;
    const type = item.type ?? 'message';
    switch (type) {
      case 'message':
        conversation.messages.push({ role: item.role!, content: content(item.content!, `${param}.content`, warnings) });
        break;
      case 'function_call':
        conversation.call({ id: item.call_id!, type: 'function', function: { name: item.name!, arguments: item.arguments! } });
        break;
      case 'custom_tool_call':
        conversation.call({ id: item.call_id!, type: 'function', function: { name: item.name!, arguments: JSON.stringify({ input: item.input }) } });
        break;
      case 'local_shell_call': {
        const callId = item.call_id ?? item.id ?? `call_${i}`;
        if (item.id) shellCalls.set(item.id, callId);
        conversation.call({ id: callId, type: 'function', function: { name: LOCAL_SHELL_FUNCTION, arguments: JSON.stringify(item.action) } });
        break;
      }
      case 'function_call_output':
      case 'custom_tool_call_output':
        conversation.output(item.call_id!, item.output!);
        break;
      case 'local_shell_call_output': {
        const ref = item.call_id ?? item.id ?? '';
        conversation.output(shellCalls.get(ref) ?? ref, item.output!);
        break;
      }
      case 'reasoning':
        warnings.push(`${param} (reasoning) dropped: its content stays with the upstream that wrote it`);
        break;
      default:
        warnings.push(`${param} (${type}) dropped: a chat model cannot read it`);
    }
  });
  return conversation.messages;
}

/** A function tool as a chat model takes it. */
function functionTool(body: ToolBody): ChatTool {
  return {
    type: 'function',
    function: {
      name: body.name!,
      ...(body.description ? { description: body.description } : {}),
      ...(body.parameters ? { parameters: body.parameters } : {}),
      ...(body.strict !== undefined && body.strict !== null ? { strict: body.strict } : {}),
    },
  };
}

/** A custom (freeform) tool as a function of one string argument, `input`; a grammar it declares is told in the description. */
function customTool(body: ToolBody): ChatTool {
  const format = body.format as { type?: string; syntax?: string; definition?: string } | null | undefined;
  const grammar = format?.type === 'grammar' && format.definition ? `The input follows this ${format.syntax ?? ''} grammar:\n${format.definition}` : undefined;
  const description = [body.description, grammar].filter(Boolean).join('\n\n');
  return {
    type: 'function',
    function: {
      name: body.name!,
      ...(description ? { description } : {}),
      parameters: { type: 'object', properties: { input: { type: 'string', description: 'the tool\'s input, as free text' } }, required: ['input'], additionalProperties: false },
    },
  };
}

/** The caller's tools as chat function tools, what each was declared as, and the ones dropped. */
export function chatTools(tools: ToolBody[] | undefined, warnings: string[]): { tools: ChatTool[]; declared: DeclaredTools } {
  const chat: ChatTool[] = [];
  const declared = new Map<string, DeclaredTool>();
  const add = (body: ToolBody, param: string, namespace: string | undefined) => {
    if (body.type !== 'function' && body.type !== 'custom') {
      warnings.push(`${param} (${body.type}) dropped: only the upstream's own Responses API runs it`);
      return;
    }
    if (declared.has(body.name!)) {
      warnings.push(`${param} (${body.name}) dropped: another tool has that name`);
      return;
    }
    declared.set(body.name!, { kind: body.type, ...(namespace ? { namespace } : {}) });
    chat.push(body.type === 'custom' ? customTool(body) : functionTool(body));
  };
  (tools ?? []).forEach((tool, i) => {
    if (tool.type !== 'namespace') return add(tool, `tools[${i}]`, undefined);
    (tool.tools ?? []).forEach((inner, j) => add(inner, `tools[${i}].tools[${j}]`, tool.name));
  });
  return { tools: chat, declared };
}

function toolChoice(choice: ToolChoiceBody, declared: DeclaredTools, warnings: string[]): ChatToolChoice | undefined {
  if (typeof choice === 'string') return choice;
  if ((choice.type === 'function' || choice.type === 'custom') && choice.name && declared.has(choice.name)) return { type: 'function', function: { name: choice.name } };
  if (choice.type === 'allowed_tools' && (choice.mode === 'auto' || choice.mode === 'required')) return choice.mode;
  warnings.push(`tool_choice (${choice.type}) dropped: the tool it names is not sent`);
  return undefined;
}

function responseFormat(format: TextFormatBody | undefined): ChatParams['response_format'] {
  if (!format || format.type === 'text') return undefined;
  if (format.type === 'json_object') return { type: 'json_object' };
  return { type: 'json_schema', json_schema: { name: format.name ?? 'response', schema: format.schema ?? {}, ...(format.strict != null ? { strict: format.strict } : {}), ...(format.description ? { description: format.description } : {}) } };
}

/** The chat parameters of a Responses request, and the tools they declare; what cannot be sent is a line of `warnings`. */
export function chatParams(body: ResponsesRequest, warnings: string[]): { params: ChatParams; declared: DeclaredTools } {
  const params: ChatParams = {};
  const { tools, declared } = chatTools(body.tools, warnings);
  if (tools.length) params.tools = tools;
  const choice = body.tool_choice != null && tools.length ? toolChoice(body.tool_choice, declared, warnings) : undefined;
  if (choice !== undefined) params.tool_choice = choice;
  if (body.parallel_tool_calls != null && tools.length) params.parallel_tool_calls = body.parallel_tool_calls;
  if (body.max_output_tokens != null) params.max_completion_tokens = body.max_output_tokens;
  if (body.temperature != null) params.temperature = body.temperature;
  if (body.top_p != null) params.top_p = body.top_p;
  const format = responseFormat(body.text?.format);
  if (format) params.response_format = format;
  if (body.user !== undefined) params.user = body.user;
  return { params, declared };
}
