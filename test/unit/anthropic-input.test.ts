import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chatMessagesOf } from '../../src/anthropic/messages-input.ts';

describe('Anthropic requests as chat messages', () => {
  it('puts tool results first, then the turn\'s other blocks and the images tools returned; leaves thinking with Anthropic', () => {
    const messages = chatMessagesOf({
      model: 'm',
      system: [{ type: 'text', text: 'one' }, { type: 'text', text: 'two', cache_control: { type: 'ephemeral' } }],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Look' }, { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' }, title: 'a.pdf' }] },
        { role: 'assistant', content: [{ type: 'thinking', thinking: 'hm', signature: 's' }, { type: 'tool_use', id: 't1', name: 'shot', input: {} }, { type: 'tool_use', id: 't2', name: 'read', input: { p: 1 } }] },
        { role: 'user', content: [
          { type: 'tool_result', tool_use_id: 't1', content: [{ type: 'text', text: 'here' }, { type: 'image', source: { type: 'url', url: 'https://example.com/s.png' } }] },
          { type: 'tool_result', tool_use_id: 't2', content: 'text' },
          { type: 'text', text: 'And?' },
        ] },
        { role: 'system', content: [{ type: 'text', text: 'env' }] },
      ],
    });
    assert.deepEqual(messages, [
      { role: 'system', content: 'one\n\ntwo' },
      { role: 'user', content: [{ type: 'text', text: 'Look' }, { type: 'file', file: { file_data: 'data:application/pdf;base64,JVBERi0=', filename: 'a.pdf' } }] },
      { role: 'assistant', content: null, tool_calls: [{ id: 't1', type: 'function', function: { name: 'shot', arguments: '{}' } }, { id: 't2', type: 'function', function: { name: 'read', arguments: '{"p":1}' } }] },
      { role: 'tool', tool_call_id: 't1', content: 'here' },
      { role: 'tool', tool_call_id: 't2', content: 'text' },
      { role: 'user', content: [{ type: 'text', text: 'And?' }, { type: 'image_url', image_url: { url: 'https://example.com/s.png' } }] },
      { role: 'system', content: 'env' },
    ]);
  });
});
