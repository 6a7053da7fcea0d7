import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chatParams, inputMessages } from '../../src/openai/responses-input.ts';
import { completionOutput, ResponseEventStream, startResponse } from '../../src/openai/responses-output.ts';
import type { ResponsesRequest } from '../../src/openai/responses-schemas.ts';
import { chatUsageOf } from '../../src/providers/openai/responses-api.ts';
import type { ChatChunk, ChatCompletion } from '../../src/providers/spec.ts';

const fn = (name: string) => ({ type: 'function', name, parameters: { type: 'object' } });

function request(fields: Partial<ResponsesRequest>): ResponsesRequest {
  return { model: 'm', input: 'hi', ...fields };
}

describe('Responses tools as chat function tools', () => {
  it('keeps the first of two tools with one name and names the other', () => {
    const warnings: string[] = [];
    const { params, declared } = chatParams(request({ tools: [fn('a'), { type: 'namespace', name: 'ns', tools: [fn('a'), fn('b')] }] }), warnings);
    assert.deepEqual(params.tools!.map((t) => t.function.name), ['a', 'b']);
    assert.deepEqual([...declared], [['a', { kind: 'function' }], ['b', { kind: 'function', namespace: 'ns' }]]);
    assert.deepEqual(warnings, ['tools[1].tools[0] (a) dropped: another tool has that name']);
  });

  it('drops a hosted tool inside a namespace, and a tool_choice naming a tool that is not sent', () => {
    const warnings: string[] = [];
    const { params } = chatParams(request({ tools: [fn('a'), { type: 'namespace', name: 'ns', tools: [{ type: 'web_search' }] }], tool_choice: { type: 'web_search' } }), warnings);
    assert.equal(params.tool_choice, undefined);
    assert.deepEqual(warnings, ['tools[1].tools[0] (web_search) dropped: only the upstream\'s own Responses API runs it', 'tool_choice (web_search) dropped: the tool it names is not sent']);
  });

  it('sends a custom tool chosen by name as the function, and allowed_tools as its mode', () => {
    const tools = [{ type: 'custom', name: 'apply_patch' }];
    assert.deepEqual(chatParams(request({ tools, tool_choice: { type: 'custom', name: 'apply_patch' } }), []).params.tool_choice, { type: 'function', function: { name: 'apply_patch' } });
    assert.equal(chatParams(request({ tools, tool_choice: { type: 'allowed_tools', mode: 'required', tools: [] } }), []).params.tool_choice, 'required');
  });

  it('sends nothing of reasoning, store, include, prompt_cache_key, client_metadata', () => {
    const { params } = chatParams(request({ reasoning: { effort: 'low', summary: 'auto' }, store: false, include: ['reasoning.encrypted_content'], prompt_cache_key: 'k', client_metadata: { a: 1 } }), []);
    assert.deepEqual(params, {});
  });
});

describe('Responses input items as chat messages', () => {
  it('answers a local shell call named by its item id, and drops content parts a chat model cannot read', () => {
    const warnings: string[] = [];
    const messages = inputMessages([
      { role: 'user', content: [{ type: 'input_text', text: 'a' }, { type: 'input_audio' }] },
      { type: 'local_shell_call', id: 'lsc_9', call_id: 'call_9', action: { type: 'exec', command: ['pwd'] } },
      { type: 'local_shell_call_output', id: 'lsc_9', output: '/home' },
      { type: 'item_reference', id: 'msg_0' },
    ], warnings);
    assert.deepEqual(messages, [
      { role: 'user', content: [{ type: 'text', text: 'a' }] },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_9', type: 'function', function: { name: 'local_shell', arguments: '{"type":"exec","command":["pwd"]}' } }] },
      { role: 'tool', tool_call_id: 'call_9', content: '/home' },
    ]);
    assert.deepEqual(warnings, ['input[0].content[1] (input_audio) dropped: a chat model cannot read it', 'input[3] (item_reference) dropped: a chat model cannot read it']);
  });
});

describe('chat tool calls as the items the caller declared', () => {
  const declared = new Map([['apply_patch', { kind: 'custom' as const }]]);
  const completion = (args: string): ChatCompletion => ({
    id: 'c', object: 'chat.completion', created: 0, model: 'm',
    choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'apply_patch', arguments: args } }] }, finish_reason: 'tool_calls' }],
  });

  it('takes a custom call\'s input from its `input` argument, else its arguments as they came', () => {
    assert.deepEqual(completionOutput(completion('{"input":"*** Begin Patch"}'), declared).map((item) => item.type === 'custom_tool_call' && item.input), ['*** Begin Patch']);
    assert.deepEqual(completionOutput(completion('not json'), declared).map((item) => item.type === 'custom_tool_call' && item.input), ['not json']);
  });

  it('streams a custom call\'s input once its arguments are complete', () => {
    const stream = new ResponseEventStream(startResponse('resp_1', { model: 'm', input: 'x' }, 'm'), declared);
    const chunk = (delta: ChatChunk['choices'][0]['delta']): ChatChunk => ({ id: 'c', object: 'chat.completion.chunk', created: 0, model: 'm', choices: [{ index: 0, delta, finish_reason: null }] });
    const events = [
      ...stream.chunk(chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'apply_patch', arguments: '{"input":' } }] })),
      ...stream.chunk(chunk({ tool_calls: [{ index: 0, function: { arguments: '"p"}' } }] })),
      ...stream.end().events,
    ];
    assert.deepEqual(events.map((e) => e.type), ['response.output_item.added', 'response.custom_tool_call_input.delta', 'response.custom_tool_call_input.done', 'response.output_item.done', 'response.completed']);
    assert.equal(events[1]!.delta, 'p');
  });
});

describe('a passed-through response\'s usage', () => {
  it('counts its cached input tokens as prompt_tokens_details.cached_tokens, part of prompt_tokens', () => {
    assert.deepEqual(chatUsageOf({ input_tokens: 10, output_tokens: 2, total_tokens: 12, input_tokens_details: { cached_tokens: 4 } }), { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12, prompt_tokens_details: { cached_tokens: 4 } });
    assert.deepEqual(chatUsageOf({ input_tokens: 3, output_tokens: 1 }), { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 });
  });
});
