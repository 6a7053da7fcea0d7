/**
 * The events of POST /v1/responses. Base agent mode speaks the Agents SDK's
 * stream vocabulary (`run_item_stream_event` with camelCase raw items); knowledge-base mode the
 * Responses API's `response.*` events, numbered by `sequence_number`.
 */
import { ApiError } from '../core/errors.ts';
import { newId } from '../core/ids.ts';

/** One server-sent event's JSON. */
export type AgentEvent = { type: string; [field: string]: unknown };

/** Token usage of a whole run (all model calls), in the Responses API's names. */
export interface RunUsage {
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  /** Of `input_tokens`, those read from the upstream's prompt cache. */
  cached_tokens: number;
}

/** The stream's `code` for a run stopped by POST /v1/responses/cancel ("client closed request"). */
const CANCELLED_EVENT_CODE = 499;

export interface FunctionCall {
  callId: string;
  name: string;
  arguments: string;
}

type AgentRef = { name: string };

/** An item of a base-mode run, as its `run_item_stream_event` carries it (the SDK's item.toJSON()). */
export type RunItem = { type: string; rawItem: Record<string, unknown>; agent: AgentRef; [field: string]: unknown };

/** The SDK's event name of each item type. */
const EVENT_NAMES: Record<string, string> = {
  tool_call_item: 'tool_called',
  tool_call_output_item: 'tool_output',
  message_output_item: 'message_output_created',
  tool_approval_item: 'tool_approval_requested',
};

export function runItemEvent(item: RunItem): AgentEvent {
  return { type: 'run_item_stream_event', name: EVENT_NAMES[item.type], item };
}

function functionCallRaw(call: FunctionCall, id: string): Record<string, unknown> {
  return { type: 'function_call', id, callId: call.callId, name: call.name, arguments: call.arguments, status: 'in_progress' };
}

export function toolCallItem(call: FunctionCall, agent: AgentRef): RunItem {
  return { type: 'tool_call_item', rawItem: functionCallRaw(call, newId('fc')), agent };
}

/** The approval a tool waits for; `taskId` is what the client answers with agent.approval. */
export function toolApprovalItem(call: FunctionCall, taskId: string, agent: AgentRef): RunItem {
  return { type: 'tool_approval_item', rawItem: functionCallRaw(call, newId('fc')), agent, taskId, toolName: call.name };
}

export function toolCallOutputItem(call: FunctionCall, output: string, agent: AgentRef): RunItem {
  return {
    type: 'tool_call_output_item',
    rawItem: { type: 'function_call_result', callId: call.callId, name: call.name, arguments: call.arguments, output, status: 'completed' },
    agent,
    output,
  };
}

export function messageOutputItem(text: string, agent: AgentRef): RunItem {
  return { type: 'message_output_item', rawItem: { type: 'message', id: newId('msg'), role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] }, agent };
}

/** What a failure is called in events: its message, stable code and numeric code (HTTP status; 499 when cancelled). */
function describe(err: unknown): { message: string; errorCode: string; code: number } {
  if (!(err instanceof ApiError)) return { message: 'the agent failed', errorCode: 'internal_error', code: 500 };
  return { message: err.message, errorCode: err.code, code: err.code === 'request_cancelled' ? CANCELLED_EVENT_CODE : err.status };
}

/** The plain `error` event: message and a numeric code, plus the stable `error_code`. */
export function errorEvent(err: unknown): AgentEvent {
  const { message, errorCode, code } = describe(err);
  return { type: 'error', message, code, error_code: errorCode };
}

/**
 * The `response.*` events of one knowledge-base answer: a single assistant message with one
 * output_text part, streamed as deltas (with the snapshot so far), then done and completed.
 */
export class ResponseEvents {
  private sequence = 0;
  private readonly id = newId('resp');
  private readonly itemId = newId('msg');
  private readonly createdAt = Math.floor(Date.now() / 1000);
  private text = '';

  private readonly meta: { model: string; requestId: string; agentId: string };

  constructor(meta: { model: string; requestId: string; agentId: string }) {
    this.meta = meta;
  }

  private event(type: string, fields: Record<string, unknown>): AgentEvent {
    return { type, sequence_number: this.sequence++, ...fields };
  }

  private response(status: string, output: unknown[], extra: Record<string, unknown> = {}): Record<string, unknown> {
    return {
      id: this.id,
      object: 'response',
      created_at: this.createdAt,
      status,
      model: this.meta.model,
      output,
      request_id: this.meta.requestId,
      agent_id: this.meta.agentId,
      error: null,
      usage: null,
      ...extra,
    };
  }

  private part(): Record<string, unknown> {
    return { type: 'output_text', text: this.text, annotations: [] };
  }

  /** The finished message item (the whole answer). */
  item(status = 'completed'): Record<string, unknown> {
    return { id: this.itemId, type: 'message', role: 'assistant', status, content: status === 'in_progress' ? [] : [this.part()] };
  }

  started(): AgentEvent[] {
    const position = { item_id: this.itemId, output_index: 0, content_index: 0 };
    return [
      this.event('response.created', { response: this.response('in_progress', []) }),
      this.event('response.in_progress', { response: this.response('in_progress', []) }),
      this.event('response.output_item.added', { output_index: 0, item: this.item('in_progress') }),
      this.event('response.content_part.added', { ...position, part: { type: 'output_text', text: '', annotations: [] } }),
    ];
  }

  delta(delta: string): AgentEvent {
    this.text += delta;
    return this.event('response.output_text.delta', { item_id: this.itemId, output_index: 0, output_item_index: 0, content_index: 0, delta, snapshot: this.text, logprobs: [] });
  }

  completed(usage: RunUsage): AgentEvent[] {
    const position = { item_id: this.itemId, output_index: 0, content_index: 0 };
    const done = { ...position, text: this.text, logprobs: [] };
    return [
      this.event('response.output_text.done', done),
      this.event('response.text.done', done),
      this.event('response.content_part.done', { ...position, part: this.part() }),
      this.event('response.output_item.done', { output_index: 0, item: this.item() }),
      this.event('response.completed', { response: this.response('completed', [this.item()], { usage: withDetails(usage) }) }),
    ];
  }

  /** response.failed and response.error; the caller adds the plain `error` event. */
  failed(err: unknown): AgentEvent[] {
    const { message, errorCode: code } = describe(err);
    return [
      this.event('response.failed', { response: this.response(code === 'request_cancelled' ? 'cancelled' : 'failed', [this.item('incomplete')], { error: { code, message } }) }),
      this.event('response.error', { code, message, param: null }),
    ];
  }
}

/** Usage with the Responses API's detail objects. */
export function withDetails(usage: RunUsage): Record<string, unknown> {
  const { cached_tokens, ...counts } = usage;
  return { ...counts, input_tokens_details: { cached_tokens }, output_tokens_details: { reasoning_tokens: 0 } };
}
