import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { dropSchema, postgresEnv, redisEnv, startTestServer, type TestServer } from './support/server.ts';
import { startFakeChatUpstream, type FakeChatUpstream } from './fakes/openai-chat-upstream.ts';
import { agentEvents, runItems, sseData } from './support/sse.ts';
import { eventually } from './support/wait.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const WAIT_MS = 15_000;

/** Providers of the test deployments: qwen models through the fake upstream, the image and chat models of `openai` and the 3D models of `tripo` on the local engine. */
function config(fake: FakeChatUpstream, agent: Record<string, unknown> = {}): string {
  return JSON.stringify({
    providers: {
      qwen: { base_url: fake.url, timeout_ms: 10_000, retry: { attempts: 0 } },
      openai: { adapter: 'local' },
      tripo: { adapter: 'local' },
    },
    agent,
  });
}

function assertApiError(res: Response, body: Json, status: number, code: string, param: string | null): void {
  assert.equal(res.status, status, JSON.stringify(body));
  assert.equal(body.error.code, code, JSON.stringify(body));
  assert.equal(body.error.param, param, JSON.stringify(body));
}

/** A realtime-gateway session of a user, ready for commands; `command` answers command.accepted or command.rejected. */
async function realtimeSession(srv: TestServer, token: string): Promise<{ command(eventName: string, payload: Json): Promise<Json>; close(): void }> {
  const ws = new WebSocket(`${srv.url.replace(/^http/, 'ws')}/realtime?channel=draw&client_id=agent-test`);
  const inbox: Json[] = [];
  const waiters = new Set<() => boolean>();
  ws.on('message', (data) => {
    inbox.push(JSON.parse(String(data)));
    for (const check of [...waiters]) check();
  });
  /** The next message of one of these types, taken from the inbox. */
  const next = (...types: string[]): Promise<Json> => new Promise((resolve, reject) => {
    const check = () => {
      const at = inbox.findIndex((m) => types.includes(m.type));
      if (at < 0) return false;
      clearTimeout(timer);
      waiters.delete(check);
      resolve(inbox.splice(at, 1)[0]);
      return true;
    };
    const timer = setTimeout(() => {
      waiters.delete(check);
      reject(new Error(`no ${types.join(' or ')} from the realtime gateway within ${WAIT_MS} ms`));
    }, WAIT_MS);
    if (!check()) waiters.add(check);
  });
  await new Promise<void>((resolve, reject) => ws.once('open', resolve).once('error', reject));
  await next('session.challenge');
  ws.send(JSON.stringify({ type: 'session.initialize', protocolVersion: '1.0', client: 'agent-test' }));
  await next('session.initialized');
  ws.send(JSON.stringify({ type: 'session.authenticate', method: 'bearer', credential: `Bearer ${token}` }));
  await next('session.ready');
  return {
    async command(eventName, payload) {
      ws.send(JSON.stringify({ messageType: 'command', eventName, payload }));
      return next('command.accepted', 'command.rejected');
    },
    close: () => ws.close(),
  };
}

describe('POST /v1/responses', () => {
  let fake: FakeChatUpstream;
  let srv: TestServer;
  let alice: string;
  let bob: string;
  const respond = (body: Json, token = alice, init: RequestInit = {}) => srv.fetch('/v1/responses', { method: 'POST', token, json: body, ...init });
  /** The messages the fake upstream received in its latest request. */
  const lastUpstreamMessages = () => fake.requests[fake.requests.length - 1].body.messages;

  before(async () => {
    fake = await startFakeChatUpstream();
    srv = await startTestServer({ GENGATE_CONFIG: config(fake) });
    alice = await srv.tokenFor('alice');
    bob = await srv.tokenFor('bob');
  });
  after(async () => {
    await srv?.close();
    await fake?.close();
  });

  it('streams plain text input in base agent mode: the request id in a header and the first event, the answer as a message item, then [DONE]', async () => {
    const res = await respond({ model: 'gpt-4.1', input: 'Hello agent' });
    const events = await agentEvents(res);
    const requestId = res.headers.get('x-request-id');
    assert.ok(requestId);
    assert.deepEqual(events[0], { type: 'agent_updated_stream_event', agent: { name: 'Assistant' }, request_id: requestId });
    const deltas = events.filter((e) => e.type === 'raw_model_stream_event').map((e) => e.data.delta).join('');
    const items = runItems(events);
    assert.equal(items.length, 1);
    assert.equal(items[0].type, 'message_output_item');
    assert.equal(events[events.length - 1].name, 'message_output_created');
    const { rawItem } = items[0];
    assert.deepEqual({ ...rawItem, id: undefined }, {
      type: 'message', id: undefined, role: 'assistant', status: 'completed',
      content: [{ type: 'output_text', text: 'You said: Hello agent (message 1 of this conversation, answered by the local model gpt-4.1)' }],
    });
    assert.match(rawItem.id, /^msg_/);
    assert.equal(deltas, rawItem.content[0].text, 'the deltas add up to the message');
  });

  it('echoes a given requestId in the header and the first event', async () => {
    const res = await respond({ model: 'gpt-4.1', input: 'Hi', requestId: 'trace-123' });
    const events = await agentEvents(res);
    assert.equal(res.headers.get('x-request-id'), 'trace-123');
    assert.equal(events[0].request_id, 'trace-123');
  });

  it('takes every input form and sends the model the same messages', async () => {
    const messages = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'What is a quaternion?' },
      { role: 'assistant', content: 'A number system.' },
      { role: 'user', content: [{ type: 'text', text: 'Tell me more' }] },
    ];
    await agentEvents(await respond({ model: 'qwen3-max', input: 'Just text' }));
    assert.deepEqual(lastUpstreamMessages(), [{ role: 'user', content: 'Just text' }]);

    await agentEvents(await respond({ model: 'qwen3-max', input: messages }));
    assert.deepEqual(lastUpstreamMessages(), messages);

    const events = await agentEvents(await respond({ model: 'qwen3-max', input: JSON.stringify(messages) }));
    assert.deepEqual(lastUpstreamMessages(), messages, 'a JSON string holding messages is read as the messages');
    assert.equal(runItems(events).at(-1).rawItem.content[0].text, 'Echo: Tell me more');

    await agentEvents(await respond({ model: 'qwen3-max', input: '[not json] but text' }));
    assert.deepEqual(lastUpstreamMessages(), [{ role: 'user', content: '[not json] but text' }], 'text that only starts with a bracket stays text');
  });

  it('appends the images shortcut to the last user message as image_url parts', async () => {
    const images = ['https://example.com/a.png', 'https://example.com/b.png'];
    await agentEvents(await respond({ model: 'qwen-vl-max', input: 'What is in these?', images }));
    assert.deepEqual(lastUpstreamMessages(), [{
      role: 'user',
      content: [
        { type: 'text', text: 'What is in these?' },
        { type: 'image_url', image_url: { url: images[0] } },
        { type: 'image_url', image_url: { url: images[1] } },
      ],
    }]);

    await agentEvents(await respond({
      model: 'qwen-vl-max',
      input: [{ role: 'user', content: [{ type: 'text', text: 'first' }, { type: 'image_url', image_url: { url: 'https://example.com/c.png' } }] }, { role: 'assistant', content: 'ok' }],
      images: [images[0]],
    }));
    assert.deepEqual(lastUpstreamMessages()[0].content, [
      { type: 'text', text: 'first' },
      { type: 'image_url', image_url: { url: 'https://example.com/c.png' } },
      { type: 'image_url', image_url: { url: images[0] } },
    ], 'image parts and the shortcut together, on the last user message');

    // A model without image understanding reads them as links.
    await agentEvents(await respond({ model: 'qwen3-max', input: 'Describe', images: [images[0]] }));
    assert.deepEqual(lastUpstreamMessages()[0].content, [{ type: 'text', text: 'Describe' }, { type: 'text', text: `[image: ${images[0]}]` }]);
  });

  it('accepts multipart/form-data with JSON-serialized input, userMessage and skill_options, and attaches file parts', async () => {
    const form = new FormData();
    form.append('model', 'qwen-vl-max');
    form.append('input', JSON.stringify([{ role: 'user', content: 'Look at this' }]));
    form.append('userMessage', JSON.stringify({ id: 'm1', text: 'Look at this' }));
    form.append('skill_options', JSON.stringify({ ephemeral_skill: { name: 'Eye', description: 'Sees', instructions: 'Describe pictures.' } }));
    form.append('stream', 'false');
    form.append('file', new Blob([PNG], { type: 'image/png' }), 'dot.png');
    const res = await srv.fetch('/v1/responses', { method: 'POST', token: alice, body: form });
    const body = await res.json() as Json;
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.equal(body.output_text, 'Echo: Look at this <image_url>');
    const [system, user] = lastUpstreamMessages();
    assert.equal(system.role, 'system');
    assert.match(system.content, /## Skill: Eye\nSees\n\n### Instructions\nDescribe pictures\./);
    assert.equal(user.content[0].text, 'Look at this');
    const url = user.content[1].image_url.url;
    assert.ok(url.startsWith(`${srv.url}/files/`), url);
    assert.deepEqual(Buffer.from(await (await fetch(url)).arrayBuffer()), PNG, 'the attached file is served at its URL');
  });

  it('refuses bad multipart JSON and bad bodies with 400 naming the field, before any stream', async () => {
    const form = (fields: Record<string, string>) => {
      const data = new FormData();
      for (const [name, value] of Object.entries(fields)) data.append(name, value);
      return srv.fetch('/v1/responses', { method: 'POST', token: alice, body: data });
    };
    let res = await form({ model: 'gpt-4.1', input: 'hi', skill_options: '{nope' });
    assertApiError(res, await res.json(), 400, 'invalid_parameter', 'skill_options');
    res = await form({ model: 'gpt-4.1', input: 'hi', userMessage: 'not json' });
    assertApiError(res, await res.json(), 400, 'invalid_parameter', 'userMessage');
    res = await form({ model: 'gpt-4.1', input: '[{"role": "user"' });
    assertApiError(res, await res.json(), 400, 'invalid_parameter', 'input');
    res = await form({ model: 'gpt-4.1', input: '[{"role": "robot", "content": "x"}]' });
    assertApiError(res, await res.json(), 400, 'invalid_parameter', 'input[0].role');
    res = await form({ model: 'gpt-4.1', input: 'hi', stream: 'maybe' });
    assertApiError(res, await res.json(), 400, 'invalid_parameter', 'stream');

    res = await respond({ input: 'hi' });
    assertApiError(res, await res.json(), 400, 'missing_parameter', 'model');
    res = await respond({ model: 'gpt-4.1' });
    assertApiError(res, await res.json(), 400, 'missing_parameter', 'input');
    res = await respond({ model: 'gpt-4.1', input: [{ role: 'user', content: [{ type: 'image_url' }] }] });
    assertApiError(res, await res.json(), 400, 'missing_parameter', 'input[0].content[0].image_url');
    res = await respond({ model: 'gpt-4.1', input: JSON.stringify([{ role: 'tool', content: 'x' }]) });
    assertApiError(res, await res.json(), 400, 'invalid_parameter', 'input[0].role');
    res = await respond({ model: 'gpt-4.1', input: 'hi', requestId: 'has spaces' });
    assertApiError(res, await res.json(), 400, 'invalid_parameter', 'requestId');
    res = await respond({ model: 'no-such-model', input: 'hi' });
    assertApiError(res, await res.json(), 404, 'model_not_found', 'model');
    res = await respond({ model: 'gpt-image-1', input: 'hi' });
    assertApiError(res, await res.json(), 400, 'model_capability_mismatch', 'model');
    res = await respond({ model: 'gpt-4.1', input: 'hi', agentId: 'agent_missing' });
    assertApiError(res, await res.json(), 404, 'agent_not_found', 'agentId');
  });

  it('answers stream: false with one body: the output items, the text and the usage', async () => {
    const res = await respond({ model: 'gpt-4.1', input: 'Once', stream: false, requestId: 'plain-1' });
    const body = await res.json() as Json;
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-request-id'), 'plain-1');
    assert.match(body.id, /^resp_/);
    assert.equal(body.object, 'response');
    assert.equal(body.request_id, 'plain-1');
    assert.equal(body.status, 'completed');
    assert.equal(body.mode, 'agent');
    assert.equal(body.output.length, 1);
    assert.equal(body.output[0].type, 'message_output_item');
    assert.equal(body.output_text, body.output[0].rawItem.content[0].text);
    assert.ok(body.usage.input_tokens > 0 && body.usage.output_tokens > 0);
    assert.equal(body.usage.total_tokens, body.usage.input_tokens + body.usage.output_tokens);
  });

  it('keeps the exchange of a conversationId: the next request sends the history first', async () => {
    await agentEvents(await respond({ model: 'qwen3-max', input: 'My name is Ada', conversationId: 'conv-1' }));
    await agentEvents(await respond({ model: 'qwen3-max', input: 'What is my name?', conversationId: 'conv-1' }));
    assert.deepEqual(lastUpstreamMessages(), [
      { role: 'user', content: 'My name is Ada' },
      { role: 'assistant', content: 'Echo: My name is Ada' },
      { role: 'user', content: 'What is my name?' },
    ]);
    await agentEvents(await respond({ model: 'qwen3-max', input: 'Who am I?', conversationId: 'conv-1' }, bob));
    assert.deepEqual(lastUpstreamMessages(), [{ role: 'user', content: 'Who am I?' }], 'conversations are per user');
  });

  it('reports an upstream failure as an error event with code 502, then [DONE]', async () => {
    fake.script({ kind: 'status', status: 500, message: 'upstream exploded' });
    const events = await agentEvents(await respond({ model: 'qwen3-max', input: 'fail please' }));
    const last = events[events.length - 1];
    assert.equal(last.type, 'error');
    assert.equal(last.code, 502);
    assert.equal(typeof last.message, 'string');
  });

  it('cancels a running stream by request id: the upstream call is aborted, the stream ends with an error event and [DONE]', async () => {
    let release = () => {};
    fake.script({ kind: 'hold', afterChunks: 1, release: new Promise<void>((resolve) => (release = resolve)) });
    try {
      const res = await respond({ model: 'qwen3-max', input: 'Count slowly to ten', requestId: 'cancel-me' });
      assert.equal(res.status, 200);
      const stream = sseData(res);
      for (;;) {
        const { value } = await stream.next();
        if (JSON.parse(value!).type === 'raw_model_stream_event') break;
      }
      // Another stream may not take a running request id, and another user cannot cancel it.
      const twin = await respond({ model: 'gpt-4.1', input: 'again', requestId: 'cancel-me' });
      assertApiError(twin, await twin.json(), 409, 'request_already_running', 'requestId');
      const foreign = await srv.fetch('/v1/responses/cancel/cancel-me', { method: 'POST', token: bob });
      assertApiError(foreign, await foreign.json(), 404, 'request_not_found', 'requestId');
      // Request ids are per user: another user's run may use the same one meanwhile.
      const bobs = await agentEvents(await respond({ model: 'gpt-4.1', input: 'mine', requestId: 'cancel-me' }, bob));
      assert.equal(bobs[0].request_id, 'cancel-me');

      const aborted = fake.nextAbort();
      const cancel = await srv.fetch('/v1/responses/cancel/cancel-me', { method: 'POST', token: alice });
      assert.equal(cancel.status, 200);
      assert.deepEqual(await cancel.json(), { request_id: 'cancel-me', cancelled: true });
      const rest: string[] = [];
      for await (const data of stream) rest.push(data);
      assert.equal(rest[rest.length - 1], '[DONE]');
      const error = JSON.parse(rest[rest.length - 2]);
      assert.equal(error.type, 'error');
      assert.equal(error.code, 499);
      assert.equal(error.error_code, 'request_cancelled');
      assert.ok(!rest.some((d) => d !== '[DONE]' && JSON.parse(d).type === 'run_item_stream_event'), 'no answer after the cancel');
      assert.equal((await aborted).body.messages[0].content, 'Count slowly to ten', 'the upstream request was aborted');
    } finally {
      release();
    }
    const again = await srv.fetch('/v1/responses/cancel/cancel-me', { method: 'POST', token: alice });
    assertApiError(again, await again.json(), 404, 'request_not_found', 'requestId');
  });

  it('answers 404 request_not_found for an unknown request id', async () => {
    const res = await srv.fetch('/v1/responses/cancel/never-started', { method: 'POST', token: alice });
    assertApiError(res, await res.json(), 404, 'request_not_found', 'requestId');
  });

  it('runs the built-in tools as the caller\'s tasks: generate_image makes a real PNG and the model reads its URL', async () => {
    const res = await respond({ model: 'gpt-4.1', requestId: 'tool-run-1', input: 'Please generate_image {"prompt": "a red fox in snow", "size": "64x64"}' });
    const items = runItems(await agentEvents(res));
    assert.deepEqual(items.map((i) => i.type), ['tool_call_item', 'tool_call_output_item', 'message_output_item']);
    const [call, output, message] = items;
    assert.equal(call.rawItem.type, 'function_call');
    assert.equal(call.rawItem.name, 'generate_image');
    assert.equal(call.rawItem.status, 'in_progress');
    assert.match(call.rawItem.callId, /^call_/);
    assert.deepEqual(JSON.parse(call.rawItem.arguments), { prompt: 'a red fox in snow', size: '64x64' });
    assert.deepEqual(
      { type: output.rawItem.type, callId: output.rawItem.callId, name: output.rawItem.name, arguments: output.rawItem.arguments, status: output.rawItem.status },
      { type: 'function_call_result', callId: call.rawItem.callId, name: 'generate_image', arguments: call.rawItem.arguments, status: 'completed' },
    );
    assert.equal(output.output, output.rawItem.output);
    const result = JSON.parse(output.rawItem.output);
    assert.equal(result.status, 'success');
    assert.equal(result.model, 'gpt-image-1', 'the first enabled image model');
    const image = await fetch(result.output[0]);
    assert.equal(image.headers.get('content-type'), 'image/png');
    assert.deepEqual(Buffer.from(await image.arrayBuffer()).subarray(0, 8), PNG_SIGNATURE);
    assert.ok(message.rawItem.content[0].text.includes(result.output[0]), 'the model got the tool output');

    const record = await srv.fetch(`/v1/ai/result/${result.task_id}`, { token: alice });
    const task = await record.json() as Json;
    assert.equal(task.queue_status.status, 'success');
    assert.equal(task.queue_status.request_id, 'tool-run-1');
    assert.equal(task.user._id, 'alice');
    assert.equal((await srv.fetch(`/v1/ai/result/${result.task_id}`, { token: bob })).status, 404);
  });

  it('generate_3d goes through the 3D service: its task has a history that /v1/mesh3d/edit/segmentation can edit', async () => {
    const items = runItems(await agentEvents(await respond({ model: 'gpt-4.1', input: 'generate_3d {"prompt": "a small robot", "model": "tripo-v3.1"}' })));
    const output = items.find((i) => i.type === 'tool_call_output_item');
    const result = JSON.parse(output.rawItem.output);
    assert.equal(result.status, 'success', JSON.stringify(result));
    assert.match(result.material_id, /^mat_/);
    assert.match(result.mesh3d_history_id, /^hist_/);

    const seg = await srv.fetch('/v1/mesh3d/edit/segmentation', { method: 'POST', token: alice, json: { history_id: result.mesh3d_history_id, model: 'tripo-segment-v1.0' } });
    const submitted: Json = await seg.json();
    assert.equal(seg.status, 200, JSON.stringify(submitted));
    const record = await eventually('the segmentation task to end', async () => {
      const body: Json = await (await srv.fetch(`/v1/ai/result/${submitted.task_id}`, { token: alice })).json();
      return ['success', 'failed', 'rejected'].includes(body.queue_status.status) ? body : undefined;
    });
    assert.equal(record.queue_status.status, 'success', JSON.stringify(record.queue_status));
    assert.equal(record.generate_info.input.source.history_id, result.mesh3d_history_id);
  });

  it('offers the built-in tools, with JSON-schema parameters, to models that can call tools only', async () => {
    await agentEvents(await respond({ model: 'qwen3-max', input: 'What can you do?' }));
    const { tools, tool_choice: choice } = fake.requests[fake.requests.length - 1].body;
    assert.equal(choice, 'auto');
    assert.deepEqual(tools.map((t: Json) => t.function.name), ['generate_image', 'generate_video', 'generate_music', 'generate_speech', 'generate_3d']);
    for (const tool of tools) {
      assert.equal(tool.type, 'function');
      assert.equal(tool.function.parameters.type, 'object');
      assert.ok(tool.function.parameters.required.length > 0);
    }
    await agentEvents(await respond({ model: 'qwen-vl-max', input: 'And you?' }));
    assert.equal(fake.requests[fake.requests.length - 1].body.tools, undefined, 'qwen-vl-max has no tools_call');
  });

  it('makes generate_video wait for approval by default; a cancel while it waits ends the run', async () => {
    const res = await respond({ model: 'gpt-4.1', requestId: 'video-wait', input: 'generate_video {"prompt": "waves"}' });
    const events: Json[] = [];
    for await (const data of sseData(res)) {
      if (data === '[DONE]') break;
      const event = JSON.parse(data);
      events.push(event);
      if (event.name === 'tool_approval_requested') {
        assert.equal(event.item.rawItem.name, 'generate_video');
        assert.equal((await srv.fetch('/v1/responses/cancel/video-wait', { method: 'POST', token: alice })).status, 200);
      }
    }
    assert.deepEqual(events.map((e) => e.name ?? e.type), ['agent_updated_stream_event', 'tool_called', 'tool_approval_requested', 'error']);
    assert.equal(events[3].code, 499);
    const tasks = await srv.server.services.db.kysely.selectFrom('tasks').select('id').where('request_id', '=', 'video-wait').execute();
    assert.deepEqual(tasks, [], 'the video was never submitted');
  });

  it('hands bad tool arguments and unknown models back to the model as the tool output', async () => {
    let items = runItems(await agentEvents(await respond({ model: 'gpt-4.1', input: 'generate_image {"size": "64x64"}' })));
    assert.match(JSON.parse(items[1].output).message, /invalid arguments: .*prompt/);
    items = runItems(await agentEvents(await respond({ model: 'gpt-4.1', input: 'generate_image {"prompt": "x", "model": "nope"}' })));
    assert.deepEqual(JSON.parse(items[1].output), { status: 'error', message: 'unknown model nope' });
    assert.equal(items[2].type, 'message_output_item', 'the run goes on');
  });
});

describe('POST /v1/responses tool approvals over the realtime gateway', () => {
  let fake: FakeChatUpstream;
  let srv: TestServer;
  let alice: string;
  let bob: string;
  const APPROVAL_TIMEOUT_MS = 3000;

  before(async () => {
    fake = await startFakeChatUpstream();
    srv = await startTestServer({ GENGATE_CONFIG: config(fake, { approval_tools: ['generate_image'], approval_timeout_ms: APPROVAL_TIMEOUT_MS }) });
    alice = await srv.tokenFor('alice');
    bob = await srv.tokenFor('bob');
  });
  after(async () => {
    await srv?.close();
    await fake?.close();
  });

  /** Streams a run that asks for approval; `decide` answers the approval item; answers every event. */
  async function runWithApproval(decide: (approval: Json) => Promise<void>): Promise<Json[]> {
    const res = await srv.fetch('/v1/responses', { method: 'POST', token: alice, json: { model: 'gpt-4.1', input: 'generate_image {"prompt": "a blue square", "size": "32x32"}' } });
    assert.equal(res.status, 200);
    const events: Json[] = [];
    for await (const data of sseData(res)) {
      if (data === '[DONE]') break;
      const event = JSON.parse(data);
      events.push(event);
      if (event.name === 'tool_approval_requested') await decide(event.item);
    }
    return events;
  }

  it('waits for agent.approval: approved runs the tool', async () => {
    const session = await realtimeSession(srv, alice);
    try {
      const events = await runWithApproval(async (approval) => {
        assert.equal(approval.type, 'tool_approval_item');
        assert.match(approval.taskId, /^approval_/);
        assert.equal(approval.rawItem.name, 'generate_image');
        assert.deepEqual(await session.command('agent.approval', { taskId: approval.taskId, approved: true }), { type: 'command.accepted', eventName: 'agent.approval' });
        // Answered: the approval waits no longer.
        const again = await session.command('agent.approval', { taskId: approval.taskId, approved: false });
        assert.deepEqual([again.type, again.reason], ['command.rejected', 'not_awaiting_approval']);
      });
      assert.deepEqual(events.filter((e) => e.type === 'run_item_stream_event').map((e) => e.name), ['tool_called', 'tool_approval_requested', 'tool_output', 'message_output_created']);
      const output = JSON.parse(runItems(events)[2].output);
      assert.equal(output.status, 'success');
      assert.equal(output.output.length, 1);
    } finally {
      session.close();
    }
  });

  it('rejected: the tool does not run, its output says so and the model goes on', async () => {
    const session = await realtimeSession(srv, alice);
    try {
      const events = await runWithApproval(async (approval) => {
        assert.equal((await session.command('agent.approval', { taskId: approval.taskId, approved: false })).type, 'command.accepted');
      });
      const items = runItems(events);
      assert.deepEqual(JSON.parse(items[2].output), { status: 'rejected', message: 'the user rejected generate_image' });
      assert.equal(items[3].type, 'message_output_item');
      assert.match(items[3].rawItem.content[0].text, /rejected/);
    } finally {
      session.close();
    }
  });

  it('counts only the same user\'s answer, and no answer in time is a rejection; a late answer is refused', async () => {
    const session = await realtimeSession(srv, bob);
    const owner = await realtimeSession(srv, alice);
    try {
      const started = Date.now();
      let approvalId = '';
      const events = await runWithApproval(async (approval) => {
        approvalId = approval.taskId;
        const answer = await session.command('agent.approval', { taskId: approval.taskId, approved: true });
        assert.deepEqual([answer.type, answer.eventName, answer.reason], ['command.rejected', 'agent.approval', 'task_not_found']);
      });
      assert.ok(Date.now() - started >= APPROVAL_TIMEOUT_MS - 100, 'the run waited for the timeout');
      assert.deepEqual(JSON.parse(runItems(events)[2].output), { status: 'rejected', message: 'no approval for generate_image came in time' });
      // The run is over: its approval is gone.
      const late = await owner.command('agent.approval', { taskId: approvalId, approved: true });
      assert.deepEqual([late.type, late.reason], ['command.rejected', 'task_not_found']);
    } finally {
      session.close();
      owner.close();
    }
  });

  it('cannot ask without a stream: with stream false a tool that needs approval is rejected at once', async () => {
    const res = await srv.fetch('/v1/responses', { method: 'POST', token: alice, json: { model: 'gpt-4.1', stream: false, input: 'generate_image {"prompt": "x"}' } });
    const body = await res.json() as Json;
    assert.equal(res.status, 200);
    assert.equal(JSON.parse(body.output[1].output).status, 'rejected');
  });
});

describe('POST /v1/responses cancelled while a tool runs', () => {
  let fake: FakeChatUpstream;
  let srv: TestServer;
  let alice: string;

  before(async () => {
    fake = await startFakeChatUpstream();
    // Local tasks take seconds, so the cancel lands while the image is being made (the local
    // model's tool call is paced over the same time first).
    srv = await startTestServer({ GENGATE_CONFIG: config(fake), LOCAL_ENGINE_MIN_DURATION_MS: '8000' });
    alice = await srv.tokenFor('alice');
  });
  after(async () => {
    await srv?.close();
    await fake?.close();
  });

  it('cancels the tool\'s task and ends the stream', async () => {
    const res = await srv.fetch('/v1/responses', { method: 'POST', token: alice, json: { model: 'gpt-4.1', requestId: 'slow-tool', input: 'generate_image {"prompt": "a slow snail"}' } });
    const stream = sseData(res);
    for (;;) {
      const { value } = await stream.next();
      if (JSON.parse(value!).name === 'tool_called') break;
    }
    const { kysely } = srv.server.services.db;
    const task = await eventually('the tool\'s task', () => kysely.selectFrom('tasks').select(['id', 'status']).where('request_id', '=', 'slow-tool').where('status', '=', 'started').executeTakeFirst());
    assert.equal((await srv.fetch('/v1/responses/cancel/slow-tool', { method: 'POST', token: alice })).status, 200);
    const rest: Json[] = [];
    for await (const data of stream) if (data !== '[DONE]') rest.push(JSON.parse(data));
    assert.deepEqual(rest.map((e) => [e.type, e.code]), [['error', 499]]);
    const record = await (await srv.fetch(`/v1/ai/result/${task.id}`, { token: alice })).json() as Json;
    assert.equal(record.queue_status.status, 'cancelled');
  });
});

const pg = await postgresEnv();
const redis = await redisEnv();
const sharedSkip = 'skip' in pg ? pg.skip : 'skip' in redis ? redis.skip : false;

describe('POST /v1/responses across two instances (PostgreSQL and Redis)', { skip: sharedSkip }, () => {
  let fake: FakeChatUpstream;
  let a: TestServer;
  let b: TestServer;
  let alice: string;

  before(async () => {
    if ('skip' in pg || 'skip' in redis) return;
    fake = await startFakeChatUpstream();
    const shared = { ...pg.env, ...redis.env, GENGATE_CONFIG: config(fake, { approval_tools: ['generate_image'] }) };
    a = await startTestServer({ ...shared, INSTANCE_ID: 'agent-a' });
    b = await startTestServer({ ...shared, INSTANCE_ID: 'agent-b' });
    alice = await a.tokenFor('alice');
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await fake?.close();
    if (!('skip' in pg)) await dropSchema(pg.env.DATABASE_SCHEMA);
    if (!('skip' in redis)) await redis.cleanup();
  });

  it('a cancel sent to the other instance stops the stream and its upstream call', async () => {
    let release = () => {};
    fake.script({ kind: 'hold', afterChunks: 1, release: new Promise<void>((resolve) => (release = resolve)) });
    try {
      const res = await a.fetch('/v1/responses', { method: 'POST', token: alice, json: { model: 'qwen3-max', input: 'Wait for it', requestId: 'shared-cancel' } });
      const stream = sseData(res);
      for (;;) {
        const { value } = await stream.next();
        if (JSON.parse(value!).type === 'raw_model_stream_event') break;
      }
      const aborted = fake.nextAbort();
      const cancel = await b.fetch('/v1/responses/cancel/shared-cancel', { method: 'POST', token: alice });
      assert.deepEqual([cancel.status, await cancel.json()], [200, { request_id: 'shared-cancel', cancelled: true }]);
      const rest: string[] = [];
      for await (const data of stream) rest.push(data);
      assert.deepEqual(rest.slice(-2).map((d) => (d === '[DONE]' ? d : JSON.parse(d).code)), [499, '[DONE]']);
      await aborted;
    } finally {
      release();
    }
    const after = await b.fetch('/v1/responses/cancel/shared-cancel', { method: 'POST', token: alice });
    assert.equal(after.status, 404);
  });

  it('an approval given on the other instance\'s realtime gateway reaches the run', async () => {
    const session = await realtimeSession(b, alice);
    try {
      const res = await a.fetch('/v1/responses', { method: 'POST', token: alice, json: { model: 'gpt-4.1', input: 'generate_image {"prompt": "a green circle", "size": "32x32"}' } });
      const events: Json[] = [];
      for await (const data of sseData(res)) {
        if (data === '[DONE]') break;
        const event = JSON.parse(data);
        events.push(event);
        if (event.name === 'tool_approval_requested') {
          // The other instance tells from the shared store that the run waits for this approval.
          assert.equal((await session.command('agent.approval', { taskId: event.item.taskId, approved: true })).type, 'command.accepted');
        }
      }
      assert.equal(JSON.parse(runItems(events)[2].output).status, 'success');
    } finally {
      session.close();
    }
  });
});
