/**
 * What an adapter declares it serves (GenerationEngine.serves) is applied at submit: an endpoint
 * it does not list and a field it refuses are 400s before any task exists; a field it does not
 * read is recorded in the task's generate_info.warnings, and so is what its run dropped.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { EngineRegistry } from '../src/providers/registry.ts';
import type { GenerationEngine, GenerationJob } from '../src/providers/spec.ts';
import { startTestServer, type TestServer } from './support/server.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

describe('adapter declarations', () => {
  let srv: TestServer;
  let token: string;
  const jobs: GenerationJob[] = [];
  const engine: GenerationEngine = {
    cancellable: false,
    serves: { 'images.generations': { fields: ['prompt', 'size'], refused: ['seed'], limits: { maxImageSide: 2048, maxOutputs: 2 } } },
    check: (job) => void jobs.push(job),
    run: async (_job, ctx) => {
      ctx.warn('size 64x48 dropped: the upstream draws squares only');
      return { files: [] };
    },
  };
  const engines: EngineRegistry = { engineFor: () => engine };
  const post = (path: string, json: Json) => srv.fetch(path, { method: 'POST', token, json });

  before(async () => {
    srv = await startTestServer({}, { engines });
    token = await srv.tokenFor('declared');
  });
  after(async () => srv?.close());

  async function assertRefused(res: Response, code: string, param: string, message: RegExp): Promise<void> {
    const body: Json = await res.json();
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.equal(body.error.code, code);
    assert.equal(body.error.param, param);
    assert.match(body.error.message, message);
    assert.equal(body.error.task_id, undefined, 'no task was made');
  }

  it('refuses an endpoint the adapter does not serve with 400 model_capability_mismatch, before a task exists', async () => {
    const before = jobs.length;
    await assertRefused(await post('/v1/video/generations', { model: 'seedance-1.0-pro', content: [{ type: 'text', text: 'waves' }] }), 'model_capability_mismatch', 'model', /does not serve video\.generations \(it serves images\.generations\)/);
    assert.equal(jobs.length, before, 'the engine never saw it');
  });

  it('refuses a field the adapter refuses, and limits beyond its declared ones, with 400 naming the field', async () => {
    const before = jobs.length;
    await assertRefused(await post('/v1/images/generations', { model: 'seedream-4.0', prompt: 'a fox', seed: 7 }), 'unsupported_parameter', 'seed', /does not support seed/);
    await assertRefused(await post('/v1/images/generations', { model: 'seedream-4.0', prompt: 'a fox', size: '4096x64' }), 'invalid_parameter', 'size', /each side is at most 2048/);
    await assertRefused(await post('/v1/images/generations', { model: 'seedream-4.0', prompt: 'a fox', n: 3 }), 'invalid_parameter', 'n', /n is at most 2/);
    assert.equal(jobs.length, before);
  });

  it('runs a request with fields the adapter does not read, and lists them and the run\'s drops as warnings', async () => {
    const res = await post('/v1/images/generations', { model: 'seedream-4.0', prompt: 'a fox', size: '64x48', aspect_ratio: '4:3', steps: 30 });
    const body: Json = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.equal(body.status, 'success');
    const record: Json = await (await srv.fetch(`/v1/ai/result/${body.task_id}`, { token })).json();
    assert.deepEqual(record.generate_info.input, { prompt: 'a fox', size: '64x48', aspect_ratio: '4:3', steps: 30 }, 'the input is kept whole');
    assert.deepEqual(record.generate_info.warnings, [
      'aspect_ratio was not passed on: provider volcengine does not take it',
      'steps was not passed on: provider volcengine does not take it',
      'size 64x48 dropped: the upstream draws squares only',
    ]);
  });
});
