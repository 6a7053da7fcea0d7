import { beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import sharp from 'sharp';
import { ArkUpstream, VIDEO_SIZE, VIDEO_TOKENS } from '../fakes/ark-upstream.ts';
import { download } from '../support/audio.ts';
import { audioStream, ffprobe, videoStream } from '../support/media.ts';
import {
  assertNotCancellableWhileHeld, assertResumedAfterRestart, providerEnv, useProviderGateway, withGateway, type GatewayUser, type HeldTask, type Json,
} from '../support/provider-harness.ts';

const KEY_ENV = 'GENGATE_TEST_ARK_KEY';
process.env[KEY_ENV] = 'ark-secret-key';

const TEXT_TO_VIDEO = { model: 'seedance-1.0-pro', content: [{ type: 'text', text: 'A red kite over the dunes at dusk' }] };

const gatewayEnv = (fake: ArkUpstream, settings: Record<string, unknown> = {}) => providerEnv('volcengine', `${fake.url}/api/v3`, { api_key_env: KEY_ENV, ...settings });

const submit = (user: GatewayUser, body: Json, headers: Record<string, string> = {}) => user.post('/v1/video/generations', body, headers);

/** A text-to-video task Ark keeps queued while the fake is holding. */
const held = (fake: ArkUpstream): HeldTask => ({
  path: '/v1/video/generations',
  body: () => TEXT_TO_VIDEO,
  polled: () => fake.queries.length > 0 && [...fake.tasks.keys()].at(-1),
  finish: () => void (fake.holding = false),
});

async function png(colour: string): Promise<Buffer> {
  return sharp({ create: { width: 320, height: 320, channels: 3, background: colour } }).png().toBuffer();
}

describe('seedance (volcengine ark) adapter', () => {
  const gateway = useProviderGateway({ startFake: () => ArkUpstream.start(process.env[KEY_ENV]!), env: (fake) => gatewayEnv(fake), userId: 'director' });
  beforeEach(() => {
    const { fake } = gateway;
    fake.requests.length = 0;
    fake.statuses = ['queued', 'running', 'succeeded'];
    fake.holding = false;
    fake.createErrors = [];
  });

  it('text to video: settings as task fields, polled to succeeded, the MP4 probed and usage billed', async () => {
    const { fake, user } = gateway;
    const res = await submit(user, { ...TEXT_TO_VIDEO, resolution: '1080p', aspect_ratio: '16:9', duration: 10, seed: 42, camerafixed: true, negative_prompt: 'blur', framespersecond: 24 });
    const draw: Json = await res.json();
    assert.equal(res.status, 200, JSON.stringify(draw));
    assert.equal(draw.type, 'video');

    const [create, ...more] = fake.creates;
    assert.equal(more.length, 0);
    assert.equal(create!.headers.authorization, 'Bearer ark-secret-key');
    assert.match(String(create!.headers['content-type']), /^application\/json/);
    assert.deepEqual(create!.json, {
      model: 'doubao-seedance-1-0-pro-250528',
      content: [{ type: 'text', text: 'A red kite over the dunes at dusk' }],
      resolution: '1080p',
      ratio: '16:9',
      duration: 10,
      framespersecond: 24,
      seed: 42,
      camera_fixed: true,
      watermark: false,
    });
    const taskId = [...fake.tasks.keys()].at(-1)!;
    assert.ok(fake.queries.length >= 3);
    for (const q of fake.queries) {
      assert.equal(q.path, `/api/v3/contents/generations/tasks/${taskId}`);
      assert.equal(q.headers.authorization, 'Bearer ark-secret-key');
    }
    const videoDownload = fake.requests.find((r) => r.path.startsWith('/tos/'))!;
    assert.equal(videoDownload.headers.authorization, undefined, 'no key is sent to the file storage');

    const item = draw.output_content[0];
    assert.equal(item.type, 'video');
    assert.deepEqual(item.mediaSize, { type: 'video', ...VIDEO_SIZE, status: 1 });
    assert.equal(item.has_audio, false);
    assert.deepEqual(draw.mediaSize, item.mediaSize);
    const file = await download(item.url);
    assert.equal(file.contentType, 'video/mp4');
    const probed = await ffprobe(file.data);
    assert.equal(videoStream(probed)!.codec_name, 'h264');
    assert.equal(audioStream(probed), undefined);

    const r = await user.record(draw.task_id);
    assert.deepEqual(r.usage, { input_tokens: 0, output_tokens: VIDEO_TOKENS, total_tokens: VIDEO_TOKENS });
    assert.equal(r.billings[0].result.token, VIDEO_TOKENS);
    assert.deepEqual(r.billings[0].billing_model, { name: 'seedance-1.0-pro', real_model: 'doubao-seedance-1-0-pro-250528' });
  });

  it('image to video: frames keep their roles, data URIs are published, an uploaded URL goes as it is', async () => {
    const { fake, user } = gateway;
    const first = await user.upload(await png('#ff0000'), 'first.png', 'image/png');
    const last = await png('#0000ff');
    const res = await submit(user, {
      model: 'seedance-1.0-pro',
      content: [
        { type: 'text', text: 'The colour drains away' },
        { type: 'image_url', image_url: { url: first }, role: 'first_frame' },
        { type: 'image_url', image_url: { url: `data:image/png;base64,${last.toString('base64')}` }, role: 'last_frame' },
      ],
      audio: true,
    });
    const draw: Json = await res.json();
    assert.equal(res.status, 200, JSON.stringify(draw));
    const body = fake.creates[0]!.json as Json;
    assert.equal(body.ratio, 'adaptive', 'adaptive follows the first frame');
    assert.equal(body.generate_audio, true);
    assert.deepEqual(body.content[0], { type: 'text', text: 'The colour drains away' });
    assert.deepEqual(body.content[1], { type: 'image_url', image_url: { url: first }, role: 'first_frame' });
    assert.equal(body.content[2].role, 'last_frame');
    assert.match(body.content[2].image_url.url, new RegExp(`^${user.srv.url}/files/`));
    const published = await download(body.content[2].image_url.url);
    assert.ok(published.data.equals(last), 'the published URL serves the data URI bytes');
    assert.equal(draw.output_content[0].has_audio, true);
    assert.ok(audioStream(await ffprobe((await download(draw.output[0])).data)), 'the video carries its sound');
  });

  it('options.parameter_style "flags" writes the settings into the prompt', async () => {
    const { fake } = gateway;
    await withGateway(gatewayEnv(fake, { options: { parameter_style: 'flags', callback_url: 'https://hooks.example.com/ark' } }), 'director', async (other) => {
      const res = await submit(other, { ...TEXT_TO_VIDEO, duration: 5, seed: 7 });
      assert.equal(res.status, 200, await res.clone().text());
    });
    assert.deepEqual(fake.creates[0]!.json, {
      model: 'doubao-seedance-1-0-pro-250528',
      content: [{ type: 'text', text: 'A red kite over the dunes at dusk --rs 720p --dur 5 --seed 7 --cf false --wm false' }],
      callback_url: 'https://hooks.example.com/ark',
    });
  });

  it('refuses what Seedance cannot do before anything is sent', async () => {
    const { fake, user } = gateway;
    const reference = `data:image/png;base64,${(await png('#00ff00')).toString('base64')}`;
    const cases: [Json, RegExp][] = [
      [{ ...TEXT_TO_VIDEO, resolution: '1440p' }, /480p, 720p or 1080p, not 1440p/],
      [{ ...TEXT_TO_VIDEO, aspect_ratio: '9:21' }, /no 9:21 aspect ratio/],
      [{ ...TEXT_TO_VIDEO, duration: 4.5 }, /whole number of seconds/],
      [{ model: 'seedance-1.0-pro', content: [{ type: 'image_url', image_url: { url: reference }, role: 'last_frame' }] }, /last_frame image needs a first_frame/],
      [{ model: 'seedance-1.0-lite-i2v', content: [{ type: 'image_url', image_url: { url: reference }, role: 'first_frame' }, { type: 'image_url', image_url: { url: reference }, role: 'reference' }] }, /cannot mix first\/last frames with reference/],
      [{ model: 'seedance-1.0-pro', content: [{ type: 'image_url', image_url: { url: reference }, role: 'digital_human_frame' }] }, /cannot take an image with role digital_human_frame \(content\[0\]\)/],
    ];
    for (const [body, message] of cases) await user.assertRejected(await submit(user, body), message);
    assert.equal(fake.creates.length, 0);
  });

  it('a failed task fails with the upstream error code and message', async () => {
    const { fake, user } = gateway;
    fake.statuses = ['queued', 'running', 'failed'];
    const res = await submit(user, TEXT_TO_VIDEO);
    const q = await user.failedStatus(res);
    assert.equal(q.message, 'seedance video task failed (OutputVideoSensitiveContentDetected)');
    assert.equal(q.original_error_message, fake.failure.message);
  });

  it('retries a 429 and a 500 on create, then succeeds with one task', async () => {
    const { fake, user } = gateway;
    fake.createErrors = [429, 500];
    const res = await submit(user, TEXT_TO_VIDEO);
    assert.equal(res.status, 200, await res.clone().text());
    assert.equal(fake.creates.length, 3);
    assert.equal(fake.tasks.size > 0, true);
  });

  it('external API tasks cannot be cancelled; a task past max_wait_ms fails', async () => {
    const { fake, user } = gateway;
    fake.holding = true;
    await assertNotCancellableWhileHeld(user, held(fake));

    fake.holding = true;
    await withGateway(gatewayEnv(fake, { max_wait_ms: 150 }), 'director', async (other) => {
      const slow = await submit(other, TEXT_TO_VIDEO);
      const err: Json = await slow.json();
      assert.equal(slow.status, 502);
      assert.match(err.error.message, /the upstream task did not finish within/);
    });
  });

  it('a task resumed after a restart polls the task it created: one create', async () => {
    const { fake } = gateway;
    fake.holding = true;
    await assertResumedAfterRestart(gatewayEnv(fake), held(fake), () => fake.creates.length);
  });
});
