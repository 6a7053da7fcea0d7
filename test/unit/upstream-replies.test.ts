/**
 * Upstream replies read through the adapters' reply schemas, without a server: a well-formed
 * reply maps to what the adapter uses, a reply of another shape is one upstream failure naming
 * the provider and the first path that differs.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError } from '../../src/core/errors.ts';
import { AnthropicStream, completionOf } from '../../src/providers/anthropic/mapping.ts';
import { resultState, submittedRequest } from '../../src/providers/bfl/mapping.ts';
import { resultLinks } from '../../src/providers/fal/mapping.ts';
import { createdTaskId, taskState } from '../../src/providers/kling/mapping.ts';
import { rerankResult } from '../../src/providers/cohere/mapping.ts';
import { asyncState } from '../../src/providers/minimax/mapping.ts';
import { TaskFailedError, type RerankRequest } from '../../src/providers/spec.ts';

/** Asserts that `read` fails the call with a 502 upstream_error of exactly `message`. */
function assertCallFails(read: () => unknown, message: string): void {
  assert.throws(read, (err: unknown) => {
    assert.ok(err instanceof ApiError, `an ApiError, not ${String(err)}`);
    assert.equal(err.code, 'upstream_error');
    assert.equal(err.status, 502);
    assert.equal(err.message, message);
    return true;
  });
}

/** Asserts that `read` fails the task with exactly `message`. */
function assertTaskFails(read: () => unknown, message: string): void {
  assert.throws(read, (err: unknown) => {
    assert.ok(err instanceof TaskFailedError, `a TaskFailedError, not ${String(err)}`);
    assert.equal(err.message, message);
    return true;
  });
}

describe('kling replies', () => {
  const task = (data: Record<string, unknown>) => ({ code: 0, message: 'SUCCEED', request_id: 'r1', data });

  it('a finished task gives its video URL and the units charged', () => {
    const reply = task({ task_id: 't1', task_status: 'succeed', final_unit_deduction: '2.5', task_result: { videos: [{ id: 'v', url: 'https://cdn.example/v.mp4', duration: '5' }] } });
    assert.deepEqual(taskState(reply), { state: 'succeeded', videoUrl: 'https://cdn.example/v.mp4', units: 2.5 });
    assert.deepEqual(taskState(task({ task_status: 'processing', task_result: null })), { state: 'running', progress: 50, message: 'generating' });
    assert.equal(createdTaskId(task({ task_id: 't1', task_status: 'submitted' })), 't1');
  });

  it('a reply of another shape fails naming the path; a code other than 0 is Kling\'s refusal', () => {
    assertTaskFails(() => taskState(task({ task_status: 5 })), 'kling: unexpected reply: /data/task_status must be string');
    assertTaskFails(() => taskState(task({ task_status: 'succeed', task_result: { videos: [{ url: 7 }] } })), 'kling: unexpected reply: /data/task_result/videos/0/url must be string');
    assertTaskFails(() => createdTaskId({ code: 0, message: 'SUCCEED' }), 'kling: unexpected reply: /data is missing');
    assertTaskFails(() => createdTaskId({ code: 1303, message: 'parallel task over resource pack limit' }), 'kling answered the video request with code 1303');
  });
});

describe('bfl replies', () => {
  it('a submit gives the id, the polling URL and the credits; a Ready result the sample and seed', () => {
    assert.deepEqual(submittedRequest({ id: 'r1', polling_url: 'https://api.eu1.bfl.ai/v1/get_result?id=r1', cost: 4 }), { id: 'r1', polling_url: 'https://api.eu1.bfl.ai/v1/get_result?id=r1', credits: 4 });
    assert.deepEqual(resultState({ id: 'r1', status: 'Ready', result: { sample: 'https://delivery.example/s.png', seed: 42 }, progress: null, details: null }), { state: 'succeeded', sampleUrl: 'https://delivery.example/s.png', seed: 42 });
    assert.deepEqual(resultState({ id: 'r1', status: 'Pending', result: null, progress: 0.4 }), { state: 'running', progress: 40, message: 'generating' });
  });

  it('a reply of another shape fails naming the path', () => {
    assertTaskFails(() => submittedRequest({ id: 'r1', polling_url: '/v1/get_result?id=r1' }), 'bfl: unexpected reply: /polling_url must match pattern "^https?://"');
    assertTaskFails(() => resultState({ status: 'Ready', result: { sample: 'https://delivery.example/s.png', seed: '42' } }), 'bfl: unexpected reply: /result/seed must be number');
  });
});

describe('fal replies', () => {
  const file = (name: string) => ({ url: `https://cdn.example/${name}`, content_type: 'model/gltf-binary', file_name: name, file_size: 1 });

  it('a result gives the model, the base model of model_urls and the preview', () => {
    assert.deepEqual(resultLinks({ model_mesh: file('m.glb'), model_urls: { glb: file('m.glb'), base_model: file('b.glb') }, rendered_image: 'https://cdn.example/r.webp' }), [
      { role: 'model', type: '3d', url: 'https://cdn.example/m.glb', fileName: 'm.glb' },
      { role: 'base_model', type: '3d', url: 'https://cdn.example/b.glb', fileName: 'b.glb' },
      { role: 'preview', type: 'image', url: 'https://cdn.example/r.webp' },
    ]);
  });

  it('a reply of another shape fails naming the path', () => {
    assertTaskFails(() => resultLinks({ model_mesh: file('m.glb'), model_urls: { pbr_model: { url: 3 } } }), 'fal: unexpected reply: /model_urls/pbr_model/url must be string');
    assertTaskFails(() => resultLinks({ rendered_image: file('r.webp') }), 'fal: unexpected reply: /model_mesh is missing');
  });
});

describe('minimax replies', () => {
  const ok = { status_code: 0, status_msg: 'success' };

  it('a finished long-text task gives its file id, an integer id kept as text', () => {
    assert.deepEqual(asyncState({ task_id: 95157322514444, status: 'Success', file_id: 95157322514496, base_resp: ok }), { state: 'succeeded', fileId: '95157322514496' });
    assert.deepEqual(asyncState({ task_id: 95157322514444, status: 'Processing', base_resp: ok }), { state: 'running' });
  });

  it('a reply of another shape fails naming the path', () => {
    assertTaskFails(() => asyncState({ status: 'Success', file_id: 1.5, base_resp: ok }), 'minimax: unexpected reply: /file_id must be integer');
    assertTaskFails(() => asyncState({ status: 'Success', file_id: 1 }), 'minimax: unexpected reply: /base_resp is missing');
  });
});

describe('anthropic answers', () => {
  const message = (content: unknown[]) => ({ id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-x', content, stop_reason: 'tool_use', usage: { input_tokens: 3, output_tokens: 5 } });

  it('an answer maps to a chat completion with its text and tool calls', () => {
    const completion = completionOf(message([{ type: 'text', text: 'Let me look.' }, { type: 'tool_use', id: 'toolu_1', name: 'lookup', input: { q: 'x' } }]), 'anthropic');
    assert.equal(completion.id, 'msg_1');
    assert.equal(completion.model, 'claude-x');
    assert.deepEqual(completion.choices[0]!.message.content, 'Let me look.');
    assert.deepEqual(completion.choices[0]!.message.tool_calls, [{ id: 'toolu_1', type: 'function', function: { name: 'lookup', arguments: '{"q":"x"}' } }]);
    assert.equal(completion.choices[0]!.finish_reason, 'tool_calls');
  });

  it('an answer or a stream event of another shape is a 502 naming the path', () => {
    assertCallFails(() => completionOf(message([{ type: 'text', text: 'ok' }, { type: 'text', text: 7 }]), 'anthropic'), 'anthropic: unexpected reply: /content/1/text must be string');
    assertCallFails(() => completionOf({ ...message([]), type: 'error' }, 'anthropic'), 'anthropic: unexpected reply: /type must be "message"');
    const stream = new AnthropicStream('anthropic');
    assertCallFails(() => stream.push(JSON.stringify({ type: 'message_start', message: { id: 'msg_1', model: 3 } })), 'anthropic: unexpected reply: /message/model must be string');
  });
});

describe('rerank answers', () => {
  const request = { documents: ['a', 'b'] } as unknown as RerankRequest;

  it('an answer gives the results by score and the usage', () => {
    assert.deepEqual(rerankResult({ results: [{ index: 0, relevance_score: 0.1 }, { index: 1, relevance_score: 0.9 }], meta: { billed_units: { search_units: 1 } } }, request, 'cohere'), {
      results: [{ index: 1, relevance_score: 0.9 }, { index: 0, relevance_score: 0.1 }],
      usage: { search_units: 1 },
    });
  });

  it('an answer of another shape is a 502 naming the path', () => {
    assertCallFails(() => rerankResult({ results: [{ index: 0, relevance_score: '0.1' }] }, request, 'cohere'), 'cohere: unexpected reply: /results/0/relevance_score must be number');
  });
});
