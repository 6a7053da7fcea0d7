/** `mcp` tools of /v1/responses and /openai/v1/responses: the gateway lists and calls them in its tool loop. */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeMcpUpstream, type FakeMcpUpstream } from './fakes/mcp-upstream.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { agentEvents, sseData } from './support/sse.ts';
import { eventually } from './support/wait.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const MODEL = 'gpt-4.1';

describe('mcp tools in the Responses tool loop', () => {
  let upstream: FakeMcpUpstream;
  let srv: TestServer;
  let token: string;
  const post = (path: string, json: Json) => srv.fetch(path, { method: 'POST', token, json });
  const upTool = { type: 'mcp', server_label: 'up', require_approval: 'never' };

  before(async () => {
    upstream = await startFakeMcpUpstream();
    const config = { providers: { openai: { adapter: 'local' } }, mcp_servers: [{ name: 'up', url: upstream.url, tools: ['echo'] }] };
    srv = await startTestServer({ GENGATE_CONFIG: JSON.stringify(config) });
    token = await srv.tokenFor('ada');
  });
  after(async () => {
    await srv.close();
    await upstream.close();
  });

  it('/v1/responses returns mcp_list_tools and mcp_call items and hands the output to the model', async () => {
    const res = await post('/v1/responses', { model: MODEL, stream: false, input: 'Please echo {"text": "hi"}', tools: [upTool] });
    const body: Json = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body));
    const [listed, call] = body.output.filter((o: Json) => o.type?.startsWith('mcp_'));
    assert.equal(listed.type, 'mcp_list_tools');
    assert.equal(listed.server_label, 'up');
    assert.deepEqual(listed.tools.map((t: Json) => t.name), ['echo']);
    assert.deepEqual({ ...call, id: undefined, arguments: JSON.parse(call.arguments) }, { type: 'mcp_call', id: undefined, server_label: 'up', name: 'echo', arguments: { text: 'hi' }, output: 'echo: hi', error: null });
    assert.match(body.output_text, /echo returned echo: hi/);
  });

  it('/v1/responses streams the mcp items with response.output_item.added and .done', async () => {
    const events = await agentEvents(await post('/v1/responses', { model: MODEL, input: 'Please echo {"text": "streamed"}', tools: [upTool] }));
    const items = events.filter((e) => e.type?.startsWith('response.output_item.'));
    assert.deepEqual(items.map((e) => `${e.type} ${e.item.type}`), [
      'response.output_item.added mcp_list_tools', 'response.output_item.done mcp_list_tools',
      'response.output_item.added mcp_call', 'response.output_item.done mcp_call',
    ]);
    assert.equal(items[3].item.output, 'echo: streamed');
    assert.equal(items[2].item.id, items[3].item.id);
  });

  it('/openai/v1/responses runs the calls in its loop, whole or streamed', async () => {
    const res = await post('/openai/v1/responses', { model: MODEL, input: 'Please echo {"text": "openai"}', tools: [upTool] });
    const body: Json = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.deepEqual(body.output.map((o: Json) => o.type), ['mcp_list_tools', 'mcp_call', 'message']);
    assert.equal(body.output[1].output, 'echo: openai');
    assert.match(body.output[2].content[0].text, /echo returned echo: openai/);

    const streamed = await post('/openai/v1/responses', { model: MODEL, stream: true, input: 'Please echo {"text": "events"}', tools: [upTool] });
    const events: Json[] = [];
    for await (const data of sseData(streamed)) events.push(JSON.parse(data));
    const done = events.filter((e) => e.type === 'response.output_item.done').map((e) => e.item.type);
    assert.deepEqual(done, ['mcp_list_tools', 'mcp_call', 'message']);
    assert.equal(events[events.length - 1].type, 'response.completed');
  });

  it('connects to a server_url the policy allows, the label only a label', async () => {
    const res = await post('/v1/responses', { model: MODEL, stream: false, input: 'Please echo {"text": "direct"}', tools: [{ type: 'mcp', server_label: 'mine', server_url: upstream.url, require_approval: 'never', allowed_tools: ['echo'] }] });
    const body: Json = await res.json();
    const call = body.output.find((o: Json) => o.type === 'mcp_call');
    assert.equal(call.server_label, 'mine');
    assert.equal(call.output, 'echo: direct');
  });

  it('refuses bad mcp tools with 400 before anything runs, on both routes', async () => {
    for (const path of ['/v1/responses', '/openai/v1/responses']) {
      const cases: [Json, string, string][] = [
        [{ type: 'mcp', server_label: 'x', server_url: 'http://10.1.2.3/mcp', require_approval: 'never' }, 'url_not_allowed', 'tools[0].server_url'],
        [{ type: 'mcp', server_label: 'nowhere', require_approval: 'never' }, 'invalid_parameter', 'tools[0].server_label'],
        [{ type: 'mcp', server_label: 'up', require_approval: 'always' }, 'unsupported_parameter', 'tools[0].require_approval'],
      ];
      for (const [tool, code, param] of cases) {
        const res = await post(path, { model: MODEL, stream: false, input: 'Please echo {"text": "no"}', tools: [tool] });
        const body: Json = await res.json();
        assert.equal(res.status, 400, `${path} ${JSON.stringify(body)}`);
        assert.equal(body.error.code, code);
        assert.equal(body.error.param, param);
      }
    }
  });

  it('ledgers each call as mcp.tools_call with the tool\'s /mcp name', async () => {
    await eventually('the ledger rows of the calls', async () => {
      const page: Json = await (await srv.fetch('/admin/requests?user_id=ada&limit=100', { token: srv.adminToken })).json();
      const rows = page.data.filter((r: Json) => r.endpoint === 'mcp.tools_call');
      return rows.length >= 5 && rows.every((r: Json) => ['up__echo', 'mine__echo'].includes(r.model) && r.status === 'success');
    });
  });
});
