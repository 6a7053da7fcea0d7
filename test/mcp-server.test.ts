/** /mcp: the gateway's own tools over MCP's Streamable HTTP transport, spoken by the SDK's client. */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { dropSchema, postgresEnv, startTestServer, tempDataDir, type TestServer } from './support/server.ts';
import { eventually } from './support/wait.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

async function connect(srv: TestServer, token: string, protocolVersion?: string, path = '/mcp'): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name: 'test', version: '1' });
  const transport = new StreamableHTTPClientTransport(new URL(srv.url + path), { requestInit: { headers: { authorization: `Bearer ${token}` } } });
  if (protocolVersion) transport.setProtocolVersion(protocolVersion);
  await client.connect(transport);
  return { client, transport };
}

/** A raw initialize POST, to read what the transport answers. */
function initialize(srv: TestServer, token: string | undefined, protocolVersion: string, path = '/mcp'): Promise<Response> {
  return fetch(srv.url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion, capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }),
  });
}

/** The JSON-RPC message of an event-stream answer. */
async function sseMessage(res: Response): Promise<Json> {
  const text = await res.text();
  const data = text.split('\n').find((line) => line.startsWith('data: ') && line.length > 6);
  return JSON.parse(data!.slice(6));
}

function textOf(result: CallToolResult): string {
  return result.content.filter((c) => c.type === 'text').map((c) => (c as { text: string }).text).join('\n');
}

describe('/mcp: the gateway as an MCP server', () => {
  let srv: TestServer;
  let token: string;

  before(async () => {
    srv = await startTestServer({ LOCAL_ENGINE_MIN_DURATION_MS: '400' });
    token = await srv.tokenFor('mia');
  });
  after(() => srv.close());

  it('answers 401 with WWW-Authenticate: Bearer without a valid token', async () => {
    for (const bearer of [undefined, 'gg-unknown']) {
      const res = await initialize(srv, bearer, '2025-06-18');
      assert.equal(res.status, 401);
      assert.equal(res.headers.get('www-authenticate'), 'Bearer');
    }
  });

  it('initializes with both protocol versions, answering the one asked for, as gengate with a session id', async () => {
    for (const version of ['2025-06-18', '2025-11-25']) {
      const res = await initialize(srv, token, version);
      assert.equal(res.status, 200);
      const sessionId = res.headers.get('mcp-session-id');
      assert.ok(sessionId, 'a session id');
      const message = await sseMessage(res);
      assert.equal(message.result.protocolVersion, version);
      assert.equal(message.result.serverInfo.name, 'gengate');
    }
    const { client } = await connect(srv, token, '2025-06-18');
    assert.equal(client.getServerVersion()?.name, 'gengate');
    await client.close();
  });

  it('keeps a session to its token: another token and an ended session get 404', async () => {
    const res = await initialize(srv, token, '2025-11-25');
    const sessionId = res.headers.get('mcp-session-id')!;
    await res.text();
    const other = await srv.tokenFor('ola');
    const list = (bearer: string) => fetch(`${srv.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${bearer}`, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
    });
    assert.equal((await list(other)).status, 404, 'another token');
    const own = await list(token);
    assert.equal(own.status, 200, 'its own token');
    assert.ok((await sseMessage(own)).result.tools.length > 0);
    const ended = await fetch(`${srv.url}/mcp`, { method: 'DELETE', headers: { authorization: `Bearer ${token}`, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' } });
    assert.equal(ended.status, 200);
    assert.equal((await list(token)).status, 404, 'an ended session');
  });

  it('lists a tool per capability group with an enabled model, the model an enum, plus the task tools', async () => {
    const { client } = await connect(srv, token);
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    for (const name of ['generate_image', 'list_models', 'get_task', 'cancel_task']) assert.ok(names.includes(name), `${name} listed`);
    const listed: Json = await (await srv.fetch('/v1/models/list?type=image_generate', { token })).json();
    const enabled = listed.modelList.filter((m: Json) => m.enabled).map((m: Json) => m.model ?? m.alias ?? m.name);
    const image: Json = tools.find((t) => t.name === 'generate_image')!.inputSchema;
    assert.equal(image.properties.prompt.type, 'string');
    assert.ok(image.properties.model.enum.includes('seedream-4.0'));
    assert.equal(image.properties.model.enum.length, enabled.length);
    const mesh: Json = tools.find((t) => t.name === 'generate_3d')?.inputSchema;
    if (mesh) assert.deepEqual(mesh.required, ['mode']);
    const models = await client.callTool({ name: 'list_models', arguments: { type: 'image_generate' } });
    assert.equal((models.structuredContent as Json).modelList.length, listed.modelList.length);
    await client.close();
  });

  it('runs generate_image on the local engine, with progress, and links its file', async () => {
    const { client } = await connect(srv, token);
    const progress: Json[] = [];
    const result = await client.callTool({ name: 'generate_image', arguments: { model: 'seedream-4.0', prompt: 'a red kite', size: '64x48' } }, undefined, { onprogress: (p) => progress.push(p) }) as CallToolResult;
    assert.equal(result.isError, undefined);
    const record: Json = result.structuredContent;
    assert.equal(record.queue_status.status, 'success');
    assert.match(textOf(result), new RegExp(`${record.queue_status.task_id}.*success`));
    const links = result.content.filter((c) => c.type === 'resource_link') as Json[];
    assert.equal(links.length, 1);
    assert.equal(links[0].mimeType, 'image/png');
    const file = await fetch(links[0].uri);
    assert.equal(file.status, 200);
    assert.equal(file.headers.get('content-type'), 'image/png');
    assert.ok(progress.length > 0, 'progress notifications');
    assert.ok(progress.every((p, i) => p.total === 100 && (i === 0 || p.progress > progress[i - 1].progress)), 'rising, out of 100');
    await client.close();
  });

  it('answers invalid arguments as an error result naming the param, creating nothing', async () => {
    const { client } = await connect(srv, token);
    const before: Json = await (await srv.fetch('/v1/tasks', { token })).json();
    const missing = await client.callTool({ name: 'generate_image', arguments: { model: 'seedream-4.0' } }) as CallToolResult;
    assert.equal(missing.isError, true);
    const error = JSON.parse(textOf(missing)).error;
    assert.equal(error.code, 'missing_parameter');
    assert.equal(error.param, 'prompt');
    const unknown = await client.callTool({ name: 'generate_image', arguments: { model: 'no-such-model', prompt: 'x' } }) as CallToolResult;
    assert.equal(JSON.parse(textOf(unknown)).error.code, 'model_not_found');
    const after: Json = await (await srv.fetch('/v1/tasks', { token })).json();
    assert.equal(after.data.length, before.data.length, 'no task made');
    await client.close();
  });

  it('cancels the task on notifications/cancelled', async () => {
    const slow = await startTestServer({ LOCAL_ENGINE_MIN_DURATION_MS: '5000' });
    try {
      const slowToken = await slow.tokenFor('cara');
      const { client } = await connect(slow, slowToken);
      const controller = new AbortController();
      const call = client.callTool({ name: 'generate_image', arguments: { model: 'seedream-4.0', prompt: 'slow', size: '64x48' } }, undefined, { signal: controller.signal });
      const task: Json = await eventually('the task', async () => ((await (await slow.fetch('/v1/tasks', { token: slowToken })).json()) as Json).data[0]);
      controller.abort();
      await assert.rejects(call);
      const id = task.queue_status.task_id;
      await eventually('the cancelled task', async () => ((await (await slow.fetch(`/v1/ai/result/${id}`, { token: slowToken })).json()) as Json).queue_status.status === 'cancelled');
      await client.close();
    } finally {
      await slow.close();
    }
  });

  it('answers a task past MCP_CALL_TIMEOUT_MS with its status and no link; get_task reads it later', async () => {
    const slow = await startTestServer({ LOCAL_ENGINE_MIN_DURATION_MS: '1500', MCP_CALL_TIMEOUT_MS: '200' });
    try {
      const slowToken = await slow.tokenFor('tim');
      const { client } = await connect(slow, slowToken);
      const result = await client.callTool({ name: 'generate_image', arguments: { model: 'seedream-4.0', prompt: 'later', size: '64x48' } }) as CallToolResult;
      assert.equal(result.isError, undefined);
      assert.equal(result.content.filter((c) => c.type === 'resource_link').length, 0);
      const record: Json = result.structuredContent;
      const id = record.queue_status.task_id;
      assert.notEqual(record.queue_status.status, 'success');
      assert.match(textOf(result), new RegExp(id));
      const done = await eventually('the task to end', async () => {
        const got = await client.callTool({ name: 'get_task', arguments: { task_id: id } }) as CallToolResult;
        return (got.structuredContent as Json).queue_status.status === 'success' && got;
      });
      assert.equal(done.content.filter((c) => c.type === 'resource_link').length, 1);
      await client.close();
    } finally {
      await slow.close();
    }
  });

  it('answers a limit as an error result with the 429 code, and ledgers each call', async () => {
    const created: Json = await (await srv.fetch('/admin/tokens', { method: 'POST', token: srv.adminToken, json: { user_id: 'lim', limits: { requests_per_minute: 1 } } })).json();
    const { client } = await connect(srv, created.token);
    const first = await client.callTool({ name: 'generate_image', arguments: { model: 'seedream-4.0', prompt: 'one', size: '64x48' } }) as CallToolResult;
    assert.equal(first.isError, undefined);
    const second = await client.callTool({ name: 'generate_image', arguments: { model: 'seedream-4.0', prompt: 'two', size: '64x48' } }) as CallToolResult;
    assert.equal(second.isError, true);
    assert.equal(JSON.parse(textOf(second)).error.code, 'rate_limited');
    const rows: Json[] = await eventually('the ledger rows', async () => {
      const page: Json = await (await srv.fetch(`/admin/requests?token_id=${created.id}&limit=50`, { token: srv.adminToken })).json();
      const mcp = page.data.filter((r: Json) => r.endpoint === 'mcp.tools_call');
      return mcp.length === 2 && mcp;
    });
    assert.deepEqual(rows.map((r) => r.model), ['generate_image', 'generate_image']);
    assert.deepEqual(rows.map((r) => r.status).sort(), ['refused', 'success']);
    assert.ok(rows.every((r) => typeof r.latency_ms === 'number'));
    await client.close();
  });
});

describe('/mcp sessions across instances', () => {
  it('another instance on the same store serves a session for its token and answers 404 to another token', async () => {
    const dataDir = tempDataDir();
    const first = await startTestServer({ DATA_DIR: dataDir });
    const { adminToken } = first;
    const token = await first.tokenFor('sam');
    const other = await first.tokenFor('otto');
    const res = await initialize(first, token, '2025-06-18');
    const sessionId = res.headers.get('mcp-session-id')!;
    await res.text();
    await first.close();

    const second = await startTestServer({ DATA_DIR: dataDir, ADMIN_TOKEN: adminToken });
    try {
      const list = (bearer: string) => fetch(`${second.url}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${bearer}`, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
      });
      assert.equal((await list(other)).status, 404, 'another token');
      const own = await list(token);
      assert.equal(own.status, 200);
      assert.ok((await sseMessage(own)).result.tools.some((t: Json) => t.name === 'generate_image'));
    } finally {
      await second.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('two instances on PostgreSQL: each serves the other\'s session for its token only', async (t) => {
    const pg = await postgresEnv();
    if ('skip' in pg) return t.skip(pg.skip);
    const a = await startTestServer(pg.env);
    const b = await startTestServer({ ...pg.env, ADMIN_TOKEN: a.adminToken });
    try {
      const token = await a.tokenFor('pia');
      const other = await a.tokenFor('pol');
      const res = await initialize(a, token, '2025-11-25');
      const sessionId = res.headers.get('mcp-session-id')!;
      await res.text();
      const list = (srv: TestServer, bearer: string) => fetch(`${srv.url}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${bearer}`, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
      });
      assert.equal((await list(b, other)).status, 404, 'another token on the other instance');
      const own = await list(b, token);
      assert.equal(own.status, 200);
      assert.ok((await sseMessage(own)).result.tools.length > 0);
      const ended = await fetch(`${b.url}/mcp`, { method: 'DELETE', headers: { authorization: `Bearer ${token}`, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' } });
      assert.equal(ended.status, 200);
      assert.equal((await list(a, token)).status, 404, 'ended on the other instance');
    } finally {
      await b.close();
      await a.close();
      await dropSchema(pg.env.DATABASE_SCHEMA!);
    }
  });
});
