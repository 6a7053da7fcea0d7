import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { anthropicUsageOf, MessageEventStream, stopOf } from '../../src/anthropic/messages-output.ts';
import type { ChatChunk } from '../../src/providers/spec.ts';

const chunk = (delta: ChatChunk['choices'][number]['delta'], finish: ChatChunk['choices'][number]['finish_reason'] = null): ChatChunk => ({
  id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }],
});

describe('chat answers in Anthropic\'s shape', () => {
  it('reads cached and cache-written tokens out of the input tokens', () => {
    assert.deepEqual(anthropicUsageOf({ prompt_tokens: 1200, completion_tokens: 3, total_tokens: 1203, prompt_tokens_details: { cached_tokens: 1000, cache_write_tokens: 150 } }), {
      input_tokens: 50, output_tokens: 3, cache_creation_input_tokens: 150, cache_read_input_tokens: 1000,
    });
    assert.deepEqual(anthropicUsageOf({ prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 }), { input_tokens: 7, output_tokens: 2, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 });
    assert.deepEqual(anthropicUsageOf(undefined), { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 });
  });

  it('maps finish reasons to stop reasons', () => {
    assert.deepEqual(stopOf('stop', null, [], false), { stop_reason: 'end_turn', stop_sequence: null });
    assert.deepEqual(stopOf('stop', 'END', ['END'], false), { stop_reason: 'stop_sequence', stop_sequence: 'END' });
    assert.deepEqual(stopOf('stop', 'END', [], false), { stop_reason: 'end_turn', stop_sequence: null }, 'a stop string the caller did not ask for is no stop sequence');
    assert.deepEqual(stopOf('length', null, [], false), { stop_reason: 'max_tokens', stop_sequence: null });
    assert.deepEqual(stopOf('tool_calls', null, [], true), { stop_reason: 'tool_use', stop_sequence: null });
    assert.deepEqual(stopOf('stop', null, [], true), { stop_reason: 'tool_use', stop_sequence: null }, 'tool calls whatever the finish says');
    assert.deepEqual(stopOf('content_filter', null, [], false), { stop_reason: 'refusal', stop_sequence: null });
  });

  it('streams reasoning, text and two tool calls as blocks opened and closed in turn', () => {
    const stream = new MessageEventStream('alias', [], 12);
    const events = [
      ...stream.chunk(chunk({ role: 'assistant', content: '' })),
      ...stream.chunk(chunk({ reasoning_content: 'hmm' })),
      ...stream.chunk(chunk({ content: 'Let me look.' })),
      ...stream.chunk(chunk({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'a', arguments: '' } }] })),
      ...stream.chunk(chunk({ tool_calls: [{ index: 0, function: { arguments: '{"x":1}' } }] })),
      ...stream.chunk(chunk({ tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'b', arguments: '{}' } }] })),
      ...stream.chunk(chunk({}, 'tool_calls')),
      ...stream.chunk({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [], usage: { prompt_tokens: 20, completion_tokens: 8, total_tokens: 28 } }),
      ...stream.end(),
    ];
    assert.equal(events[0]!.type, 'message_start');
    assert.equal((events[0]!.message as { usage: { input_tokens: number } }).usage.input_tokens, 12);
    assert.deepEqual(events.slice(1).map((e) => (e.type === 'content_block_start' ? `start ${e.index} ${(e.content_block as { type: string }).type}` : e.type === 'content_block_delta' ? `delta ${e.index} ${(e.delta as { type: string }).type}` : e.type === 'content_block_stop' ? `stop ${e.index}` : e.type)), [
      'start 0 thinking', 'delta 0 thinking_delta', 'stop 0',
      'start 1 text', 'delta 1 text_delta', 'stop 1',
      'start 2 tool_use', 'delta 2 input_json_delta', 'stop 2',
      'start 3 tool_use', 'delta 3 input_json_delta', 'stop 3',
      'message_delta', 'message_stop',
    ]);
    assert.deepEqual(events.at(-2), { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { input_tokens: 20, output_tokens: 8, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 } });
  });
});
