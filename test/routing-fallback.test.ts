import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { BUILTIN_CATALOG_PATH } from '../src/catalog/catalog.ts';
import { ArkUpstream } from './fakes/ark-upstream.ts';
import { CallbackReceiver } from './fakes/callback-receiver.ts';
import { FakeOpenAiImages } from './fakes/openai-images-upstream.ts';
import { spawnServer, type ServerProcess } from './support/process.ts';
import { startTestServer, tempDataDir } from './support/server.ts';
import { eventually } from './support/wait.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const IMAGES_KEY_ENV = 'FALLBACK_IMAGES_KEY';
const ARK_A_KEY_ENV = 'FALLBACK_ARK_A_KEY';
const ARK_B_KEY_ENV = 'FALLBACK_ARK_B_KEY';
const keys = { [IMAGES_KEY_ENV]: 'sk-fallback-images', [ARK_A_KEY_ENV]: 'ark-a-key', [ARK_B_KEY_ENV]: 'ark-b-key' };
Object.assign(process.env, keys);

/** An OpenAI image model that draws only square sizes up to 1024. */
const DALL_E_2 = {
  catalogKey: 'base:seed:dall-e-2',
  providerCode: 'openai',
  displayName: 'DALL·E 2',
  alias: 'dall-e-2',
  defaultRealModelName: 'dall-e-2',
  modelTypes: ['image_generate'],
  description: 'Square images.',
  capabilities: { image_generate: { type: 'image_generate', output_resolutions: ['256x256', '512x512', '1024x1024'], size_param_format: 'WxH', allow_custom_width_height_size: false, output_multiple_images: true, output_max_images_count: 10 } },
  status: 'active',
};

/** An OpenAI-compatible image model that draws any square size with sides of 256 to 512 pixels. */
const SMALL_SQUARES = {
  catalogKey: 'base:seed:small-squares',
  providerCode: 'openai',
  displayName: 'Small squares',
  alias: 'small-squares',
  defaultRealModelName: 'small-squares',
  modelTypes: ['image_generate'],
  capabilities: { image_generate: { type: 'image_generate', aspect_ratio_allowed: ['1:1'], width_height_range: [256, 512], allow_custom_width_height_size: true } },
  status: 'active',
};

/** The built-in catalog plus `models`, written in `dir`. */
function catalogWith(dir: string, ...models: Json[]): string {
  const catalog = JSON.parse(fs.readFileSync(BUILTIN_CATALOG_PATH, 'utf8')) as Json;
  catalog.baseModels.push(...models);
  const file = path.join(dir, 'catalog.json');
  fs.writeFileSync(file, JSON.stringify(catalog));
  return file;
}

/** gpt-image-1 on a failing OpenAI-compatible channel, falling back to `fallback` on a channel of its own. */
async function imageFallbackServer(cleanups: (() => Promise<void> | void)[], fallback: Json) {
  const failing = await FakeOpenAiImages.start(keys[IMAGES_KEY_ENV]);
  const backup = await FakeOpenAiImages.start(keys[IMAGES_KEY_ENV]);
  cleanups.push(() => failing.close(), () => backup.close());
  const dir = tempDataDir();
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  const server = await startTestServer({
    CATALOG_PATH: catalogWith(dir, fallback),
    GENGATE_CONFIG: JSON.stringify({
      providers: {
        openai: {
          api_key_env: IMAGES_KEY_ENV,
          retry: { attempts: 0 },
          channels: [
            { name: 'primary', base_url: failing.baseUrl, models: ['gpt-image-1'] },
            { name: 'backup', base_url: backup.baseUrl, models: [fallback.alias] },
          ],
        },
      },
      models: { 'gpt-image-1': { fallbacks: [fallback.alias] } },
    }),
  });
  cleanups.push(() => server.close());
  failing.inject('POST', '/v1/images/generations', { status: 500, body: { error: { message: 'The server had an error while processing your request.', type: 'server_error', param: null, code: null } } });
  return { failing, backup, server };
}

/** Seedance on one Ark endpoint, falling back to Kling (served here by a second Ark-compatible endpoint). */
function videoConfig(arkA: ArkUpstream, arkB: ArkUpstream, extra: Record<string, unknown> = {}): string {
  const common = { retry: { attempts: 0 }, poll_interval_ms: 20 };
  return JSON.stringify({
    providers: {
      volcengine: { ...common, base_url: `${arkA.url}/api/v3`, api_key_env: ARK_A_KEY_ENV },
      kling: { ...common, adapter: 'volcengine', base_url: `${arkB.url}/api/v3`, api_key_env: ARK_B_KEY_ENV },
    },
    models: { 'seedance-1.0-pro': { fallbacks: ['kling-v2.1-master'] } },
    ...extra,
  });
}

const VIDEO_REQUEST = { model: 'seedance-1.0-pro', content: [{ type: 'text', text: 'a lighthouse at dusk' }], resolution: '720p', duration: 7 };

describe('model fallbacks of tasks', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  it('an image task moves from a failing OpenAI-compatible channel to the fallback model, its size translated', async () => {
    const { failing, backup, server } = await imageFallbackServer(cleanups, DALL_E_2);
    const token = await server.tokenFor('painter');
    const res = await server.fetch('/v1/images/generations', { method: 'POST', token, json: { model: 'gpt-image-1', prompt: 'a red kite', size: '1536x1024' } });
    const body = (await res.json()) as Json;
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.equal(body.status, 'success');

    assert.equal(failing.apiRequests.length, 1);
    assert.equal(backup.apiRequests.length, 1);
    const sent = backup.apiRequests[0]!.json as Json;
    assert.equal(sent.model, 'dall-e-2');
    assert.equal(sent.size, '1024x1024');

    const record = (await (await server.fetch(`/v1/ai/result/${body.task_id}`, { token })).json()) as Json;
    const routing = record.generate_info.routing;
    assert.deepEqual({ model: routing.model, provider: routing.provider, channel: routing.channel }, { model: 'dall-e-2', provider: 'openai', channel: 'backup' });
    assert.equal(routing.attempts.length, 1);
    assert.deepEqual({ ...routing.attempts[0], error: undefined }, { model: 'gpt-image-1', provider: 'openai', channel: 'primary', error: undefined });
    assert.match(routing.attempts[0].error, /HTTP 500/);
    assert.deepEqual(routing.warnings, ['size "1536x1024" became "1024x1024": fallback model dall-e-2 takes 256x256, 512x512, 1024x1024']);
    assert.equal(record.billings[0].billing_model.name, 'dall-e-2', 'billed as the model that served');
  });

  it('an image size outside the fallback\'s side range becomes the nearest size within it, with a warning', async () => {
    const { backup, server } = await imageFallbackServer(cleanups, SMALL_SQUARES);
    const token = await server.tokenFor('painter');
    const res = await server.fetch('/v1/images/generations', { method: 'POST', token, json: { model: 'gpt-image-1', prompt: 'a red kite', size: '1024x1024' } });
    const body = (await res.json()) as Json;
    assert.equal(res.status, 200, JSON.stringify(body));

    assert.equal(backup.apiRequests.length, 1);
    const sent = backup.apiRequests[0]!.json as Json;
    assert.equal(sent.model, 'small-squares');
    assert.equal(sent.size, '512x512');
    const record = (await (await server.fetch(`/v1/ai/result/${body.task_id}`, { token })).json()) as Json;
    assert.equal(record.generate_info.routing.model, 'small-squares');
    assert.deepEqual(record.generate_info.routing.warnings, ['size "1024x1024" became "512x512": fallback model small-squares takes aspect ratios 1:1; sides of 256 to 512 pixels']);
  });

  it('a video task moves to another provider\'s model, its resolution and duration translated; a refusal does not move', async () => {
    const arkA = await ArkUpstream.start(keys[ARK_A_KEY_ENV]);
    const arkB = await ArkUpstream.start(keys[ARK_B_KEY_ENV]);
    cleanups.push(() => arkA.close(), () => arkB.close());
    const server = await startTestServer({ GENGATE_CONFIG: videoConfig(arkA, arkB) });
    cleanups.push(() => server.close());
    const token = await server.tokenFor('director');

    arkA.createErrors = [502];
    const res = await server.fetch('/v1/video/generations', { method: 'POST', token, json: VIDEO_REQUEST });
    const body = (await res.json()) as Json;
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.equal(arkA.tasks.size, 0, 'the first provider took no task');
    assert.equal(arkB.creates.length, 1);
    const sent = arkB.creates[0]!.json as Json;
    assert.equal(sent.model, 'kling-v2-1-master');
    assert.equal(sent.resolution, '1080p');
    assert.equal(sent.duration, 5);
    const record = (await (await server.fetch(`/v1/ai/result/${body.task_id}`, { token })).json()) as Json;
    assert.equal(record.queue_status.status, 'success');
    const routing = record.generate_info.routing;
    assert.deepEqual({ model: routing.model, provider: routing.provider, channel: routing.channel }, { model: 'kling-v2.1-master', provider: 'kling', channel: 'kling' });
    assert.deepEqual(routing.attempts.map((a: Json) => [a.model, a.provider, a.channel]), [['seedance-1.0-pro', 'volcengine', 'volcengine']]);
    assert.deepEqual(routing.warnings, [
      'resolution "720p" became "1080p": fallback model kling-v2.1-master takes 1080p',
      'duration 7 became 5: fallback model kling-v2.1-master takes durations of 5, 10 s',
    ]);

    // The upstream accepted the work and then refused the content: the task fails there, nothing moves.
    arkA.statuses = ['running', 'failed'];
    const refused = await server.fetch('/v1/video/generations', { method: 'POST', token, json: VIDEO_REQUEST });
    const refusedBody = (await refused.json()) as Json;
    assert.equal(refused.status, 502, JSON.stringify(refusedBody));
    assert.equal(arkA.creates.length, 2);
    assert.equal(arkB.creates.length, 1, 'a refused task is not sent to the fallback');
    const failed = (await (await server.fetch(`/v1/ai/result/${refusedBody.error.task_id}`, { token })).json()) as Json;
    assert.equal(failed.generate_info.routing.model, 'seedance-1.0-pro');
    assert.deepEqual(failed.generate_info.routing.attempts, [{ model: 'seedance-1.0-pro', provider: 'volcengine', channel: 'volcengine', error: 'seedance video task failed (OutputVideoSensitiveContentDetected)' }]);
  });
});

describe('fallbacks that cannot take the task', () => {
  it('skips a fallback whose provider\'s adapter does not serve the endpoint, and says so in the attempts', async () => {
    const arkA = await ArkUpstream.start(keys[ARK_A_KEY_ENV]);
    const server = await startTestServer({
      GENGATE_CONFIG: JSON.stringify({
        providers: {
          volcengine: { retry: { attempts: 0 }, base_url: `${arkA.url}/api/v3`, api_key_env: ARK_A_KEY_ENV },
          // An images-only adapter: it serves no video.generations.
          kling: { adapter: 'openai', base_url: 'http://127.0.0.1:9/v1' },
        },
        models: { 'seedance-1.0-pro': { fallbacks: ['kling-v2.1-master'] } },
      }),
    });
    try {
      const token = await server.tokenFor('director');
      arkA.createErrors = [503];
      const res = await server.fetch('/v1/video/generations', { method: 'POST', token, json: VIDEO_REQUEST });
      const body = (await res.json()) as Json;
      assert.equal(res.status, 502, JSON.stringify(body));
      const record = (await (await server.fetch(`/v1/ai/result/${body.error.task_id}`, { token })).json()) as Json;
      const attempts = record.generate_info.routing.attempts;
      assert.deepEqual(attempts.map((a: Json) => [a.model, a.channel]), [['seedance-1.0-pro', 'volcengine'], ['kling-v2.1-master', null]]);
      assert.match(attempts[1].error, /whose adapter does not serve video\.generations/);
    } finally {
      await server.close();
      await arkA.close();
    }
  });
});

describe('a fallback under way when the server is killed', () => {
  const dataDir = tempDataDir();
  let server: ServerProcess | undefined;
  const closers: (() => Promise<void>)[] = [];
  after(async () => {
    await server?.stop('SIGKILL');
    for (const close of closers) await close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('after kill -9 the task goes on with the fallback\'s upstream job: one job per accepted submit, one end', async () => {
    const arkA = await ArkUpstream.start(keys[ARK_A_KEY_ENV]);
    const arkB = await ArkUpstream.start(keys[ARK_B_KEY_ENV]);
    const receiver = await CallbackReceiver.start();
    closers.push(() => arkA.close(), () => arkB.close(), () => receiver.close());
    const env = {
      ...keys,
      DATA_DIR: dataDir,
      ADMIN_TOKEN: 'fallback-admin',
      GENGATE_CONFIG: videoConfig(arkA, arkB, { callback: { callback_url: receiver.url } }),
    };
    arkA.createErrors = [500];
    arkB.holding = true;
    server = await spawnServer(env);
    const admin = { authorization: 'Bearer fallback-admin', 'content-type': 'application/json' };
    const { token } = (await (await fetch(`${server.url}/admin/tokens`, { method: 'POST', headers: admin, body: JSON.stringify({ user_id: 'crash' }) })).json()) as Json;
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'x-async': '1' };
    const submitted = (await (await fetch(`${server.url}/v1/video/generations`, { method: 'POST', headers, body: JSON.stringify(VIDEO_REQUEST) })).json()) as Json;
    assert.ok(submitted.task_id, JSON.stringify(submitted));

    // The fallback's job is accepted and being watched: kill the server then.
    await eventually('the fallback job to be polled', () => arkB.queries.length >= 2, 30_000);
    await server.stop('SIGKILL');
    assert.equal(arkA.creates.length, 1);
    assert.equal(arkB.creates.length, 1);

    arkB.holding = false;
    server = await spawnServer(env);
    const record = await eventually('the task to end', async () => {
      const res = await fetch(`${server!.url}/v1/ai/result/${submitted.task_id}`, { headers });
      const body = (await res.json()) as Json;
      return ['success', 'failed'].includes(body.queue_status.status) ? body : undefined;
    }, 30_000);
    assert.equal(record.queue_status.status, 'success', JSON.stringify(record.queue_status));
    assert.equal(arkA.creates.length, 1, 'the failed provider is not asked again');
    assert.equal(arkB.creates.length, 1, 'the accepted job is watched, not submitted again');
    assert.equal(record.generate_info.routing.model, 'kling-v2.1-master');
    assert.equal(record.generate_info.routing.attempts.length, 1);
    const ends = await eventually('the success callback', () => {
      const successes = receiver.requests.filter((r) => r.json?.queue_status?.status === 'success');
      return successes.length > 0 ? successes : undefined;
    });
    assert.equal(ends.length, 1, 'the task ended once');
  });
});
