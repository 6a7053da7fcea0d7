import { beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import sharp, { type Metadata } from 'sharp';
import { BFL_KEY, BflUpstream, drawnSize } from '../fakes/bfl-upstream.ts';
import {
  assertNotCancellableWhileHeld, assertResumedAfterRestart, providerEnv, useProviderGateway, withGateway, type GatewayUser, type HeldTask, type Json,
} from '../support/provider-harness.ts';

const KEY_ENV = 'GENGATE_TEST_BFL_KEY';
process.env[KEY_ENV] = BFL_KEY;

const GENERATE = { model: 'flux-kontext-pro', prompt: 'a glass lighthouse on a basalt cliff' };

const gatewayEnv = (fake: BflUpstream, settings: Record<string, unknown> = {}) => providerEnv('bfl', fake.url, { api_key_env: KEY_ENV, ...settings });

/** A generation the fake keeps Pending while holding. */
const held = (fake: BflUpstream): HeldTask => ({
  path: '/v1/images/generations',
  body: () => GENERATE,
  polled: () => fake.polls.length > 0 && [...fake.submitted.keys()].at(-1),
  finish: () => void (fake.holding = false),
});

async function pngDataUri(colour: string): Promise<string> {
  return `data:image/png;base64,${(await sharp({ create: { width: 40, height: 40, channels: 3, background: colour } }).png().toBuffer()).toString('base64')}`;
}

async function imageOf(url: string): Promise<Metadata & { contentType: string | null }> {
  const res = await fetch(url);
  return { ...(await sharp(Buffer.from(await res.arrayBuffer())).metadata()), contentType: res.headers.get('content-type') };
}

describe('bfl (FLUX Kontext) adapter', () => {
  const gateway = useProviderGateway({ startFake: BflUpstream.start, env: (fake) => gatewayEnv(fake), userId: 'painter' });
  beforeEach(() => {
    const { fake } = gateway;
    fake.requests.length = 0;
    fake.statuses = ['Pending', 'Pending', 'Ready'];
    fake.holding = false;
    fake.createErrors = [];
  });

  it('generation: x-key, the exact Kontext body, the returned polling URL followed, the sample downloaded without the key', async () => {
    const { fake, user } = gateway;
    const res = await user.post('/v1/images/generations', { ...GENERATE, aspect_ratio: '16:9', seed: 42, output_format: 'jpg', safety_tolerance: 2, prompt_upsampling: true });
    const body: Json = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body));

    const [submit, ...more] = fake.submits;
    assert.equal(more.length, 0);
    assert.equal(submit!.path, '/v1/flux-kontext-pro');
    assert.equal(submit!.headers['x-key'], BFL_KEY);
    assert.deepEqual(submit!.json, { prompt: 'a glass lighthouse on a basalt cliff', seed: 42, aspect_ratio: '16:9', output_format: 'jpeg', prompt_upsampling: true, safety_tolerance: 2 });
    const id = [...fake.submitted.keys()].at(-1)!;
    assert.equal(fake.polls.length, 3, 'Pending, Pending, Ready');
    for (const poll of fake.polls) {
      assert.equal(poll.target, `/eu1/v1/get_result?id=${id}`, 'the polling URL as returned, not rebuilt on the base URL');
      assert.equal(poll.headers['x-key'], BFL_KEY);
    }
    const delivery = fake.requests.find((r) => r.path.startsWith('/delivery/'))!;
    assert.equal(delivery.headers['x-key'], undefined, 'the key is not sent to the delivery host');

    const { width, height } = drawnSize('16:9');
    const image = await imageOf(body.data[0].url);
    assert.deepEqual([image.format, image.width, image.height, image.contentType], ['jpeg', width, height, 'image/jpeg']);
    assert.deepEqual(body.mediaSize, { type: 'image', width, height, status: 1 });
    const record = await user.record(body.task_id);
    assert.equal(record.queue_status.data.output_content[0].filename, 'image-1.jpg');
  });

  it('editing: the first image as input_image, more as input_image_2…; a data URI as raw base64, a URL as it is; size becomes its ratio', async () => {
    const { fake, user } = gateway;
    const base = await pngDataUri('#ff0000');
    const res = await user.post('/v1/images/edits', { model: 'flux-kontext-max', prompt: 'make the house blue', image: [base, 'https://images.example/style.png'], size: '1920x1080' });
    const body: Json = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.equal(fake.submits[0]!.path, '/v1/flux-kontext-max');
    assert.deepEqual(fake.submits[0]!.json, {
      prompt: 'make the house blue',
      input_image: base.slice('data:image/png;base64,'.length),
      input_image_2: 'https://images.example/style.png',
      aspect_ratio: '16:9',
    });
    const record = await user.record(body.task_id);
    assert.deepEqual(record.generate_info.warnings, ['size 1920x1080 sent as aspect_ratio 16:9: FLUX Kontext chooses the pixel size itself (about one megapixel)']);
  });

  it('what Kontext cannot do is refused before anything is sent', async () => {
    const { fake, user } = gateway;
    const mask = await user.post('/v1/images/edits', { model: 'flux-kontext-pro', prompt: 'x', image: await pngDataUri('#00ff00'), mask: await pngDataUri('#000000') });
    assert.equal(mask.status, 400);
    assert.equal(((await mask.json()) as Json).error.code, 'unsupported_parameter');
    const many = await user.post('/v1/images/generations', { ...GENERATE, n: 2 });
    assert.equal(many.status, 400);
    assert.equal(((await many.json()) as Json).error.param, 'n');
    await user.assertRejected(await user.post('/v1/images/generations', { ...GENERATE, aspect_ratio: '3:1' }), /aspect ratios from 21:9 to 9:21, not 3:1/);
    await user.assertRejected(await user.post('/v1/images/generations', { ...GENERATE, safety_tolerance: 9 }), /safety_tolerance is a whole number from 0/);
    assert.equal(fake.submits.length, 0);
  });

  it('moderated requests and outputs fail saying so, with the moderation details; an upstream Error too', async () => {
    const { fake, user } = gateway;
    fake.statuses = ['Pending', 'Request Moderated'];
    const input = await user.failedStatus(await user.post('/v1/images/generations', GENERATE));
    assert.equal(input.message, 'the request was blocked by FLUX moderation');
    assert.equal(input.original_error_message, 'Request Moderated {"Moderation Reasons":["Derivative Works Filter"]}');
    fake.statuses = ['Content Moderated'];
    const output = await user.failedStatus(await user.post('/v1/images/generations', GENERATE));
    assert.equal(output.message, 'the generated image was blocked by FLUX moderation');
    fake.statuses = ['Error'];
    assert.equal((await user.failedStatus(await user.post('/v1/images/generations', GENERATE))).message, 'bfl could not generate the image');
  });

  it('a refused body fails with BFL\'s validation detail; a wrong key with "Not authenticated"', async () => {
    const { fake, user } = gateway;
    fake.inject('POST', '/v1/flux-kontext-pro', { status: 422, body: { detail: [{ loc: ['body', 'prompt'], msg: 'String should have at most 10000 characters', type: 'string_too_long' }] } });
    const refused = await user.failedStatus(await user.post('/v1/images/generations', GENERATE));
    assert.equal(refused.message, 'bfl answered HTTP 422');
    assert.equal(refused.original_error_message, 'body.prompt: String should have at most 10000 characters');
    process.env.GENGATE_TEST_BFL_WRONG = 'not-the-key';
    await withGateway(gatewayEnv(fake, { api_key_env: 'GENGATE_TEST_BFL_WRONG' }), 'painter', async (other: GatewayUser) => {
      const status = await other.failedStatus(await other.post('/v1/images/generations', GENERATE));
      assert.equal(status.original_error_message, 'Not authenticated');
    });
  });

  it('retries a 429 and a 502 on submit, then succeeds with one request', async () => {
    const { fake, user } = gateway;
    const before = fake.submitted.size;
    fake.createErrors = [429, 502];
    await user.postOk('/v1/images/generations', GENERATE);
    assert.equal(fake.submits.length, 3);
    assert.equal(fake.submitted.size - before, 1);
  });

  it('cancel answers 409; a request still Pending past max_wait_ms fails saying so', async () => {
    const { fake, user } = gateway;
    fake.holding = true;
    await assertNotCancellableWhileHeld(user, held(fake));
    fake.holding = true;
    await withGateway(gatewayEnv(fake, { max_wait_ms: 1000 }), 'painter', async (other) => {
      const status = await other.settledStatus((await other.postOk('/v1/images/generations', GENERATE, { 'x-async': '1' })).task_id);
      assert.equal(status.status, 'failed');
      assert.equal(status.message, 'the upstream task did not finish within 1 s');
    });
  });

  it('a task resumed after a restart polls the request it submitted: one submit', async () => {
    const { fake } = gateway;
    fake.holding = true;
    await assertResumedAfterRestart({ ...gatewayEnv(fake), TASK_LEASE_MS: '300' }, held(fake), () => fake.submits.length);
  });
});
