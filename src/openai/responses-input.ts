/** OpenAI Responses input (items, instructions, tools, text format) translated to the chat service's input. */
import type { ChatInputMessage, ChatInputPart } from '../core/chat-input.ts';
import { ApiError } from '../core/errors.ts';
import type { ChatParams, ChatTool, ChatToolChoice } from '../providers/spec.ts';
import type { InputItemBody, InputPartBody, ResponsesRequest, TextFormatBody, ToolBody, ToolChoiceBody } from './responses-schemas.ts';

function part(part: InputPartBody, param: string): ChatInputPart {
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
  }
}

function content(value: string | InputPartBody[], param: string): string | ChatInputPart[] {
  return typeof value === 'string' ? value : value.map((each, i) => part(each, `${param}[${i}]`));
}

/** The text of a function call's output (OpenAI also takes content parts there). */
function outputText(output: string | InputPartBody[]): string {
  return typeof output === 'string' ? output : output.map((p) => p.text ?? '').join('');
}

/** The input items as chat messages: a run of function calls becomes one assistant message with tool_calls. */
export function inputMessages(input: string | InputItemBody[]): ChatInputMessage[] {
  if (typeof input === 'string') return [{ role: 'user', content: input }];
  const messages: ChatInputMessage[] = [];
  input.forEach((item, i) => {
    const param = `input[${i}]`;
    switch (item.type ?? 'message') {
      case 'message':
        messages.push({ role: item.role!, content: content(item.content!, `${param}.content`) });
        break;
      case 'function_call': {
        const call = { id: item.call_id!, type: 'function' as const, function: { name: item.name!, arguments: item.arguments! } };
        const last = messages[messages.length - 1];
        if (last?.role === 'assistant') last.tool_calls = [...(last.tool_calls ?? []), call];
        else messages.push({ role: 'assistant', content: null, tool_calls: [call] });
        break;
      }
      case 'function_call_output':
        messages.push({ role: 'tool', tool_call_id: item.call_id!, content: outputText(item.output!) });
        break;
      case 'reasoning':
        // The reasoning of an earlier answer: nothing for a chat model to read.
        break;
    }
  });
  return messages;
}

function tool(body: ToolBody, i: number): ChatTool {
  if (body.type !== 'function') throw new ApiError('unsupported_parameter', `tool type ${body.type} is not supported: function tools only`, `tools[${i}].type`);
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

function toolChoice(choice: ToolChoiceBody): ChatToolChoice {
  if (typeof choice === 'string') return choice;
  if (choice.type === 'function' && choice.name) return { type: 'function', function: { name: choice.name } };
  throw new ApiError('unsupported_parameter', `tool_choice ${choice.type} is not supported: none, auto, required or a function`, 'tool_choice');
}

function responseFormat(format: TextFormatBody | undefined): ChatParams['response_format'] {
  if (!format || format.type === 'text') return undefined;
  if (format.type === 'json_object') return { type: 'json_object' };
  return { type: 'json_schema', json_schema: { name: format.name ?? 'response', schema: format.schema ?? {}, ...(format.strict != null ? { strict: format.strict } : {}), ...(format.description ? { description: format.description } : {}) } };
}

/** The chat parameters of a Responses request. */
export function chatParams(body: ResponsesRequest): ChatParams {
  const params: ChatParams = {};
  if (body.tools?.length) params.tools = body.tools.map(tool);
  if (body.tool_choice != null) params.tool_choice = toolChoice(body.tool_choice);
  if (body.parallel_tool_calls != null && body.tools?.length) params.parallel_tool_calls = body.parallel_tool_calls;
  if (body.max_output_tokens != null) params.max_completion_tokens = body.max_output_tokens;
  if (body.temperature != null) params.temperature = body.temperature;
  if (body.top_p != null) params.top_p = body.top_p;
  const format = responseFormat(body.text?.format);
  if (format) params.response_format = format;
  if (body.user !== undefined) params.user = body.user;
  return params;
}
