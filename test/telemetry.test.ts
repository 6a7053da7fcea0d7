import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startFakeChatUpstream, type FakeChatUpstream } from './fakes/openai-chat-upstream.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { eventually } from './support/wait.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  kind: number;
  status: { code?: number };
  attributes: Record<string, unknown>;
  resource: Record<string, unknown>;
}

/** OTLP SpanKind numbers (opentelemetry-proto trace.proto). */
const KIND = { internal: 1, server: 2, client: 3, consumer: 5 };

function valueOf(value: Json): unknown {
  if ('stringValue' in value) return value.stringValue;
  if ('intValue' in value) return Number(value.intValue);
  if ('doubleValue' in value) return value.doubleValue;
  if ('boolValue' in value) return value.boolValue;
  return value;
}

function attributesOf(list: Json[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map((a: Json) => [a.key, valueOf(a.value)]));
}

/** An OTLP/HTTP receiver on 127.0.0.1 that keeps the spans of every JSON export request. */
async function startOtlpReceiver(): Promise<{ url: string; spans: ReceivedSpan[]; paths: string[]; close(): Promise<void> }> {
  const spans: ReceivedSpan[] = [];
  const paths: string[] = [];
  const server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      paths.push(`${req.method} ${req.url} ${req.headers['content-type']}`);
      const body = JSON.parse(Buffer.concat(parts).toString('utf8')) as Json;
      for (const rs of body.resourceSpans ?? []) {
        const resource = attributesOf(rs.resource?.attributes);
        for (const ss of rs.scopeSpans ?? []) {
          for (const s of ss.spans ?? []) {
            spans.push({ traceId: s.traceId, spanId: s.spanId, parentSpanId: s.parentSpanId || undefined, name: s.name, kind: s.kind, status: s.status ?? {}, attributes: attributesOf(s.attributes), resource });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, spans, paths, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';
const API_KEY_ENV = 'TELEMETRY_TEST_OPENAI_KEY';

describe('OpenTelemetry traces', () => {
  let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>;
  let fake: FakeChatUpstream;
  let srv: TestServer;
  let token: string;
  const saved = { ...process.env };

  before(async () => {
    receiver = await startOtlpReceiver();
    fake = await startFakeChatUpstream();
    // The standard OTel variables: the exporter and the batch processor read them themselves.
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;
    process.env.OTEL_BSP_SCHEDULE_DELAY = '50';
    process.env.OTEL_SERVICE_NAME = 'gengate-under-test';
    process.env[API_KEY_ENV] = 'sk-telemetry';
    srv = await startTestServer({
      GENGATE_CONFIG: JSON.stringify({ providers: { openai: { base_url: fake.url, api_key_env: API_KEY_ENV, timeout_ms: 10_000 }, volcengine: { adapter: 'local' } } }),
    });
    token = await srv.tokenFor('tracy');
  });
  after(async () => {
    await srv?.close();
    await fake?.close();
    await receiver?.close();
    for (const key of ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_BSP_SCHEDULE_DELAY', 'OTEL_SERVICE_NAME', API_KEY_ENV]) {
      if (saved[key] === undefined) delete process.env[key];
      else process.env[key] = saved[key];
    }
  });

  it('traces a chat call: server span under the caller\'s trace, admission, the GenAI chat span, its routing attempt and the upstream call', async () => {
    const res = await srv.fetch('/v1/chat/completions', {
      method: 'POST',
      token,
      headers: { traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01` },
      json: { model: 'gpt-4.1', stream: false, messages: [{ role: 'user', content: 'Hello there, upstream' }] },
    });
    assert.equal(res.status, 200);
    const completion: Json = await res.json();

    const inTrace = () => receiver.spans.filter((s) => s.traceId === TRACE_ID);
    const server = await eventually('the server span', () => inTrace().find((s) => s.kind === KIND.server));
    const client = await eventually('the upstream call span', () => inTrace().find((s) => s.kind === KIND.client && s.attributes['http.request.method'] === 'POST'));
    const spans = inTrace();
    assert.equal(server.name, 'POST /v1/chat/completions');
    assert.equal(server.parentSpanId, CALLER_SPAN, 'the server span continues the caller\'s trace');
    assert.equal(server.attributes['http.route'], '/v1/chat/completions');
    assert.equal(server.attributes['http.response.status_code'], 200);
    assert.equal(server.resource['service.name'], 'gengate-under-test');

    const admission = spans.find((s) => s.name === 'gengate.admission');
    assert.ok(admission, 'an admission span');
    assert.equal(admission.parentSpanId, server.spanId);
    assert.equal(admission.attributes['enduser.id'], 'tracy');

    const chat = spans.find((s) => s.name === 'chat gpt-4.1');
    assert.ok(chat, `a chat span among ${spans.map((s) => s.name).join(', ')}`);
    assert.equal(chat.kind, KIND.client);
    assert.equal(chat.parentSpanId, server.spanId);
    assert.equal(chat.attributes['gen_ai.operation.name'], 'chat');
    assert.equal(chat.attributes['gen_ai.request.model'], 'gpt-4.1');
    assert.equal(chat.attributes['gen_ai.response.model'], 'gpt-4.1');
    assert.equal(chat.attributes['gen_ai.provider.name'], 'openai');
    assert.equal(chat.attributes['gen_ai.usage.input_tokens'], completion.usage.prompt_tokens);
    assert.equal(chat.attributes['gen_ai.usage.output_tokens'], completion.usage.completion_tokens);
    assert.ok(completion.usage.completion_tokens > 0);

    const attempt = spans.find((s) => s.name.startsWith('routing attempt openai/'));
    assert.ok(attempt, 'a routing attempt span');
    assert.equal(attempt.parentSpanId, chat.spanId);
    assert.equal(attempt.attributes['gengate.routing.attempt'], 1);
    assert.equal(attempt.attributes['gen_ai.provider.name'], 'openai');

    assert.equal(client.parentSpanId, attempt.spanId);
    assert.equal(client.attributes['url.full'], `${fake.url}/chat/completions`);
    assert.equal(client.attributes['http.response.status_code'], 200);
    assert.ok(receiver.paths.every((p) => p.startsWith('POST /v1/traces application/json')), receiver.paths.join('; '));
  });

  it('traces a task: its run, on the worker after the answer, joins the submitting request\'s trace', async () => {
    const res = await srv.fetch('/v1/images/generations', { method: 'POST', token, headers: { 'x-async': '1' }, json: { prompt: 'a red fox', model: 'seedream-4.0', size: '64x48' } });
    assert.equal(res.status, 200, await res.clone().text());
    const { task_id: taskId }: Json = await res.json();

    const run = await eventually('the task run span', () => receiver.spans.find((s) => s.attributes['gengate.task.id'] === taskId));
    const submit = receiver.spans.find((s) => s.kind === KIND.server && s.traceId === run.traceId);
    assert.ok(submit, 'the submitting request\'s server span is in the same trace');
    assert.equal(submit.name, 'POST /v1/images/generations');
    assert.equal(run.parentSpanId, submit.spanId);
    assert.equal(run.kind, KIND.consumer);
    assert.equal(run.name, 'task run images.generations');
    assert.equal(run.attributes['gen_ai.operation.name'], 'generate_content');
    assert.equal(run.attributes['gen_ai.request.model'], 'seedream-4.0');
    assert.equal(typeof run.attributes['gen_ai.provider.name'], 'string');
    assert.notEqual(run.status.code, 2, 'a successful run is not marked failed');
    const attempts = receiver.spans.filter((s) => s.parentSpanId === run.spanId && s.name.startsWith('routing attempt '));
    assert.equal(attempts.length, 1, 'the run\'s routing attempt is its child');
  });

  it('marks a failed upstream call and its chat span as errors', async () => {
    fake.script({ kind: 'status', status: 400, message: 'bad request here' });
    const res = await srv.fetch('/v1/chat/completions', { method: 'POST', token, json: { model: 'gpt-4.1', stream: false, messages: [{ role: 'user', content: 'fail please' }] } });
    assert.equal(res.status, 400);
    const server = await eventually('the failed call\'s server span', () => receiver.spans.find((s) => s.name === 'POST /v1/chat/completions' && s.attributes['http.response.status_code'] === 400));
    const chat = await eventually('its chat span', () => receiver.spans.find((s) => s.traceId === server.traceId && s.name === 'chat gpt-4.1'));
    assert.equal(chat.status.code, 2);
    const client = receiver.spans.find((s) => s.traceId === server.traceId && s.kind === KIND.client && s.attributes['http.response.status_code'] === 400);
    assert.ok(client, 'the upstream call span carries the 400');
    assert.equal(client.status.code, 2);
  });
});
