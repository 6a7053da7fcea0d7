import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseLine } from '../../src/batches/batch-input.ts';

const EP = '/v1/embeddings' as const;
const line = (value: unknown) => JSON.stringify(value);

describe('a batch input line', () => {
  it('is a request when it is {custom_id, method: POST, url: the endpoint, body: object}', () => {
    assert.deepEqual(parseLine(line({ custom_id: 'a', method: 'POST', url: EP, body: { input: 'x' } }), 1, EP), { kind: 'request', customId: 'a', body: { input: 'x' } });
  });

  it('is blank when it holds only spaces', () => {
    assert.deepEqual(parseLine('  \t', 4, EP), { kind: 'blank' });
  });

  it('is malformed, for the error file, when it is not JSON or not a request object', () => {
    const cases: [string, string | null, string][] = [
      ['{nope', null, 'invalid_json_line'],
      ['[1, 2]', null, 'invalid_json_line'],
      [line({ method: 'POST', url: EP, body: {} }), null, 'invalid_request'],
      [line({ custom_id: '', method: 'POST', url: EP, body: {} }), null, 'invalid_request'],
      [line({ custom_id: 'b', method: 'GET', url: EP, body: {} }), 'b', 'invalid_request'],
      [line({ custom_id: 'c', method: 'POST', body: {} }), 'c', 'invalid_request'],
      [line({ custom_id: 'd', method: 'POST', url: EP, body: [1] }), 'd', 'invalid_request'],
      [line({ custom_id: 'e', method: 'POST', url: EP }), 'e', 'invalid_request'],
    ];
    for (const [text, customId, code] of cases) {
      const parsed = parseLine(text, 7, EP);
      assert.equal(parsed.kind, 'malformed', text);
      assert.deepEqual(parsed.kind === 'malformed' && [parsed.customId, parsed.code], [customId, code], text);
      assert.match(parsed.kind === 'malformed' ? parsed.message : '', /^line 7/);
    }
  });

  it('fails the whole batch when its url is another endpoint', () => {
    const parsed = parseLine(line({ custom_id: 'a', method: 'POST', url: '/v1/chat/completions', body: {} }), 3, EP);
    assert.equal(parsed.kind, 'batch_error');
    assert.deepEqual(parsed.kind === 'batch_error' && [parsed.error.code, parsed.error.line, parsed.error.param], ['mismatched_url', 3, 'url']);
  });
});
