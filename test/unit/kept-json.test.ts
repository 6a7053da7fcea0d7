import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { jsonText, keptJson, keptStringChars } from '../../src/providers/kept-json.ts';

const FIELDS = ['content', 'name', 'arguments'];

/** The same count over the parsed object: every string value of those keys, at any depth. */
function parsedChars(value: unknown): number {
  if (Array.isArray(value)) return value.reduce((sum: number, item) => sum + parsedChars(item), 0);
  if (!value || typeof value !== 'object') return 0;
  let chars = 0;
  for (const [key, item] of Object.entries(value)) chars += FIELDS.includes(key) && typeof item === 'string' ? item.length : parsedChars(item);
  return chars;
}

describe('kept upstream JSON', () => {
  const frames = [
    { id: 'c1', object: 'chat.completion.chunk', model: 'm', choices: [{ index: 0, delta: { role: 'assistant', content: 'Hello, "world"\\n\n\t é 😀 \u0001' }, finish_reason: null }] },
    { id: 'c2', object: 'chat.completion.chunk', model: 'm', choices: [{ index: 0, delta: { content: null, reasoning_content: 'not counted', tool_calls: [{ index: 0, id: 't', type: 'function', function: { name: 'lookup', arguments: '{"content":"x","name":"y"}' } }] }, finish_reason: null }] },
    { id: 'c3', object: 'chat.completion.chunk', model: 'm', choices: [{ index: 0, delta: {}, logprobs: { content: [{ token: 'a', logprob: -1 }] }, finish_reason: 'stop' }] },
  ];

  it('counts the characters of text and tool calls in a frame as its parse would, without parsing it', () => {
    for (const frame of frames) {
      for (const text of [JSON.stringify(frame), JSON.stringify(frame, null, 1), JSON.stringify(frame).replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)]) {
        const kept = keptJson<{ model: string }>(text);
        kept.model = 'alias';
        assert.equal(keptStringChars(kept, FIELDS), parsedChars(frame), text);
        // Still the upstream's text, its model renamed: the count parsed nothing.
        assert.deepEqual(JSON.parse(jsonText(kept)), { ...frame, model: 'alias' });
        assert.equal(keptStringChars(kept, FIELDS), parsedChars(frame));
      }
    }
  });

  it('leaves a parsed or plain value to be counted from its fields', () => {
    const kept = keptJson<{ choices: unknown[] }>(JSON.stringify(frames[0]));
    assert.equal(kept.choices.length, 1);
    assert.equal(keptStringChars(kept, FIELDS), undefined);
    assert.equal(keptStringChars(frames[0]!, FIELDS), undefined);
  });
});
