import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from './support/server.ts';
import { startFakeChatUpstream, type FakeChatUpstream } from './fakes/openai-chat-upstream.ts';
import { agentEvents } from './support/sse.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const TRANSLATOR = {
  name: 'Translator',
  description: 'Translates between English and French.',
  instructions: 'Answer in French unless asked otherwise.',
  references: [{ name: 'Glossary', content: 'quaternion = quaternion\nmesh = maillage' }],
  assets: [{ name: 'Style guide', description: 'house style', url: 'https://example.com/style.pdf', file_type: 'pdf' }],
};

function assertApiError(res: Response, body: Json, status: number, code: string, param: string | null): void {
  assert.equal(res.status, status, JSON.stringify(body));
  assert.equal(body.error.code, code, JSON.stringify(body));
  assert.equal(body.error.param, param, JSON.stringify(body));
}

describe('personal skills', () => {
  let fake: FakeChatUpstream;
  let srv: TestServer;
  let alice: string;
  let bob: string;
  const createSkill = (body: Json, token = alice) => srv.fetch('/v1/skills', { method: 'POST', token, json: body });

  before(async () => {
    fake = await startFakeChatUpstream();
    srv = await startTestServer({ GENGATE_CONFIG: JSON.stringify({ providers: { qwen: { base_url: fake.url, retry: { attempts: 0 } } } }) });
    alice = await srv.tokenFor('alice');
    bob = await srv.tokenFor('bob');
  });
  after(async () => {
    await srv?.close();
    await fake?.close();
  });

  it('creates, lists, reads and deletes a skill of the caller', async () => {
    const res = await createSkill(TRANSLATOR);
    const skill = await res.json() as Json;
    assert.equal(res.status, 201);
    assert.match(skill.id, /^skill_/);
    assert.equal(skill.object, 'skill');
    assert.ok(Number.isInteger(skill.created_at) && Math.abs(skill.created_at - Date.now() / 1000) < 60);
    assert.deepEqual({ ...skill, id: undefined, object: undefined, created_at: undefined }, { ...TRANSLATOR, id: undefined, object: undefined, created_at: undefined });

    const minimal = await (await createSkill({ name: 'Brief', description: '', instructions: 'Be brief.' })).json() as Json;
    assert.deepEqual([minimal.references, minimal.assets], [[], []]);

    const list = await (await srv.fetch('/v1/skills', { token: alice })).json() as Json;
    assert.equal(list.object, 'list');
    assert.deepEqual(list.data.map((s: Json) => s.id).sort(), [skill.id, minimal.id].sort());
    assert.deepEqual(await (await srv.fetch(`/v1/skills/${skill.id}`, { token: alice })).json(), skill);

    const deleted = await srv.fetch(`/v1/skills/${minimal.id}`, { method: 'DELETE', token: alice });
    assert.equal(deleted.status, 204);
    const gone = await srv.fetch(`/v1/skills/${minimal.id}`, { token: alice });
    assertApiError(gone, await gone.json(), 404, 'skill_not_found', 'id');
    const again = await srv.fetch(`/v1/skills/${minimal.id}`, { method: 'DELETE', token: alice });
    assertApiError(again, await again.json(), 404, 'skill_not_found', 'id');
  });

  it('keeps skills per user: another user\'s skill is not found, not listed and not deletable', async () => {
    const skill = await (await createSkill({ name: 'Private', description: 'mine', instructions: 'Secret.' })).json() as Json;
    const read = await srv.fetch(`/v1/skills/${skill.id}`, { token: bob });
    assertApiError(read, await read.json(), 404, 'skill_not_found', 'id');
    const del = await srv.fetch(`/v1/skills/${skill.id}`, { method: 'DELETE', token: bob });
    assertApiError(del, await del.json(), 404, 'skill_not_found', 'id');
    const list = await (await srv.fetch('/v1/skills', { token: bob })).json() as Json;
    assert.ok(!list.data.some((s: Json) => s.id === skill.id));
    assert.equal((await srv.fetch(`/v1/skills/${skill.id}`, { token: alice })).status, 200, 'still there for its owner');
  });

  it('refuses bad skills with 400 naming the field', async () => {
    let res = await createSkill({ name: 'x', description: 'y' });
    assertApiError(res, await res.json(), 400, 'missing_parameter', 'instructions');
    res = await createSkill({ ...TRANSLATOR, references: [{ name: 'r' }] });
    assertApiError(res, await res.json(), 400, 'missing_parameter', 'references[0].content');
    res = await createSkill({ ...TRANSLATOR, assets: [{ ...TRANSLATOR.assets[0], file_type: 7 }] });
    assertApiError(res, await res.json(), 400, 'invalid_parameter', 'assets[0].file_type');
    res = await createSkill({ ...TRANSLATOR, colour: 'blue' });
    assertApiError(res, await res.json(), 400, 'unsupported_parameter', 'colour');
  });

  it('hands the selected skills and the ephemeral skill to the model as one system message, in order', async () => {
    const translator = await (await createSkill(TRANSLATOR)).json() as Json;
    const brief = await (await createSkill({ name: 'Brief', description: 'Short answers.', instructions: 'One sentence at most.' })).json() as Json;
    const before = fake.requests.length;
    const res = await srv.fetch('/v1/responses', {
      method: 'POST',
      token: alice,
      json: {
        model: 'qwen3-max',
        input: 'Translate mesh',
        skill_options: {
          personal_skill_ids: [brief.id, translator.id],
          ephemeral_skill: { name: 'Once', description: 'For this request.', instructions: 'Sign as Gengate.', references: [{ name: 'Note', content: 'Only today.' }] },
        },
      },
    });
    await agentEvents(res);
    assert.equal(fake.requests.length, before + 1);
    assert.deepEqual(fake.requests[before].body.messages, [
      {
        role: 'system',
        content: [
          'Follow these skills when they apply to the request.',
          '## Skill: Brief\nShort answers.\n\n### Instructions\nOne sentence at most.',
          '## Skill: Translator\nTranslates between English and French.\n\n### Instructions\nAnswer in French unless asked otherwise.\n\n'
            + '### References\n#### Glossary\nquaternion = quaternion\nmesh = maillage\n\n'
            + '### Assets\n- Style guide (pdf): house style https://example.com/style.pdf',
          '## Skill: Once\nFor this request.\n\n### Instructions\nSign as Gengate.\n\n### References\n#### Note\nOnly today.',
        ].join('\n\n'),
      },
      { role: 'user', content: 'Translate mesh' },
    ]);
  });

  it('does not store the ephemeral skill', async () => {
    const before = (await (await srv.fetch('/v1/skills', { token: bob })).json() as Json).data;
    await agentEvents(await srv.fetch('/v1/responses', {
      method: 'POST',
      token: bob,
      json: { model: 'qwen3-max', input: 'hi', skill_options: { ephemeral_skill: { name: 'Temp', description: '', instructions: 'Temporary.' } } },
    }));
    assert.deepEqual(fake.requests[fake.requests.length - 1].body.messages[0], {
      role: 'system',
      content: 'Follow these skills when they apply to the request.\n\n## Skill: Temp\n\n### Instructions\nTemporary.',
    });
    const after = (await (await srv.fetch('/v1/skills', { token: bob })).json() as Json).data;
    assert.deepEqual(after, before);
  });

  it('refuses an unknown or another user\'s skill id with 400 on skill_options.personal_skill_ids', async () => {
    const mine = await (await createSkill({ name: 'Mine', description: '', instructions: 'x' })).json() as Json;
    for (const [token, id] of [[alice, 'skill_unknown'], [bob, mine.id]]) {
      const res = await srv.fetch('/v1/responses', { method: 'POST', token, json: { model: 'qwen3-max', input: 'hi', skill_options: { personal_skill_ids: [id] } } });
      assertApiError(res, await res.json(), 400, 'invalid_parameter', 'skill_options.personal_skill_ids');
    }
    const res = await srv.fetch('/v1/responses', { method: 'POST', token: alice, json: { model: 'qwen3-max', input: 'hi', skill_options: { ephemeral_skill: { name: 'No instructions' } } } });
    assertApiError(res, await res.json(), 400, 'missing_parameter', 'skill_options.ephemeral_skill.description');
  });
});
