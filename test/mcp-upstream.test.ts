/** Upstream MCP servers of GENGATE_CONFIG.mcp_servers through /mcp and /mcp/<server>, and the mcp_tools permissions. */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { loadSettings, SettingsError } from '../src/config/settings.ts';
import { createServer } from '@modelcontextprotocol/server-everything/dist/server/index.js';
import { serveMcp, startFakeMcpUpstream, type FakeMcpUpstream } from './fakes/mcp-upstream.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { eventually } from './support/wait.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

async function connect(srv: TestServer, token: string, path = '/mcp'): Promise<Client> {
  const client = new Client({ name: 'test', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(srv.url + path), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  return client;
}

function errorOf(result: CallToolResult): Json {
  assert.equal(result.isError, true);
  return JSON.parse((result.content[0] as { text: string }).text).error;
}

describe('upstream MCP servers', () => {
  let upstream: FakeMcpUpstream;
  let srv: TestServer;
  let token: string;

  before(async () => {
    upstream = await startFakeMcpUpstream();
    const config = { mcp_servers: [{ name: 'up', url: upstream.url, headers: { 'x-secret': 'env:UP_SECRET', 'x-plain': 'plain-value' }, tools: ['echo', 'slow'] }] };
    // Settings read env: values from the server's environment, the runtime settings from the process's: both have it.
    process.env.UP_SECRET = 's3cret';
    srv = await startTestServer({ GENGATE_CONFIG: JSON.stringify(config), UP_SECRET: 's3cret' });
    token = await srv.tokenFor('una');
  });
  after(async () => {
    await srv.close();
    await upstream.close();
  });

  it('lists the allowed upstream tools as <server>__<tool>, unchanged, next to the gateway\'s', async () => {
    const client = await connect(srv, token);
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    assert.ok(names.includes('generate_image'));
    assert.ok(names.includes('up__echo') && names.includes('up__slow'));
    assert.ok(!names.includes('up__hidden'), 'outside the server\'s tools list');
    const echo = tools.find((t) => t.name === 'up__echo')!;
    assert.equal(echo.description, 'Echoes its text back.');
    assert.deepEqual(echo.annotations, { readOnlyHint: true, title: 'Echo' });
    assert.equal((echo.inputSchema.properties as Json).text.type, 'string');
    await client.close();
  });

  it('forwards a call with the configured headers, env values included', async () => {
    const client = await connect(srv, token);
    const result = await client.callTool({ name: 'up__echo', arguments: { text: 'hi' } }) as CallToolResult;
    assert.deepEqual(result.content, [{ type: 'text', text: 'echo: hi' }]);
    assert.ok(upstream.headers.some((h) => h['x-secret'] === 's3cret' && h['x-plain'] === 'plain-value'));
    assert.equal(errorOf(await client.callTool({ name: 'up__hidden', arguments: {} }) as CallToolResult).code, 'tool_not_found');
    const rows: Json[] = await eventually('the ledger rows', async () => {
      const page: Json = await (await srv.fetch('/admin/requests?user_id=una&limit=50', { token: srv.adminToken })).json();
      const mcp = page.data.filter((r: Json) => r.endpoint === 'mcp.tools_call');
      return mcp.length === 2 && mcp;
    });
    assert.deepEqual(rows.map((r) => `${r.model} ${r.status}`).sort(), ['up__echo success', 'up__hidden refused']);
    await client.close();
  });

  it('serves one server on /mcp/<server> under its own names; an unknown server is 404', async () => {
    const client = await connect(srv, token, '/mcp/up');
    assert.deepEqual((await client.listTools()).tools.map((t) => t.name).sort(), ['echo', 'slow']);
    const result = await client.callTool({ name: 'echo', arguments: { text: 'direct' } }) as CallToolResult;
    assert.deepEqual(result.content, [{ type: 'text', text: 'echo: direct' }]);
    await client.close();
    const res = await srv.fetch('/mcp/nope', { method: 'POST', token, headers: { accept: 'application/json, text/event-stream' }, json: { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } } });
    assert.equal(res.status, 404);
  });

  it('passes progress on under the caller\'s token and forwards a cancellation', async () => {
    const client = await connect(srv, token);
    const progress: Json[] = [];
    const controller = new AbortController();
    const call = client.callTool({ name: 'up__slow', arguments: { steps: 2 } }, undefined, { signal: controller.signal, onprogress: (p) => progress.push(p) });
    await eventually('two progress notifications', () => progress.length === 2);
    assert.deepEqual(progress.map((p) => [p.progress, p.total, p.message]), [[1, 2, 'step 1'], [2, 2, 'step 2']]);
    controller.abort();
    await assert.rejects(call);
    await eventually('the upstream to see the cancellation', () => upstream.cancelled === 1);
    await client.close();
  });

  it('lists and calls only what both the token\'s and the user\'s patterns match', async () => {
    const created: Json = await (await srv.fetch('/admin/tokens', { method: 'POST', token: srv.adminToken, json: { user_id: 'pat', mcp_tools: ['gengate__*'] } })).json();
    assert.deepEqual(created.mcp_tools, ['gengate__*']);
    const names = async () => {
      const client = await connect(srv, created.token);
      const listed = (await client.listTools()).tools.map((t) => t.name);
      await client.close();
      return listed;
    };
    let listed = await names();
    assert.ok(listed.includes('generate_image') && !listed.some((n) => n.startsWith('up__')));
    const client = await connect(srv, created.token);
    assert.equal(errorOf(await client.callTool({ name: 'up__echo', arguments: { text: 'no' } }) as CallToolResult).code, 'tool_not_allowed');
    await client.close();

    const patched = await srv.fetch(`/admin/tokens/${created.id}`, { method: 'PATCH', token: srv.adminToken, json: { mcp_tools: null } });
    assert.deepEqual(((await patched.json()) as Json).mcp_tools, ['*']);
    listed = await names();
    assert.ok(listed.includes('up__echo') && listed.includes('generate_image'));

    assert.equal((await srv.fetch('/admin/users/pat/mcp-tools', { method: 'PUT', token: srv.adminToken, json: { mcp_tools: ['up__ech*'] } })).status, 200);
    assert.deepEqual(await names(), ['up__echo']);
    assert.equal((await srv.fetch('/admin/users/pat/mcp-tools', { method: 'PUT', token: srv.adminToken, json: { mcp_tools: ['bad pattern'] } })).status, 400);
  });
});

describe('mcp_servers settings', () => {
  const settings = (servers: unknown, env: Record<string, string> = {}) => () => loadSettings({ GENGATE_CONFIG: JSON.stringify({ mcp_servers: servers }), ...env });

  it('stops the start naming an unset env variable of a header', () => {
    assert.throws(settings([{ name: 'a', url: 'https://mcp.example.com/mcp', headers: { Authorization: 'env:MISSING_MCP_KEY' } }]), (err: Error) => err instanceof SettingsError && err.message.includes('MISSING_MCP_KEY'));
    assert.deepEqual(settings([{ name: 'a', url: 'https://mcp.example.com/mcp', headers: { Authorization: 'env:MCP_KEY' } }], { MCP_KEY: 'Bearer k' })().mcpServers[0]!.headers, { Authorization: 'Bearer k' });
  });

  it('refuses the reserved name gengate and names outside [a-z0-9_-]+', () => {
    assert.throws(settings([{ name: 'gengate', url: 'https://mcp.example.com/mcp' }]), /reserved/);
    assert.throws(settings([{ name: 'Bad Name', url: 'https://mcp.example.com/mcp' }]), SettingsError);
  });

  it('stops the start for a server URL the outbound URL policy refuses', async () => {
    await assert.rejects(startTestServer({ FETCH_ALLOW_HOSTS: '', GENGATE_CONFIG: JSON.stringify({ mcp_servers: [{ name: 'lo', url: 'http://127.0.0.1:1/mcp' }] }) }), /url_not_allowed|not a public address/);
  });
});

describe('the MCP everything server as an upstream', () => {
  it('lists its tools as everything__<tool> and forwards echo', async () => {
    const everything = await serveMcp(() => createServer().server);
    const srv = await startTestServer({ GENGATE_CONFIG: JSON.stringify({ mcp_servers: [{ name: 'everything', url: everything.url }] }) });
    try {
      const client = await connect(srv, await srv.tokenFor('eve'));
      const names = (await client.listTools()).tools.map((t) => t.name);
      assert.ok(names.includes('everything__echo') && names.includes('everything__get-sum'), names.join(', '));
      const result = await client.callTool({ name: 'everything__echo', arguments: { message: 'hello' } }) as CallToolResult;
      assert.deepEqual(result.content, [{ type: 'text', text: 'Echo: hello' }]);
      await client.close();
    } finally {
      await srv.close();
      await everything.close();
    }
  });
});
