import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { startFakeChatUpstream, type FakeChatUpstream } from './fakes/openai-chat-upstream.ts';
import { startFakeResponsesUpstream, type FakeResponsesUpstream } from './fakes/openai-responses-upstream.ts';
import { RESPONSES_MODEL, writeResponsesCatalog } from './support/agent-clients.ts';
import { startTestServer, tempDataDir, type TestServer } from './support/server.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const EXEC_COMMAND = { type: 'function', name: 'exec_command', description: 'Runs a command in a PTY', strict: false, parameters: { type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'], additionalProperties: false } };
const NAMESPACE = {
  type: 'namespace',
  name: 'multi_agent_v1',
  description: 'Tools for spawning and managing sub-agents.',
  tools: [
    { type: 'function', name: 'spawn_agent', description: 'Spawn an agent', strict: false, parameters: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] } },
    { type: 'function', name: 'close_agent', description: 'Close an agent', strict: false, parameters: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] } },
  ],
};
const APPLY_PATCH = { type: 'custom', name: 'apply_patch', description: 'Edit files with a patch', format: { type: 'grammar', syntax: 'lark', definition: 'start: "*** Begin Patch" /.+/s' } };
/** Tools only an upstream's own Responses API runs, with the type each is named by (`mcp` tools the gateway runs itself: test/mcp-agent.test.ts). */
const HOSTED_TOOLS = [
  { type: 'web_search', external_web_access: false },
  { type: 'local_shell' },
  { type: 'code_interpreter', container: { type: 'auto' } },
  { type: 'image_generation' },
  { type: 'file_search', vector_store_ids: ['vs_1'] },
];
const TOOLS = [EXEC_COMMAND, NAMESPACE, APPLY_PATCH, ...HOSTED_TOOLS];

/** A conversation as Codex sends it: developer messages, items with ids, an encrypted reasoning item, calls of every kind and their outputs. */
function codexInput(lastUserText: string): Json[] {
  return [
    { type: 'message', id: 'msg_dev1', role: 'developer', content: [{ type: 'input_text', text: 'You are a coding agent.' }] },
    { type: 'message', id: 'msg_user1', role: 'user', content: [{ type: 'input_text', text: 'list the files' }] },
    { type: 'reasoning', id: 'rs_1', summary: [], content: null, encrypted_content: 'SECRET-REASONING-BLOB' },
    { type: 'function_call', id: 'fc_1', status: 'completed', call_id: 'call_1', name: 'exec_command', arguments: '{"cmd":"ls"}' },
    { type: 'function_call_output', id: 'fco_1', call_id: 'call_1', output: 'Output:\nREADME.md' },
    { type: 'custom_tool_call', id: 'ctc_1', status: 'completed', call_id: 'call_2', name: 'apply_patch', input: '*** Begin Patch\n*** End Patch' },
    { type: 'custom_tool_call_output', call_id: 'call_2', output: 'Done!' },
    { type: 'local_shell_call', id: 'lsc_1', call_id: 'call_3', status: 'completed', action: { type: 'exec', command: ['ls', '-l'], env: {} } },
    { type: 'local_shell_call_output', id: 'lsc_1', output: 'total 0' },
    { type: 'web_search_call', id: 'ws_1', status: 'completed', action: { type: 'search', query: 'gengate' } },
    { type: 'message', id: 'msg_asst1', role: 'assistant', content: [{ type: 'output_text', text: 'There is a README.', annotations: [] }] },
    { type: 'message', role: 'system', content: 'Keep answers short.' },
    { role: 'user', content: lastUserText },
  ];
}

/** A request body as Codex CLI shapes it, with a field no version of the API has. */
function codexBody(model: string, lastUserText: string, stream: boolean): Json {
  return {
    model,
    input: codexInput(lastUserText),
    tools: TOOLS,
    tool_choice: 'auto',
    parallel_tool_calls: true,
    reasoning: { summary: 'auto' },
    store: false,
    stream,
    include: ['reasoning.encrypted_content'],
    prompt_cache_key: 'cache-key-1',
    text: { verbosity: 'low' },
    client_metadata: { session_id: 's-1', turn_id: 't-1' },
    x_field_from_the_future: { anything: true },
  };
}

/** The dropped tools and items the warnings header names for codexBody (tool type, or item type at its index). */
const DROPPED = ['tools[3] (web_search)', 'tools[4] (local_shell)', 'tools[5] (code_interpreter)', 'tools[6] (image_generation)', 'tools[7] (file_search)', 'input[2] (reasoning)', 'input[9] (web_search_call)'];

/** The events of a streamed answer, parsed from its text (`event:` + `data:` frames). */
function eventsOf(text: string): Json[] {
  return text.split('\n\n').filter(Boolean).map((frame) => {
    const event = /^event: (.+)$/m.exec(frame)?.[1];
    const data = JSON.parse(/^data: (.+)$/m.exec(frame)![1]!);
    assert.equal(data.type, event, 'the event name is the data\'s type');
    return data;
  });
}

function assertSequenced(events: Json[]): void {
  assert.deepEqual(events.map((e) => e.sequence_number), events.map((_e, i) => i));
}

/** The usage rows (requests, input tokens, output tokens) of the token's user by model, once `calls` calls are in the ledger. */
async function usageByModel(srv: TestServer, token: string, calls: number): Promise<Record<string, number[]>> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const rows: Json[] = ((await (await srv.fetch('/v1/usage?group_by=model', { token })).json()) as Json).rows;
    if (rows.reduce((n, row) => n + row.requests, 0) >= calls || Date.now() > deadline) return Object.fromEntries(rows.map((row) => [row.key, [row.requests, row.input_tokens, row.output_tokens]]));
    await delay(20);
  }
}

describe('Responses API with agent-client requests, on the local engine', () => {
  let srv: TestServer;
  let client: OpenAI;

  before(async () => {
    srv = await startTestServer();
    client = new OpenAI({ baseURL: `${srv.url}/openai/v1`, apiKey: await srv.tokenFor('codex-user'), maxRetries: 0 });
  });
  after(async () => srv?.close());

  it('answers a Codex-shaped request (every tool type, every item type, unknown fields) and names what it dropped', async () => {
    const { data, response } = await client.responses.create(codexBody('gpt-4.1-mini', 'hello agent', false)).withResponse();
    assert.equal(data.status, 'completed');
    assert.match(data.output_text, /^You said: hello agent/);
    assert.equal((data as Json).store, false);
    const warnings = response.headers.get('x-gengate-warnings') ?? '';
    for (const dropped of DROPPED) assert.ok(warnings.includes(dropped), `${dropped} in ${warnings}`);
    assert.ok(!/exec_command|spawn_agent|apply_patch|input\[(0|1|3|4|5|6|7|8|10|11|12)\]/.test(warnings), warnings);
    assert.equal(response.headers.get('x-gengate-model'), 'gpt-4.1-mini');
  });

  it('streams a call of a namespace\'s function as a function_call item naming its namespace, with item events and usage', async () => {
    const stream = await client.responses.create({ model: 'gpt-4.1-mini', input: [{ role: 'developer', content: 'be brief' }, { role: 'user', content: 'spawn_agent {"message":"fix the tests"}' }], tools: TOOLS as Json, stream: true, store: false });
    const events: Json[] = [];
    for await (const event of stream) events.push(event);
    assertSequenced(events);
    // A run of argument deltas (the model's chunks) counts once.
    const types = events.map((e) => e.type).filter((type, i, all) => type !== all[i - 1]);
    assert.deepEqual(types, ['response.created', 'response.in_progress', 'response.output_item.added', 'response.function_call_arguments.delta', 'response.function_call_arguments.done', 'response.output_item.done', 'response.completed']);
    const item = events.at(-2).item;
    assert.equal(item.type, 'function_call');
    assert.equal(item.name, 'spawn_agent');
    assert.equal(item.namespace, 'multi_agent_v1');
    assert.deepEqual(JSON.parse(item.arguments), { message: 'fix the tests' });
    assert.equal(events[2].item.call_id, item.call_id);
    const completed = events.at(-1).response;
    assert.deepEqual(completed.output, [item]);
    assert.ok(completed.usage.input_tokens > 0 && completed.usage.output_tokens > 0);
  });

  it('calls a custom tool as a custom_tool_call with its text input, streamed and not, and reads its output back', async () => {
    const said = 'apply_patch *** Begin Patch';
    const stream = await client.responses.create({ model: 'gpt-4.1-mini', input: said, tools: [APPLY_PATCH] as Json, stream: true });
    const events: Json[] = [];
    for await (const event of stream) events.push(event);
    assertSequenced(events);
    assert.deepEqual(events.map((e) => e.type).slice(2, -1), ['response.output_item.added', 'response.custom_tool_call_input.delta', 'response.custom_tool_call_input.done', 'response.output_item.done']);
    const item = events.at(-2).item;
    assert.deepEqual({ type: item.type, name: item.name, input: item.input }, { type: 'custom_tool_call', name: 'apply_patch', input: said });
    assert.equal(events.find((e) => e.type === 'response.custom_tool_call_input.done').input, said);

    const whole = await client.responses.create({ model: 'gpt-4.1-mini', input: said, tools: [APPLY_PATCH] as Json });
    assert.equal(whole.output[0]!.type, 'custom_tool_call');
    const answered = await client.responses.create({
      model: 'gpt-4.1-mini',
      tools: [APPLY_PATCH] as Json,
      input: [{ role: 'user', content: said }, { ...(whole.output[0] as Json) }, { type: 'custom_tool_call_output', call_id: (whole.output[0] as Json).call_id, output: 'Done!' }],
    });
    assert.equal(answered.output_text, 'Tool results: apply_patch returned Done!');
  });

  it('still refuses what is wrong in an item it knows, naming the field', async () => {
    const res = await srv.fetch('/openai/v1/responses', { method: 'POST', token: (client.apiKey as string), json: { model: 'gpt-4.1-mini', input: [{ type: 'function_call_output', output: 'x' }] } });
    assert.equal(res.status, 400);
    const body: Json = await res.json();
    assert.equal(body.error.param, 'input[0].call_id');
  });
});

describe('Responses API passed through to an upstream that serves it', () => {
  let fake: FakeResponsesUpstream;
  let chat: FakeChatUpstream;
  let srv: TestServer;
  let token: string;
  let dir: string;

  before(async () => {
    fake = await startFakeResponsesUpstream();
    chat = await startFakeChatUpstream();
    dir = tempDataDir();
    srv = await startTestServer({
      CATALOG_PATH: writeResponsesCatalog(dir),
      GENGATE_CONFIG: JSON.stringify({
        providers: { openai: { base_url: fake.url, retry: { attempts: 0 } }, deepseek: { base_url: chat.url, retry: { attempts: 0 } } },
        models: { [RESPONSES_MODEL.alias]: { fallbacks: ['deepseek-chat'] } },
      }),
    });
    token = await srv.tokenFor('passer');
  });
  after(async () => {
    await srv?.close();
    await fake?.close();
    await chat?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('sends the request as it came with only the model replaced, and relays the answer\'s bytes', async () => {
    const sent = codexBody(RESPONSES_MODEL.alias, 'hello upstream', false);
    const res = await srv.fetch('/openai/v1/responses', { method: 'POST', token, json: sent });
    const text = await res.text();
    assert.equal(res.status, 200, text);
    const received = fake.requests.at(-1)!;
    assert.equal(received.path, '/v1/responses');
    assert.equal(received.raw, JSON.stringify({ ...sent, model: RESPONSES_MODEL.upstream }));
    assert.equal(text, fake.sent.at(-1));
    assert.equal(res.headers.get('x-gengate-provider'), 'openai');
    assert.equal(res.headers.get('x-gengate-warnings'), null);
    assert.match(JSON.parse(text).output[0].content[0].text, /^Hello from the Responses upstream: hello upstream/);
  });

  it('relays the events\' bytes of a stream, and the ledger counts the usage of response.completed', async () => {
    const before = (await usageByModel(srv, token, 1))[RESPONSES_MODEL.alias] ?? [0, 0, 0];
    const sent = codexBody(RESPONSES_MODEL.alias, 'run `ls` please', true);
    const res = await srv.fetch('/openai/v1/responses', { method: 'POST', token, json: sent });
    const text = await res.text();
    assert.equal(res.status, 200, text);
    assert.equal(text, fake.sent.at(-1));
    assert.equal(fake.requests.at(-1)!.raw, JSON.stringify({ ...sent, model: RESPONSES_MODEL.upstream }));
    const events = eventsOf(text);
    const completed = events.at(-1);
    assert.equal(completed.type, 'response.completed');
    assert.deepEqual(completed.response.output.map((item: Json) => item.type), ['reasoning', 'function_call']);
    const usage = completed.response.usage;
    const after = await usageByModel(srv, token, before[0]! + 1);
    // The ledger's input tokens are the uncached ones.
    assert.deepEqual(after[RESPONSES_MODEL.alias], [before[0]! + 1, before[1]! + usage.input_tokens - usage.input_tokens_details.cached_tokens, before[2]! + usage.output_tokens]);
  });

  it('serves the openai client: a streamed turn with a reasoning item, and a second turn sending the encrypted reasoning back', async () => {
    const client = new OpenAI({ baseURL: `${srv.url}/openai/v1`, apiKey: token, maxRetries: 0 });
    const input: Json[] = [{ role: 'developer', content: 'You run commands.' }, { role: 'user', content: 'run `echo hi` now' }];
    const stream = await client.responses.create({ model: RESPONSES_MODEL.alias, input, tools: [EXEC_COMMAND] as Json, stream: true, store: false, include: ['reasoning.encrypted_content'] });
    const events: Json[] = [];
    for await (const event of stream) events.push(event);
    const output = events.at(-1).response.output;
    assert.equal(output[0].encrypted_content, 'encrypted-by-upstream-' + fake.requests.length);
    assert.deepEqual(JSON.parse(output[1].arguments), { cmd: 'echo hi' });

    const second = await client.responses.create({ model: RESPONSES_MODEL.alias, input: [...input, ...output, { type: 'function_call_output', call_id: output[1].call_id, output: 'Output:\nhi' }], tools: [EXEC_COMMAND] as Json, store: false });
    assert.equal(second.output_text, 'Tool output: hi');
    assert.equal(fake.requests.at(-1)!.body.input[2].encrypted_content, output[0].encrypted_content);
  });

  it('ends a stream the upstream broke off with an error event numbered after the relayed events', async () => {
    fake.cutNextStream(3);
    const res = await srv.fetch('/openai/v1/responses', { method: 'POST', token, json: { model: RESPONSES_MODEL.alias, input: 'hello', stream: true } });
    const events = eventsOf(await res.text());
    assert.deepEqual(events.map((e) => e.type), ['response.created', 'response.in_progress', 'response.output_item.added', 'error']);
    assertSequenced(events);
    assert.equal(events[3].code, 'upstream_error');
  });

  it('moves to the fallback model when the upstream fails, translated for it and saying what it dropped', async () => {
    const asked = fake.requests.length;
    fake.failNext(500);
    const res = await srv.fetch('/openai/v1/responses', { method: 'POST', token, json: codexBody(RESPONSES_MODEL.alias, 'fall back', false) });
    const body: Json = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.equal(fake.requests.length, asked + 1);
    assert.equal(res.headers.get('x-gengate-model'), 'deepseek-chat');
    assert.match(res.headers.get('x-gengate-warnings') ?? '', /tools\[3\] \(web_search\) dropped/);
    assert.equal(body.output[0].content[0].text, 'Echo: fall back');
    assert.equal(chat.requests.at(-1)!.body.model, 'deepseek-chat');
  });

  it('answers the upstream\'s refusal in the OpenAI error shape', async () => {
    fake.failNext(400);
    const res = await srv.fetch('/openai/v1/responses', { method: 'POST', token, json: { model: RESPONSES_MODEL.alias, input: 'x' } });
    assert.equal(res.status, 400);
    const body: Json = await res.json();
    assert.match(body.error.message, /fake failure 400/);
  });
});

describe('Responses API translated for a chat-completions-only upstream', () => {
  let fake: FakeChatUpstream;
  let srv: TestServer;
  let client: OpenAI;

  before(async () => {
    fake = await startFakeChatUpstream();
    srv = await startTestServer({ GENGATE_CONFIG: JSON.stringify({ providers: { deepseek: { base_url: fake.url, retry: { attempts: 0 } } } }) });
    client = new OpenAI({ baseURL: `${srv.url}/openai/v1`, apiKey: await srv.tokenFor('translator'), maxRetries: 0 });
  });
  after(async () => {
    await srv?.close();
    await fake?.close();
  });

  it('sends functions, namespace functions by their names and custom tools with one input argument; drops hosted tools and reasoning, naming them', async () => {
    const { data, response } = await client.responses.create(codexBody('deepseek-chat', 'hello chat', false)).withResponse();
    assert.equal(data.output_text, 'Echo: hello chat');
    const warnings = response.headers.get('x-gengate-warnings') ?? '';
    for (const dropped of DROPPED) assert.ok(warnings.includes(dropped), `${dropped} in ${warnings}`);

    const sent = fake.requests.at(-1)!;
    assert.equal(sent.path, '/v1/chat/completions');
    const body = sent.body;
    assert.deepEqual(body.tools.map((t: Json) => t.function.name), ['exec_command', 'spawn_agent', 'close_agent', 'apply_patch']);
    const patch = body.tools[3].function;
    assert.deepEqual(patch.parameters, { type: 'object', properties: { input: { type: 'string', description: 'the tool\'s input, as free text' } }, required: ['input'], additionalProperties: false });
    assert.match(patch.description, /\*\*\* Begin Patch/);
    assert.ok(!JSON.stringify(body).includes('SECRET-REASONING-BLOB'), 'encrypted reasoning never leaves the gateway');
    for (const field of ['store', 'include', 'prompt_cache_key', 'client_metadata', 'x_field_from_the_future', 'input', 'reasoning']) assert.equal(body[field], undefined, field);
    assert.deepEqual(body.messages.map((m: Json) => m.role), ['developer', 'user', 'assistant', 'tool', 'assistant', 'tool', 'assistant', 'tool', 'assistant', 'system', 'user']);
    assert.deepEqual([2, 4, 6].map((i) => body.messages[i].tool_calls.map((c: Json) => [c.id, c.function.name, c.function.arguments])), [
      [['call_1', 'exec_command', '{"cmd":"ls"}']],
      [['call_2', 'apply_patch', JSON.stringify({ input: '*** Begin Patch\n*** End Patch' })]],
      [['call_3', 'local_shell', JSON.stringify({ type: 'exec', command: ['ls', '-l'], env: {} })]],
    ]);
    assert.deepEqual([3, 5, 7].map((i) => [body.messages[i].tool_call_id, body.messages[i].content]), [['call_1', 'Output:\nREADME.md'], ['call_2', 'Done!'], ['call_3', 'total 0']]);
  });

  it('streams the target\'s calls back as the caller declared them: custom_tool_call, and function_call with its namespace', async () => {
    fake.script({ kind: 'tool_call', name: 'apply_patch', arguments: JSON.stringify({ input: '*** Begin Patch\n*** End Patch' }) }, { kind: 'tool_call', name: 'close_agent', arguments: '{"id":"a1"}' });
    const custom = await client.responses.create(codexBody('deepseek-chat', 'patch it', true) as OpenAI.Responses.ResponseCreateParamsStreaming).withResponse();
    assert.match(custom.response.headers.get('x-gengate-warnings') ?? '', /tools\[3\] \(web_search\)/);
    const events: Json[] = [];
    for await (const event of custom.data) events.push(event);
    assertSequenced(events);
    const item = events.find((e) => e.type === 'response.output_item.done').item;
    assert.deepEqual({ type: item.type, name: item.name, input: item.input }, { type: 'custom_tool_call', name: 'apply_patch', input: '*** Begin Patch\n*** End Patch' });
    assert.ok(events.at(-1).response.usage.input_tokens > 0);

    const stream = await client.responses.create(codexBody('deepseek-chat', 'close it', true) as OpenAI.Responses.ResponseCreateParamsStreaming);
    const second: Json[] = [];
    for await (const event of stream) second.push(event);
    assert.deepEqual(second.map((e) => e.type).filter((t) => t.startsWith('response.output_item')), ['response.output_item.added', 'response.output_item.done']);
    const call = second.find((e) => e.type === 'response.output_item.done').item;
    assert.deepEqual({ type: call.type, name: call.name, namespace: call.namespace, arguments: call.arguments }, { type: 'function_call', name: 'close_agent', namespace: 'multi_agent_v1', arguments: '{"id":"a1"}' });
  });
});

/** Whether this process may create a network namespace (root, or user namespaces allowed). */
function netnsSkip(): string | false {
  const probe = spawnSync('unshare', ['-n', 'sh', '-c', 'ip link set lo up'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) return `unshare -n is not available here (${probe.error?.message ?? probe.stderr.trim()}): the Codex CLI test needs a loopback-only network namespace`;
  return false;
}

describe('Codex CLI (codex exec) through the gateway, offline in a network namespace', { skip: netnsSkip() }, () => {
  let result: Json;

  before(async () => {
    const script = fileURLToPath(new URL('./support/codex-netns-run.ts', import.meta.url));
    const tsx = fileURLToPath(new URL('../node_modules/.bin/tsx', import.meta.url));
    const child = spawn('unshare', ['-n', 'sh', '-c', `ip link set lo up && exec "${tsx}" "${script}"`], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d));
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    const line = stdout.split('\n').find((l) => l.startsWith('RESULT '));
    assert.ok(line, `no result from the Codex run (exit ${code}): ${stderr.slice(-2000)}`);
    result = JSON.parse(line.slice('RESULT '.length));
  });

  const run = (name: string): Json => result.runs.find((r: Json) => r.name === name);
  const assertAnswered = (name: string, answer: RegExp) => {
    const { code, stdout, stderr } = run(name);
    assert.equal(code, 0, `${name}: ${stderr.slice(-1500)}`);
    assert.match(stdout, answer);
  };

  it('answers through an OpenAI Responses upstream, which receives Codex\'s request as it came', () => {
    assertAnswered('responses-plain', /Hello from the Responses upstream: say hello/);
    const body = result.responsesRequests[0].body;
    assert.equal(body.model, RESPONSES_MODEL.upstream);
    assert.equal(body.stream, true);
    assert.equal(body.store, false);
    assert.deepEqual(body.include, ['reasoning.encrypted_content']);
    assert.equal(typeof body.prompt_cache_key, 'string');
    assert.equal(typeof body.client_metadata, 'object');
    assert.ok(body.input.some((item: Json) => item.role === 'developer'));
    const types = body.tools.map((t: Json) => t.type);
    assert.ok(types.includes('namespace') && types.includes('web_search') && body.tools.some((t: Json) => t.name === 'exec_command'), JSON.stringify(types));
  });

  it('runs a shell command the Responses upstream asked for and answers from its output, sending the encrypted reasoning back', () => {
    assertAnswered('responses-shell', /Tool output: gengate-42/);
    const followUp = result.responsesRequests[2].body;
    const [reasoning, call, output] = followUp.input.slice(-3);
    assert.equal(reasoning.type, 'reasoning');
    assert.match(reasoning.encrypted_content, /^encrypted-by-upstream-/);
    assert.equal(call.type, 'function_call');
    assert.equal(call.name, 'exec_command');
    assert.equal(output.type, 'function_call_output');
    assert.equal(output.call_id, call.call_id);
    assert.match(output.output, /Output:\ngengate-42/);
  });

  it('answers through a chat-completions-only upstream, which gets Codex\'s tools as functions and no hosted tool', () => {
    assertAnswered('chat-plain', /Hello from the chat upstream/);
    const body = result.chatRequests[0].body;
    const names = body.tools.map((t: Json) => t.function.name);
    assert.ok(names.includes('exec_command') && names.includes('spawn_agent'), names.join());
    assert.ok(body.tools.every((t: Json) => t.type === 'function'));
    assert.equal(body.messages[0].role, 'developer');
  });

  it('runs a shell command the chat upstream asked for and answers from its output', () => {
    assertAnswered('chat-shell', /Tool output: gengate-42/);
    const messages = result.chatRequests[2].body.messages;
    const call = messages.at(-2).tool_calls[0];
    assert.equal(call.function.name, 'exec_command');
    assert.equal(messages.at(-1).tool_call_id, call.id);
    assert.match(messages.at(-1).content, /gengate-42/);
  });

  it('counts every Codex call in the ledger under its model', () => {
    const rows = Object.fromEntries(result.usage.rows.map((row: Json) => [row.key, row]));
    assert.equal(rows[RESPONSES_MODEL.alias].requests, 3);
    assert.equal(rows['deepseek-chat'].requests, 3);
    assert.ok(rows[RESPONSES_MODEL.alias].input_tokens > 0 && rows['deepseek-chat'].input_tokens > 0);
    assert.equal(rows[RESPONSES_MODEL.alias].errors + rows['deepseek-chat'].errors, 0);
  });
});
