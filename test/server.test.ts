import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import path from 'node:path';
import { startTestServer, type TestServer } from './support/server.ts';
import { freePort } from './support/free-port.ts';

interface ErrorBody {
  error: { message: string; type: string; code: string; param: string | null };
}

async function errorOf(res: Response): Promise<ErrorBody['error']> {
  assert.match(res.headers.get('content-type') ?? '', /application\/json/);
  const body = (await res.json()) as ErrorBody;
  assert.deepEqual(Object.keys(body), ['error']);
  assert.equal(typeof body.error.message, 'string');
  assert.ok('param' in body.error, 'param is always present');
  return body.error;
}

describe('HTTP server', () => {
  let srv: TestServer;
  before(async () => {
    srv = await startTestServer({ GENGATE_CONFIG: JSON.stringify({ limits: { max_json_bytes: 2048 } }) });
  });
  after(() => srv.close());

  it('answers /healthz with the store in use', async () => {
    const res = await srv.fetch('/healthz');
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { status: 'ok', database: 'sqlite' });
  });

  it('answers an unknown route with a 404 in the contract shape', async () => {
    const res = await srv.fetch('/v1/nothing-here', { token: srv.adminToken });
    assert.equal(res.status, 404);
    const error = await errorOf(res);
    assert.equal(error.type, 'not_found_error');
    assert.equal(error.code, 'route_not_found');
  });

  it('answers malformed JSON with 400 invalid_json', async () => {
    const res = await srv.fetch('/admin/tokens', {
      method: 'POST', token: srv.adminToken, headers: { 'content-type': 'application/json' }, body: '{"user_id": "a",',
    });
    assert.equal(res.status, 400);
    const error = await errorOf(res);
    assert.equal(error.type, 'invalid_request_error');
    assert.equal(error.code, 'invalid_json');
  });

  it('answers a wrong content type with 400 unsupported_content_type', async () => {
    const res = await srv.fetch('/admin/tokens', {
      method: 'POST', token: srv.adminToken, headers: { 'content-type': 'text/plain' }, body: 'user_id=a',
    });
    assert.equal(res.status, 400);
    const error = await errorOf(res);
    assert.equal(error.type, 'invalid_request_error');
    assert.equal(error.code, 'unsupported_content_type');
  });

  it('answers an oversized body with 413', async () => {
    const res = await srv.fetch('/admin/tokens', { method: 'POST', token: srv.adminToken, json: { user_id: 'a', name: 'x'.repeat(4096) } });
    assert.equal(res.status, 413);
    const error = await errorOf(res);
    assert.equal(error.type, 'invalid_request_error');
    assert.equal(error.code, 'request_too_large');
  });

  it('names the field in validation errors: missing, wrong type, unknown', async () => {
    let res = await srv.fetch('/admin/tokens', { method: 'POST', token: srv.adminToken, json: { name: 'n' } });
    assert.equal(res.status, 400);
    let error = await errorOf(res);
    assert.equal(error.code, 'missing_parameter');
    assert.equal(error.param, 'user_id');

    res = await srv.fetch('/admin/tokens', { method: 'POST', token: srv.adminToken, json: { user_id: 42 } });
    assert.equal(res.status, 400);
    error = await errorOf(res);
    assert.equal(error.code, 'invalid_parameter');
    assert.equal(error.param, 'user_id');

    res = await srv.fetch('/admin/config', { method: 'PUT', token: srv.adminToken, json: { callback_retry_delays_ms: [1, 'x'] } });
    assert.equal(res.status, 400);
    error = await errorOf(res);
    assert.equal(error.param, 'callback_retry_delays_ms[1]');

    res = await srv.fetch('/admin/tokens', { method: 'POST', token: srv.adminToken, json: { user_id: 'a', color: 'red' } });
    assert.equal(res.status, 400);
    error = await errorOf(res);
    assert.equal(error.code, 'unsupported_parameter');
    assert.equal(error.param, 'color');
  });

  it('answers a write sent no body where its route wants one with 400 naming body, on every route', async () => {
    const token = await srv.tokenFor('no-body');
    const doc = (await (await srv.fetch('/openapi.json')).json()) as { paths: Record<string, Record<string, { requestBody?: { required?: boolean } }>> };
    const routes = Object.entries(doc.paths).flatMap(([path, ops]) => Object.entries(ops).filter(([, op]) => op.requestBody?.required).map(([method]) => ({ method: method.toUpperCase(), path })));
    assert.ok(routes.some((r) => r.path === '/v1/images/edits'), 'the listing finds the routes');
    for (const route of routes) {
      const what = `${route.method} ${route.path}`;
      const res = await srv.fetch(route.path.replace(/\{\w+\}/g, 'x'), { method: route.method, token: route.path.startsWith('/admin/') ? srv.adminToken : token });
      const { error } = (await res.json()) as { error: { param?: string | null; message: string; details?: { param?: string } } };
      assert.equal(res.status, 400, `${what}: ${res.status} ${JSON.stringify(error)}`);
      // Anthropic's error shape has no param: its message names the field.
      if (route.path.startsWith('/anthropic/')) assert.match(error.message, /^body /, `${what}: ${JSON.stringify(error)}`);
      // The asset registry names the field in details.
      else assert.equal(error.param ?? error.details?.param, 'body', `${what}: ${JSON.stringify(error)}`);
    }
  });

  it('echoes a given request id and makes one up otherwise', async () => {
    let res = await srv.fetch('/healthz', { headers: { 'x-request-id': 'abc-123' } });
    assert.equal(res.headers.get('x-request-id'), 'abc-123');
    res = await srv.fetch('/healthz');
    assert.match(res.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
  });

  it('exposes Prometheus metrics by route and status with a latency histogram', async () => {
    await srv.fetch('/v1/models', { token: srv.adminToken });
    await srv.fetch('/v1/nothing-here', { token: srv.adminToken });
    const res = await srv.fetch('/metrics');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /text\/plain/);
    const text = await res.text();
    assert.match(text, /gengate_http_requests_total\{method="GET",route="\/v1\/models",status="200"\} [1-9]/);
    assert.match(text, /gengate_http_requests_total\{method="GET",route="unmatched",status="404"\} [1-9]/);
    assert.match(text, /gengate_http_request_duration_seconds_bucket\{le="0.005",method="GET",route="\/v1\/models"\}/);
    assert.match(text, /gengate_process_resident_memory_bytes/);

    // Three more calls of one route: its count and histogram grow by three, buckets cumulative up to +Inf.
    const figures = async () => {
      const lines = (await (await srv.fetch('/metrics')).text()).split('\n');
      const value = (prefix: string) => Number(lines.find((l) => l.startsWith(prefix))?.split(' ').pop());
      const buckets = lines.filter((l) => l.startsWith('gengate_http_request_duration_seconds_bucket{') && l.includes('route="/v1/models"}')).map((l) => Number(l.split(' ').pop()));
      return { requests: value('gengate_http_requests_total{method="GET",route="/v1/models",status="200"}'), count: value('gengate_http_request_duration_seconds_count{method="GET",route="/v1/models"}'), sum: value('gengate_http_request_duration_seconds_sum{method="GET",route="/v1/models"}'), buckets };
    };
    const before = await figures();
    for (let i = 0; i < 3; i++) await srv.fetch('/v1/models', { token: srv.adminToken });
    const after = await figures();
    assert.equal(after.requests, before.requests + 3);
    assert.equal(after.count, before.count + 3);
    assert.ok(after.sum > before.sum);
    assert.equal(after.buckets.length, 16);
    assert.equal(after.buckets.at(-1), after.count);
    assert.deepEqual([...after.buckets].sort((a, b) => a - b), after.buckets, 'cumulative buckets');
  });

  it('publishes an OpenAPI 3.1 document generated from the route schemas, and a docs page', async () => {
    const res = await srv.fetch('/openapi.json');
    assert.equal(res.status, 200);
    const doc = (await res.json()) as { openapi: string; paths: Record<string, Record<string, { requestBody?: unknown; parameters?: { name: string }[] }>> };
    assert.equal(doc.openapi, '3.1.0');
    for (const route of ['/admin/tokens', '/admin/config', '/v1/models', '/v1/models/list', '/v1/files/upload', '/healthz']) {
      assert.ok(doc.paths[route], `${route} is documented`);
    }
    assert.ok(doc.paths['/admin/tokens'].post.requestBody, 'body schema of POST /admin/tokens is in the document');
    assert.deepEqual(doc.paths['/v1/models/list'].get.parameters?.map((p) => p.name), ['type']);
    const docs = await srv.fetch('/docs/');
    assert.equal(docs.status, 200);
    assert.match(await docs.text(), /swagger/i);
  });

  it('answers malformed or cut-off multipart bodies with 400, promptly, on every multipart route', async () => {
    const token = await srv.tokenFor('multipart');
    const boundary = 'XyZ';
    const cutOff = `--${boundary}\r\nContent-Disposition: form-data; name="tags"\r\n\r\ninput\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="FIELD"; filename="a.png"\r\nContent-Type: image/png\r\n\r\npartial bytes`;
    for (const [path, field] of [['/v1/files/upload', 'file'], ['/api/assets', 'file'], ['/upload/image', 'image']] as const) {
      const bodies: [string, string][] = [
        [`multipart/form-data; boundary=${boundary}`, cutOff.replace('FIELD', field)],
        ['multipart/form-data', 'no boundary given'],
        [`multipart/form-data; boundary=${boundary}`, `--${boundary}\r\ngarbage without headers`],
      ];
      for (const [contentType, body] of bodies) {
        const res = await srv.fetch(path, { method: 'POST', token, headers: { 'content-type': contentType }, body, signal: AbortSignal.timeout(5000) });
        assert.equal(res.status, 400, `${path} ${contentType}: ${await res.clone().text()}`);
        await res.body?.cancel();
      }
    }
    const leftovers = fs.readdirSync(path.join(srv.dataDir, 'blobs', '.tmp'));
    assert.deepEqual(leftovers, [], 'no half-written files are left behind');
  });

  it('refuses NUL characters in JSON and URLs with 400, whatever the store', async () => {
    let res = await srv.fetch('/admin/tokens', { method: 'POST', token: srv.adminToken, headers: { 'content-type': 'application/json' }, body: '{"user_id": "a\\u0000b"}' });
    assert.equal(res.status, 400);
    assert.equal((await errorOf(res)).code, 'invalid_parameter');
    res = await srv.fetch('/admin/tokens', { method: 'POST', token: srv.adminToken, headers: { 'content-type': 'application/json' }, body: '{"user_id": "a\\\\u0000b"}' });
    assert.equal(res.status, 201, 'an escaped backslash followed by u0000 is plain text');
    res = await srv.fetch('/v1/models/list?type=a%00b', { token: srv.adminToken });
    assert.equal(res.status, 400);
    assert.equal((await errorOf(res)).code, 'invalid_parameter');
  });
});

describe('server close', () => {
  it('does not wait out the keep-alive timeout of a connection whose reply ends after the close began', async () => {
    const srv = await startTestServer();
    const token = await srv.tokenFor('closer');
    const form = new FormData();
    form.append('file', new Blob([randomBytes(8 * 1024 * 1024)], { type: 'image/png' }), 'big.png');
    const uploaded = await srv.fetch('/v1/files/upload', { method: 'POST', token, body: form });
    assert.equal(uploaded.status, 200);
    const { data } = (await uploaded.json()) as { data: { url: string } };
    // A keep-alive download left unread: its reply is under way when the close begins.
    const agent = new http.Agent({ keepAlive: true });
    const res = await new Promise<http.IncomingMessage>((resolve, reject) => http.get(data.url, { agent }, resolve).on('error', reject));
    assert.equal(res.statusCode, 200);
    res.pause();
    const started = Date.now();
    const closed = srv.close().then(() => Date.now() - started);
    await delay(300);
    let bytes = 0;
    res.on('data', (chunk: Buffer) => (bytes += chunk.length));
    res.resume();
    await once(res, 'end');
    assert.equal(bytes, 8 * 1024 * 1024);
    // The connection is idle now and kept alive by the client; the keep-alive timeout is 72 s.
    const tookMs = await closed;
    agent.destroy();
    assert.ok(tookMs < 10_000, `the close took ${tookMs} ms`);
  });

  it('does not wait for connections that never sent a request, and lets a request under way finish', async () => {
    const realtimePort = await freePort();
    const srv = await startTestServer({ REALTIME_PORT: String(realtimePort), LOCAL_ENGINE_MIN_DURATION_MS: '1000' });
    const token = await srv.tokenFor('preconnect');
    // Opened and left silent, as a client's preconnect or a pool's spare socket: one on each port.
    const unused = [Number(new URL(srv.url).port), realtimePort].map((port) => net.connect(port, '127.0.0.1'));
    await Promise.all(unused.map((socket) => once(socket, 'connect')));
    const ended = unused.map((socket) => once(socket, 'close'));
    // A chat stream of the local engine, paced over about a second: under way when the close begins.
    const res = await srv.fetch('/v1/chat/completions', { method: 'POST', token, json: { model: 'gpt-4.1', stream: true, messages: [{ role: 'user', content: 'a long answer, please' }] } });
    assert.equal(res.status, 200);
    const started = Date.now();
    const closed = srv.close().then(() => Date.now() - started);
    const body = await res.text();
    assert.match(body, /data: \[DONE\]/);
    // The close would wait on the silent connections for minutes: after 10 s the test ends them itself and fails.
    const tookMs = await Promise.race([closed, delay(10_000, undefined, { ref: false })]);
    for (const socket of unused) socket.destroy();
    await Promise.all(ended);
    assert.ok(tookMs !== undefined, 'the close waited on connections that never sent a request');
    await closed;
  });
});
