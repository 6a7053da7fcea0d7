import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import sharp from 'sharp';
import { FakeOpenAiImages } from '../fakes/openai-images-upstream.ts';
import { providerEnv, useProviderGateway, withGateway, withRestartingGateway, type Json } from '../support/provider-harness.ts';

const KEY_ENV = 'GENGATE_TEST_OPENAI_IMAGES_KEY';
const API_KEY = 'sk-test-images';
process.env[KEY_ENV] = API_KEY;

const gatewayEnv = (fake: FakeOpenAiImages, settings: Record<string, unknown> = {}) => providerEnv('openai', fake.baseUrl, { api_key_env: KEY_ENV, ...settings });

const succeeded = (record: Json) => record.queue_status.status === 'success';
const failed = (record: Json) => record.queue_status.status === 'failed';

async function pngDataUri(width: number, height: number, format: 'png' | 'jpeg' = 'png', alpha = false): Promise<string> {
  const image = sharp({ create: { width, height, channels: alpha ? 4 : 3, background: { r: 10, g: 200, b: 30, alpha: alpha ? 0 : 1 } } });
  const bytes = await (format === 'jpeg' ? image.jpeg() : image.png()).toBuffer();
  return `data:image/${format};base64,${bytes.toString('base64')}`;
}

describe('OpenAI images adapter', () => {
  const gateway = useProviderGateway({ startFake: () => FakeOpenAiImages.start(API_KEY), env: (fake) => gatewayEnv(fake), userId: 'painter' });

  it('generates: the exact JSON body upstream, b64 images as served files, usage and billing', async () => {
    const { fake, user } = gateway;
    const before = fake.apiRequests.length;
    const res = await user.post('/v1/images/generations', { model: 'gpt-image-1', prompt: 'a lighthouse at dusk', n: 2, aspect_ratio: '3:2', quality: 'high', output_format: 'webp', seed: 7 });
    const body = (await res.json()) as Json;
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.equal(body.status, 'success');

    const sent = fake.apiRequests.slice(before);
    assert.equal(sent.length, 1);
    assert.equal(sent[0]!.method, 'POST');
    assert.equal(sent[0]!.path, '/v1/images/generations');
    assert.equal(sent[0]!.headers.authorization, `Bearer ${API_KEY}`);
    assert.match(String(sent[0]!.headers['content-type']), /^application\/json/);
    // aspect_ratio 3:2 became a size the model takes; seed (not an OpenAI parameter) was dropped.
    assert.deepEqual(sent[0]!.json, { model: 'gpt-image-1', prompt: 'a lighthouse at dusk', n: 2, size: '1536x1024', quality: 'high', output_format: 'webp' });

    assert.equal(body.data.length, 2);
    for (const { url } of body.data) {
      const file = await fetch(url);
      assert.equal(file.status, 200);
      assert.equal(file.headers.get('content-type'), 'image/webp');
      const meta = await sharp(Buffer.from(await file.arrayBuffer())).metadata();
      assert.deepEqual([meta.format, meta.width, meta.height], ['webp', 1536, 1024]);
    }
    assert.deepEqual(body.mediaSize, { type: 'image', width: 1536, height: 1024, status: 1 });
    const record = await user.recordWhen(body.task_id, succeeded);
    assert.deepEqual(record.usage, { total_tokens: 594, input_tokens: 50, output_tokens: 544 });
    assert.equal(record.billings.length, 1);
    assert.equal(record.billings[0].result.token, 594);
    assert.deepEqual(record.billings[0].billing_model, { name: 'gpt-image-1', real_model: 'gpt-image-1' });
    assert.equal(record.billings[0].platform.code, 'openai');
    assert.equal(record.queue_status.data.output_content[0].filename, 'image-1.webp');
    assert.deepEqual(record.generate_info.warnings, ['seed was not passed on: provider openai does not take it']);
  });

  it('downloads URL results without the API key and drops an aspect ratio the model has no size for', async () => {
    const { fake, user } = gateway;
    const image = await sharp({ create: { width: 40, height: 30, channels: 3, background: '#123456' } }).png().toBuffer();
    const hosted = fake.host(image, 'dalle-result.png');
    fake.inject('POST', '/v1/images/', { status: 200, body: { created: 1, data: [{ url: hosted, revised_prompt: 'a calm sea, detailed' }] } });
    const before = fake.requests.length;
    const res = await user.post('/v1/images/generations', { model: 'gpt-image-1', prompt: 'a calm sea', aspect_ratio: '16:9' });
    const body = (await res.json()) as Json;
    assert.equal(res.status, 200, JSON.stringify(body));
    const sent = fake.requests.slice(before);
    assert.deepEqual(sent[0]!.json, { model: 'gpt-image-1', prompt: 'a calm sea' }, 'no size: 16:9 is not among gpt-image-1 sizes');
    assert.equal(sent[1]!.method, 'GET');
    assert.equal(sent[1]!.path, '/hosted/dalle-result.png');
    assert.equal(sent[1]!.headers.authorization, undefined, 'the key is not sent to result hosts');
    const served = Buffer.from(await (await fetch(body.data[0].url)).arrayBuffer());
    assert.ok(served.equals(image));
    assert.deepEqual(body.mediaSize, { type: 'image', width: 40, height: 30, status: 1 });
    const record = await user.recordWhen(body.task_id, succeeded);
    assert.equal(record.usage, undefined, 'no usage reported, none recorded');
    assert.equal(record.billings[0].result.token, 0);
    assert.deepEqual(record.generate_info.warnings, ['aspect_ratio 16:9 dropped: the model takes none of its sizes (1024x1024, 1536x1024, 1024x1536)']);
  });

  it('edits: multipart with image[] parts for several images, the mask, and the model fields', async () => {
    const { fake, user } = gateway;
    const before = fake.apiRequests.length;
    const res = await user.post('/v1/images/edits', { model: 'gpt-image-1', prompt: 'add a red hat', image: [await pngDataUri(32, 32), await pngDataUri(24, 24, 'jpeg')], mask: await pngDataUri(32, 32, 'png', true), size: '1024x1024', n: 1, seed: 3 });
    const body = (await res.json()) as Json;
    assert.equal(res.status, 200, JSON.stringify(body));
    const sent = fake.apiRequests.slice(before);
    assert.equal(sent.length, 1);
    assert.equal(sent[0]!.path, '/v1/images/edits');
    assert.equal(sent[0]!.headers.authorization, `Bearer ${API_KEY}`);
    assert.match(String(sent[0]!.headers['content-type']), /^multipart\/form-data; boundary=/);
    assert.deepEqual(sent[0]!.fields, [['model', 'gpt-image-1'], ['prompt', 'add a red hat'], ['n', '1'], ['size', '1024x1024']]);
    assert.deepEqual(sent[0]!.files!.map((f) => [f.field, f.fileName, f.type]), [
      ['image[]', 'image-0.png', 'image/png'],
      ['image[]', 'image-1.jpg', 'image/jpeg'],
      ['mask', 'mask.png', 'image/png'],
    ]);
    const mask = await sharp(sent[0]!.files![2]!.data).metadata();
    assert.deepEqual([mask.width, mask.height, mask.hasAlpha], [32, 32, true]);
    const record = await user.recordWhen(body.task_id, succeeded);
    assert.deepEqual(record.usage, { total_tokens: 322, input_tokens: 50, output_tokens: 272 });

    // One image goes as `image`.
    const single = await user.post('/v1/images/edits', { model: 'gpt-image-1', prompt: 'make it blue', image: await pngDataUri(16, 16) });
    assert.equal(single.status, 200, await single.clone().text());
    const last = fake.apiRequests.at(-1)!;
    assert.deepEqual(last.files!.map((f) => f.field), ['image']);
    assert.deepEqual(last.fields, [['model', 'gpt-image-1'], ['prompt', 'make it blue']]);
  });

  it('fails the task with the upstream message when OpenAI refuses the request', async () => {
    const { user } = gateway;
    const res = await user.post('/v1/images/generations', { model: 'gpt-image-1', prompt: 'tiny', size: '512x512' });
    const body = (await res.json()) as Json;
    assert.equal(res.status, 502);
    assert.equal(body.error.code, 'task_failed');
    const taskId = body.error.task_id;
    const record = await user.recordWhen(taskId, failed);
    assert.equal(record.queue_status.message, 'openai answered HTTP 400');
    assert.equal(record.queue_status.original_error_message, "Invalid value: '512x512'. Supported values are: '1024x1024', '1536x1024', '1024x1536', 'auto'.");
  });

  it('retries a 429 after its Retry-After and a 503, then succeeds', async () => {
    const { fake, user } = gateway;
    fake.inject('POST', '/v1/images/', { status: 429, headers: { 'retry-after': '0' }, body: { error: { message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded', param: null } } });
    fake.inject('POST', '/v1/images/', { status: 503, body: { error: { message: 'The server is overloaded', type: 'server_error', param: null, code: null } } });
    const before = fake.apiRequests.length;
    const res = await user.post('/v1/images/generations', { model: 'gpt-image-1', prompt: 'patience' });
    assert.equal(res.status, 200, await res.clone().text());
    const sent = fake.apiRequests.slice(before);
    assert.equal(sent.length, 3);
    for (const request of sent) assert.deepEqual(request.json, { model: 'gpt-image-1', prompt: 'patience' });
  });

  it('answers 409 task_not_cancellable for a running task of this external API', async () => {
    const { fake, user } = gateway;
    fake.hold();
    try {
      const res = await user.post('/v1/images/generations', { model: 'gpt-image-1', prompt: 'slow art' }, { 'x-async': 'true' });
      const { task_id: taskId } = (await res.json()) as Json;
      await fake.received(fake.apiRequests.length + 1);
      await user.assertNotCancellable(taskId);
      fake.release();
      await user.recordWhen(taskId, succeeded);
    } finally {
      fake.release();
    }
  });

  it('fails with a clear message when the upstream does not answer within timeout_ms (not resent)', async () => {
    const { fake } = gateway;
    fake.hold();
    try {
      await withGateway(gatewayEnv(fake, { timeout_ms: 300 }), 'painter', async (user) => {
        const before = fake.apiRequests.length;
        const res = await user.post('/v1/images/generations', { model: 'gpt-image-1', prompt: 'never' });
        const body = (await res.json()) as Json;
        assert.equal(res.status, 502);
        const record = await user.recordWhen(body.error.task_id, failed);
        assert.equal(record.queue_status.message, 'openai timed out after 300 ms');
        assert.equal(fake.apiRequests.length - before, 1, 'a POST that timed out may have been acted on: it is not sent again');
      });
    } finally {
      fake.release();
    }
  });

  it('a run resumed after a restart does not send the request a second time', async () => {
    const { fake } = gateway;
    fake.hold();
    try {
      await withRestartingGateway({ ...gatewayEnv(fake), TASK_LEASE_MS: '1000' }, 'painter', async (restarting) => {
        const before = fake.apiRequests.length;
        const { task_id: taskId } = await restarting.user.postOk('/v1/images/generations', { model: 'gpt-image-1', prompt: 'interrupted' }, { 'x-async': '1' });
        await fake.received(before + 1);
        const user = await restarting.restart();
        const record = await user.recordWhen(taskId, failed);
        assert.match(record.queue_status.message, /interrupted by a restart; it is not sent again/);
        assert.equal(fake.apiRequests.length - before, 1, 'one submit upstream');
      });
    } finally {
      fake.release();
    }
  });
});
