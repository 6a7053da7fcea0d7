import { beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import sharp from 'sharp';
import { ArkUpstream, IMAGE_TOKENS } from '../fakes/ark-upstream.ts';
import { providerEnv, useProviderGateway, withGateway, withRestartingGateway, type Json } from '../support/provider-harness.ts';
import { eventually } from '../support/wait.ts';

const KEY_ENV = 'GENGATE_TEST_ARK_IMAGES_KEY';
process.env[KEY_ENV] = 'ark-images-key';

const GENERATE = { model: 'seedream-4.0', prompt: 'a paper crane on a wet window sill' };

const gatewayEnv = (fake: ArkUpstream, settings: Record<string, unknown> = {}) => providerEnv('volcengine', `${fake.url}/api/v3`, { api_key_env: KEY_ENV, ...settings });

async function pngDataUri(colour: string): Promise<string> {
  return `data:image/png;base64,${(await sharp({ create: { width: 32, height: 32, channels: 3, background: colour } }).png().toBuffer()).toString('base64')}`;
}

describe('seedream (volcengine ark images) adapter', () => {
  const gateway = useProviderGateway({ startFake: () => ArkUpstream.start(process.env[KEY_ENV]!), env: (fake) => gatewayEnv(fake), userId: 'illustrator' });
  beforeEach(() => {
    const { fake } = gateway;
    fake.requests.length = 0;
    fake.createErrors = [];
    fake.imageFailures = [];
    fake.holdingImages = false;
  });

  it('generation: the exact images request, the image downloaded without the key, usage billed', async () => {
    const { fake, user } = gateway;
    const res = await user.post('/v1/images/generations', { ...GENERATE, aspect_ratio: '16:9', resolution: '2K', seed: 11, output_format: 'png' });
    const body: Json = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body));
    const [sent, ...more] = fake.imageRequests;
    assert.equal(more.length, 0);
    assert.equal(sent!.headers.authorization, 'Bearer ark-images-key');
    assert.deepEqual(sent!.json, {
      model: 'doubao-seedream-4-0-250828',
      prompt: 'a paper crane on a wet window sill',
      size: '2736x1536',
      seed: 11,
      sequential_image_generation: 'disabled',
      response_format: 'url',
    });
    const download = fake.requests.find((r) => r.path.startsWith('/tos/img/'))!;
    assert.equal(download.headers.authorization, undefined, 'no key is sent to the image storage');
    const image = await sharp(Buffer.from(await (await fetch(body.data[0].url)).arrayBuffer())).metadata();
    assert.deepEqual([image.format, image.width, image.height], ['jpeg', 2736, 1536]);
    assert.deepEqual(body.mediaSize, { type: 'image', width: 2736, height: 1536, status: 1 });
    const record = await user.record(body.task_id);
    assert.deepEqual(record.usage, { input_tokens: 0, output_tokens: IMAGE_TOKENS, total_tokens: IMAGE_TOKENS });
    assert.equal(record.billings[0].result.token, IMAGE_TOKENS);
    assert.deepEqual(record.generate_info.warnings, ['output_format was not passed on: provider volcengine does not take it']);
  });

  it('n images: a sequential group of up to n; an image the group could not make is a warning, the others are outputs', async () => {
    const { fake, user } = gateway;
    fake.imageFailures = [1];
    const body = await user.postOk('/v1/images/generations', { ...GENERATE, n: 3, resolution: '1K', watermark: false });
    assert.deepEqual(fake.imageRequests[0]!.json, {
      model: 'doubao-seedream-4-0-250828',
      prompt: 'a paper crane on a wet window sill',
      size: '1K',
      sequential_image_generation: 'auto',
      sequential_image_generation_options: { max_images: 3 },
      response_format: 'url',
      watermark: false,
    });
    assert.equal(body.data.length, 2);
    const record = await user.record(body.task_id);
    assert.deepEqual(record.queue_status.data.output_content.map((o: Json) => o.filename), ['image-1.jpg', 'image-2.jpg']);
    assert.equal(record.usage.output_tokens, 2 * IMAGE_TOKENS);
    assert.deepEqual(record.generate_info.warnings, ['image 2 of the group was not made: OutputImageSensitiveContentDetected: The request failed because the output image may contain sensitive information.']);
  });

  it('editing: one reference image as a string, several as a list (data URIs and URLs as they are)', async () => {
    const { fake, user } = gateway;
    const red = await pngDataUri('#ff0000');
    const uploaded = await user.upload(Buffer.from(red.split(',')[1]!, 'base64'), 'red.png', 'image/png');
    await user.postOk('/v1/images/edits', { model: 'seedream-4.5', prompt: 'put the crane on a roof', image: red, size: '2048x2048' });
    assert.deepEqual(fake.imageRequests[0]!.json, {
      model: 'doubao-seedream-4-5-251128', prompt: 'put the crane on a roof', image: red, size: '2048x2048', sequential_image_generation: 'disabled', response_format: 'url',
    });
    await user.postOk('/v1/images/edits', { model: 'seedream-4.5', prompt: 'the crane from both', image: [uploaded, red, 'https://images.example/roof.png'], n: 2 });
    const second = fake.imageRequests[1]!.json as Json;
    assert.deepEqual(second.image, [uploaded, red, 'https://images.example/roof.png']);
    assert.deepEqual(second.sequential_image_generation_options, { max_images: 2 });
  });

  it('refuses what the model cannot draw before anything is sent', async () => {
    const { fake, user } = gateway;
    await user.assertRejected(await user.post('/v1/images/generations', { ...GENERATE, model: 'seedream-4.5', resolution: '1K' }), /seedream-4.5 renders 2K, 4K, not 1K/);
    await user.assertRejected(await user.post('/v1/images/generations', { ...GENERATE, size: '512x512' }), /seedream-4.0 draws 921600 to 16777216 pixels, not 512x512/);
    const fourteen = await Promise.all(Array.from({ length: 14 }, () => pngDataUri('#00ff00')));
    await user.assertRejected(await user.post('/v1/images/edits', { model: 'seedream-4.0', prompt: 'x', image: fourteen, n: 2 }), /at most 15 images counting the reference images \(14 given, n 2\)/);
    const mask = await user.post('/v1/images/edits', { model: 'seedream-4.0', prompt: 'x', image: fourteen[0], mask: fourteen[1] });
    assert.equal(mask.status, 400);
    assert.equal(((await mask.json()) as Json).error.code, 'unsupported_parameter');
    assert.equal(fake.imageRequests.length, 0);
  });

  it('an upstream refusal fails with Ark\'s code and message; a group with no image fails with the items\' error', async () => {
    const { fake, user } = gateway;
    fake.inject('POST', '/api/v3/images/generations', { status: 400, body: { error: { code: 'InputTextSensitiveContentDetected', message: 'The request failed because the input text may contain sensitive information.', param: 'prompt', type: 'BadRequest' } } });
    const refused = await user.failedStatus(await user.post('/v1/images/generations', GENERATE));
    assert.equal(refused.message, 'volcengine answered HTTP 400');
    assert.equal(refused.original_error_message, 'InputTextSensitiveContentDetected: The request failed because the input text may contain sensitive information.');
    fake.imageFailures = [0];
    const empty = await user.failedStatus(await user.post('/v1/images/generations', GENERATE));
    assert.equal(empty.message, 'seedream made no image (OutputImageSensitiveContentDetected)');
  });

  it('retries a 429 and a 500, then answers from one request', async () => {
    const { fake, user } = gateway;
    fake.createErrors = [429, 500];
    await user.postOk('/v1/images/generations', GENERATE);
    assert.equal(fake.imageRequests.length, 3);
  });

  it('a request past timeout_ms fails and is not sent again; cancel answers 409', async () => {
    const { fake, user } = gateway;
    fake.holdingImages = true;
    await withGateway(gatewayEnv(fake, { timeout_ms: 400 }), 'illustrator', async (other) => {
      const status = await other.failedStatus(await other.post('/v1/images/generations', GENERATE));
      assert.equal(status.message, 'volcengine timed out after 400 ms');
    });
    assert.equal(fake.imageRequests.length, 1, 'a request that may have been acted on is not repeated');
    const { task_id: taskId } = await user.postOk('/v1/images/generations', GENERATE, { 'x-async': '1' });
    await fake.until(() => fake.imageRequests.length === 2);
    await user.assertNotCancellable(taskId);
  });

  it('a request cut off by a restart is not sent again: the task fails saying why, after exactly one request', async () => {
    const { fake } = gateway;
    fake.holdingImages = true;
    await withRestartingGateway({ ...gatewayEnv(fake), TASK_LEASE_MS: '300' }, 'restarter', async (restarting) => {
      const { task_id: taskId } = await restarting.user.postOk('/v1/images/generations', GENERATE, { 'x-async': '1' });
      await fake.until(() => fake.imageRequests.length === 1);
      const user = await restarting.restart({ meanwhile: () => void (fake.holdingImages = false) });
      const status = await user.settledStatus(taskId);
      assert.equal(status.status, 'failed');
      assert.equal(status.message, 'the request to Seedream was interrupted by a restart; it is not sent again because it may already have been billed');
      await eventually('no second request', () => fake.imageRequests.length === 1);
    });
    assert.equal(fake.imageRequests.length, 1);
  });
});
