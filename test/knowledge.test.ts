import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dropSchema, postgresEnv, startTestServer, type TestServer } from './support/server.ts';
import { startFakeChatUpstream, type FakeChatUpstream } from './fakes/openai-chat-upstream.ts';
import { agentEvents, runItems } from './support/sse.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const WARRANTY = 'The Acme X200 drill comes with a warranty period of three years from the date of purchase.\n\nThe battery is covered for one year.';
const RETURNS = 'Unused products can be sent back within 30 days for a full refund. Keep the receipt.';
const HANDBOOK = 'Office hours are nine to five. The espresso machine is on the third floor.';
const KNOWLEDGE_PREAMBLE = (name: string) => `Answer from these passages of the knowledge base "${name}" where they cover the question.`;

/** The response.* event types of one answer, in order, with the deltas folded into one entry. */
const ANSWER_SEQUENCE = [
  'response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added', 'response.output_text.delta',
  'response.output_text.done', 'response.text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed',
];

function folded(types: string[]): string[] {
  return types.filter((type, i) => !(type === 'response.output_text.delta' && types[i - 1] === type));
}

function assertApiError(res: Response, body: Json, status: number, code: string, param: string | null): void {
  assert.equal(res.status, status, JSON.stringify(body));
  assert.equal(body.error.code, code, JSON.stringify(body));
  assert.equal(body.error.param, param, JSON.stringify(body));
}

const pg = await postgresEnv();

/** The knowledge-base suite against one store (the env selects it). */
function knowledgeSuite(store: string, env: () => Record<string, string>, skip: string | false = false): void {
  describe(`knowledge-base agents (${store})`, { skip }, () => {
    let fake: FakeChatUpstream;
    let srv: TestServer;
    let alice: string;
    let bob: string;
    const call = (method: string, path: string, token: string, json?: unknown) => srv.fetch(path, { method, token, ...(json === undefined ? {} : { json }) });
    const lastUpstreamMessages = () => fake.requests[fake.requests.length - 1].body.messages;
    const ask = (body: Json, token = alice) => call('POST', '/v1/responses', token, { model: 'qwen3-max', ...body });

    async function agentWithDocuments(token: string, name: string, documents: [string, string][], instructions?: string): Promise<Json> {
      const res = await call('POST', '/v1/agents', token, { name, ...(instructions ? { instructions } : {}) });
      assert.equal(res.status, 201);
      const agent = await res.json() as Json;
      for (const [title, content] of documents) assert.equal((await call('POST', `/v1/agents/${agent.id}/documents`, token, { title, content })).status, 201);
      return agent;
    }

    before(async () => {
      fake = await startFakeChatUpstream();
      srv = await startTestServer({ ...env(), GENGATE_CONFIG: JSON.stringify({ providers: { qwen: { base_url: fake.url, retry: { attempts: 0 } } } }) });
      alice = await srv.tokenFor('alice');
      bob = await srv.tokenFor('bob');
    });
    after(async () => {
      await srv?.close();
      await fake?.close();
    });

    it('creates, lists, reads and deletes agents of the caller only', async () => {
      const res = await call('POST', '/v1/agents', alice, { name: 'Notes', instructions: 'Be exact.' });
      const agent = await res.json() as Json;
      assert.equal(res.status, 201);
      assert.match(agent.id, /^agent_/);
      assert.deepEqual({ ...agent, id: undefined, created_at: undefined }, {
        id: undefined, object: 'agent', name: 'Notes', instructions: 'Be exact.', main: false, personal: true, document_count: 0, created_at: undefined,
      });
      const list = await (await call('GET', '/v1/agents', alice)).json() as Json;
      assert.ok(list.data.some((a: Json) => a.id === agent.id));
      assert.deepEqual(await (await call('GET', `/v1/agents/${agent.id}`, alice)).json(), agent);

      for (const [method, path] of [['GET', `/v1/agents/${agent.id}`], ['DELETE', `/v1/agents/${agent.id}`], ['GET', `/v1/agents/${agent.id}/documents`]]) {
        const foreign = await call(method, path, bob);
        assertApiError(foreign, await foreign.json(), 404, 'agent_not_found', 'id');
      }
      assert.ok(!((await (await call('GET', '/v1/agents', bob)).json()) as Json).data.some((a: Json) => a.id === agent.id));

      assert.equal((await call('DELETE', `/v1/agents/${agent.id}`, alice)).status, 204);
      const gone = await call('GET', `/v1/agents/${agent.id}`, alice);
      assertApiError(gone, await gone.json(), 404, 'agent_not_found', 'id');

      const main = await call('POST', '/v1/agents', alice, { name: 'Boss', main: true });
      assertApiError(main, await main.json(), 403, 'admin_required', null);
      const unnamed = await call('POST', '/v1/agents', alice, {});
      assertApiError(unnamed, await unnamed.json(), 400, 'missing_parameter', 'name');
    });

    it('adds documents as JSON or a multipart text file, lists and removes them', async () => {
      const agent = await agentWithDocuments(alice, 'Docs', [['Warranty', WARRANTY]]);
      const form = new FormData();
      form.append('file', new Blob(['# Returns\n\n', RETURNS], { type: 'text/markdown' }), 'returns.md');
      const uploaded = await srv.fetch(`/v1/agents/${agent.id}/documents`, { method: 'POST', token: alice, body: form });
      const document = await uploaded.json() as Json;
      assert.equal(uploaded.status, 201, JSON.stringify(document));
      assert.deepEqual({ ...document, id: undefined, created_at: undefined }, {
        id: undefined, object: 'agent.document', agent_id: agent.id, title: 'returns.md', characters: `# Returns\n\n${RETURNS}`.length, created_at: undefined,
      });

      const binary = new FormData();
      binary.append('file', new Blob([Buffer.from([0xff, 0xfe, 0x00, 0x89])]), 'blob.bin');
      const refused = await srv.fetch(`/v1/agents/${agent.id}/documents`, { method: 'POST', token: alice, body: binary });
      assertApiError(refused, await refused.json(), 400, 'invalid_parameter', 'file');
      const empty = await call('POST', `/v1/agents/${agent.id}/documents`, alice, { title: 'Blank', content: '  \n\n ' });
      assertApiError(empty, await empty.json(), 400, 'invalid_parameter', 'content');
      const untitled = await call('POST', `/v1/agents/${agent.id}/documents`, alice, { content: 'x' });
      assertApiError(untitled, await untitled.json(), 400, 'missing_parameter', 'title');
      const foreign = await call('POST', `/v1/agents/${agent.id}/documents`, bob, { title: 'Mine', content: 'x' });
      assertApiError(foreign, await foreign.json(), 404, 'agent_not_found', 'id');

      const docs = await (await call('GET', `/v1/agents/${agent.id}/documents`, alice)).json() as Json;
      assert.deepEqual(docs.data.map((d: Json) => d.title).sort(), ['Warranty', 'returns.md']);
      assert.equal((await (await call('GET', `/v1/agents/${agent.id}`, alice)).json() as Json).document_count, 2);

      assert.equal((await call('DELETE', `/v1/agents/${agent.id}/documents/${document.id}`, alice)).status, 204);
      const again = await call('DELETE', `/v1/agents/${agent.id}/documents/${document.id}`, alice);
      assertApiError(again, await again.json(), 404, 'document_not_found', 'docId');
      assert.equal((await (await call('GET', `/v1/agents/${agent.id}`, alice)).json() as Json).document_count, 1);
    });

    it('answers a question its documents cover in knowledge-base mode: response.* events in order, the passages given to the model', async () => {
      const agent = await agentWithDocuments(alice, 'Acme support', [['Warranty', WARRANTY], ['Returns', RETURNS]], 'You are the Acme support desk.');
      const question = 'How many years of warranties does the X200 get?';
      const res = await ask({ input: question, agentId: agent.id, requestId: 'kb-1' });
      const events = await agentEvents(res);
      assert.deepEqual(folded(events.map((e) => e.type)), ANSWER_SEQUENCE);
      assert.deepEqual(events.map((e) => e.sequence_number), events.map((_, i) => i));

      const [created, , added, partAdded] = events;
      assert.equal(created.response.status, 'in_progress');
      assert.equal(created.response.request_id, 'kb-1');
      assert.equal(created.response.agent_id, agent.id);
      assert.deepEqual(created.response.output, []);
      assert.deepEqual({ ...added.item, id: undefined }, { id: undefined, type: 'message', role: 'assistant', status: 'in_progress', content: [] });
      assert.equal(added.output_index, 0);
      assert.deepEqual(partAdded.part, { type: 'output_text', text: '', annotations: [] });
      const deltas = events.filter((e) => e.type === 'response.output_text.delta');
      const answer = `Echo: ${question}`;
      let snapshot = '';
      for (const delta of deltas) {
        snapshot += delta.delta;
        assert.equal(delta.snapshot, snapshot);
        assert.deepEqual([delta.item_id, delta.output_index, delta.output_item_index, delta.content_index], [added.item.id, 0, 0, 0]);
      }
      assert.equal(snapshot, answer);
      const byType = (type: string) => events.find((e) => e.type === type);
      assert.equal(byType('response.text.done').text, answer);
      assert.equal(byType('response.output_text.done').text, answer);
      assert.deepEqual(byType('response.output_item.done').item, { id: added.item.id, type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: answer, annotations: [] }] });
      const completed = byType('response.completed').response;
      assert.equal(completed.status, 'completed');
      assert.equal(completed.usage.total_tokens, completed.usage.input_tokens + completed.usage.output_tokens);
      assert.ok(completed.usage.input_tokens > 0);

      assert.deepEqual(lastUpstreamMessages(), [
        { role: 'system', content: `You are the Acme support desk.\n\n${KNOWLEDGE_PREAMBLE('Acme support')}\n\n[1] Warranty\n${WARRANTY}` },
        { role: 'user', content: question },
      ], 'the matching passage (found through the stemmed word) reaches the model, the other document does not');

      const plain = await (await ask({ input: question, agentId: agent.id, stream: false })).json() as Json;
      assert.equal(plain.mode, 'knowledge');
      assert.equal(plain.output_text, answer);
      assert.deepEqual(plain.output.map((item: Json) => [item.type, item.content[0].text]), [['message', answer]]);
    });

    it('falls back to base agent mode when no document matches, and after the matching document is removed', async () => {
      const agent = await agentWithDocuments(alice, 'Acme sales', [['Warranty', WARRANTY]], 'You sell drills.');
      let events = await agentEvents(await ask({ input: 'What is the weather in Paris today?', agentId: agent.id }));
      assert.deepEqual(events[0], { type: 'agent_updated_stream_event', agent: { name: 'Acme sales' }, request_id: events[0].request_id });
      assert.equal(runItems(events).at(-1).type, 'message_output_item');
      assert.deepEqual(lastUpstreamMessages(), [{ role: 'system', content: 'You sell drills.' }, { role: 'user', content: 'What is the weather in Paris today?' }]);

      const [document] = ((await (await call('GET', `/v1/agents/${agent.id}/documents`, alice)).json()) as Json).data;
      assert.equal((await call('DELETE', `/v1/agents/${agent.id}/documents/${document.id}`, alice)).status, 204);
      events = await agentEvents(await ask({ input: 'How long is the warranty on the X200?', agentId: agent.id }));
      assert.equal(events[0].type, 'agent_updated_stream_event', 'no passage left to answer from');
    });

    it('reports a failed model call as response.failed, response.error and error events, then [DONE]', async () => {
      const agent = await agentWithDocuments(alice, 'Acme errors', [['Warranty', WARRANTY]]);
      fake.script({ kind: 'status', status: 500 });
      const events = await agentEvents(await ask({ input: 'warranty of the X200', agentId: agent.id }));
      assert.deepEqual(events.map((e) => e.type), ['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added', 'response.failed', 'response.error', 'error']);
      const [failed, error, plain] = events.slice(-3);
      assert.equal(failed.response.status, 'failed');
      assert.equal(failed.response.error.code, 'upstream_error');
      assert.equal(error.code, 'upstream_error');
      assert.deepEqual([plain.code, plain.error_code], [502, 'upstream_error']);
      assert.ok(failed.sequence_number < error.sequence_number);
    });

    it('resolves the deployment\'s main agent for useGlobalMainAgent, and lets users name deployment agents', async () => {
      let events = await agentEvents(await ask({ input: 'When does the office open?', useGlobalMainAgent: true }));
      assert.equal(events[0].agent.name, 'Assistant', 'no main agent yet: base agent mode');

      const admin = srv.adminToken;
      const userToken = await call('POST', '/admin/agents', alice, { name: 'x' });
      assertApiError(userToken, await userToken.json(), 403, 'admin_required', null);
      const first = await (await call('POST', '/admin/agents', admin, { name: 'Old handbook', main: true })).json() as Json;
      const res = await call('POST', '/admin/agents', admin, { name: 'Handbook', instructions: 'You know the office.', main: true });
      const main = await res.json() as Json;
      assert.equal(res.status, 201);
      assert.deepEqual([main.main, main.personal], [true, false]);
      assert.equal((await call('POST', `/admin/agents/${main.id}/documents`, admin, { title: 'Office', content: HANDBOOK })).status, 201);
      const listed = await (await call('GET', '/admin/agents', admin)).json() as Json;
      assert.deepEqual(listed.data.filter((a: Json) => [first.id, main.id].includes(a.id)).map((a: Json) => [a.name, a.main]).sort(), [['Handbook', true], ['Old handbook', false]], 'the new main agent took the flag');
      const hidden = await call('GET', `/v1/agents/${main.id}`, alice);
      assertApiError(hidden, await hidden.json(), 404, 'agent_not_found', 'id');

      events = await agentEvents(await ask({ input: 'Where is the espresso machine?', useGlobalMainAgent: true }));
      assert.equal(events[0].type, 'response.created');
      assert.equal(events[0].response.agent_id, main.id);
      assert.deepEqual(lastUpstreamMessages()[0], { role: 'system', content: `You know the office.\n\n${KNOWLEDGE_PREAMBLE('Handbook')}\n\n[1] Office\n${HANDBOOK}` });

      events = await agentEvents(await ask({ input: 'Where is the espresso machine?', agentId: main.id }, bob));
      assert.equal(events[0].type, 'response.created', 'any user may name a deployment agent');

      const bobs = await agentWithDocuments(bob, 'Bob private', [['Office', HANDBOOK]]);
      const foreign = await ask({ input: 'espresso', agentId: bobs.id });
      assertApiError(foreign, await foreign.json(), 404, 'agent_not_found', 'agentId');
      events = await agentEvents(await ask({ input: 'espresso machine?', agentId: bobs.id, useGlobalMainAgent: true }, bob));
      assert.equal(events[0].response.agent_id, bobs.id, 'agentId wins over useGlobalMainAgent');
    });
  });
}

knowledgeSuite('SQLite FTS5', () => ({}));
let pgSchema: string | undefined;
knowledgeSuite('PostgreSQL full-text search', () => {
  if ('skip' in pg) return {};
  pgSchema = pg.env.DATABASE_SCHEMA;
  return pg.env;
}, 'skip' in pg ? pg.skip : false);
after(async () => {
  if (pgSchema) await dropSchema(pgSchema);
});
