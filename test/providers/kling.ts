import { beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import sharp from 'sharp';
import { klingToken } from '../../src/providers/kling/adapter.ts';
import { KLING_ACCESS_KEY, KLING_SECRET_KEY, KLING_VIDEO_SIZE, KlingUpstream, verifyToken } from '../fakes/kling-upstream.ts';
import { download } from '../support/audio.ts';
import { audioStream, ffprobe } from '../support/media.ts';
import {
  assertNotCancellableWhileHeld, assertResumedAfterRestart, providerEnv, useProviderGateway, withGateway, type GatewayUser, type HeldTask, type Json,
} from '../support/provider-harness.ts';

const KEY_ENV = 'GENGATE_TEST_KLING_KEYS';
process.env[KEY_ENV] = `${KLING_ACCESS_KEY}:${KLING_SECRET_KEY}`;

const TEXT_TO_VIDEO = { model: 'kling-v2.5-turbo', content: [{ type: 'text', text: 'A paper boat drifting down a rainy gutter' }] };

const gatewayEnv = (fake: KlingUpstream, settings: Record<string, unknown> = {}) => providerEnv('kling', fake.url, { api_key_env: KEY_ENV, ...settings });

const submit = (user: GatewayUser, body: Json) => user.post('/v1/video/generations', body);

/** A text-to-video task Kling keeps submitted while the fake is holding. */
const held = (fake: KlingUpstream): HeldTask => ({
  path: '/v1/video/generations',
  body: () => TEXT_TO_VIDEO,
  polled: () => fake.queries.length > 0 && [...fake.tasks.keys()].at(-1),
  finish: () => fake.release(),
});

async function png(colour: string): Promise<Buffer> {
  return sharp({ create: { width: 320, height: 320, channels: 3, background: colour } }).png().toBuffer();
}

describe('kling token', () => {
  it('is an HS256 JWT: iss the access key, exp 30 minutes on, nbf 5 s back, signed with the secret key', () => {
    const now = 1_760_000_000;
    const token = klingToken(KLING_ACCESS_KEY, KLING_SECRET_KEY, now);
    const [head, claims] = token.split('.').slice(0, 2).map((part) => JSON.parse(Buffer.from(part, 'base64url').toString('utf8')));
    assert.deepEqual(head, { alg: 'HS256', typ: 'JWT' });
    assert.deepEqual(claims, { iss: KLING_ACCESS_KEY, exp: now + 1800, nbf: now - 5 });
    assert.ok('claims' in verifyToken(`Bearer ${token}`, KLING_SECRET_KEY, now));
    assert.deepEqual(verifyToken(`Bearer ${token}`, KLING_SECRET_KEY, now + 1800), { code: 1004, message: 'Authorization is expired' });
    assert.deepEqual(verifyToken(`Bearer ${token}`, KLING_SECRET_KEY, now - 10), { code: 1003, message: 'Authorization is not active' });
    assert.deepEqual(verifyToken(`Bearer ${token}`, 'another secret', now), { code: 1002, message: 'Authorization is invalid' });
  });
});

describe('kling adapter', () => {
  const gateway = useProviderGateway({ startFake: KlingUpstream.start, env: (fake) => gatewayEnv(fake), userId: 'director' });
  beforeEach(() => {
    const { fake } = gateway;
    fake.requests.length = 0;
    fake.statuses = ['submitted', 'processing', 'succeed'];
    fake.holding = false;
    fake.createErrors = [];
  });

  it('text to video: JWT auth, the exact text2video body, polled to succeed, the MP4 downloaded without credentials', async () => {
    const { fake, user } = gateway;
    const res = await submit(user, { ...TEXT_TO_VIDEO, resolution: '1080p', aspect_ratio: '9:16', duration: 10, negative_prompt: 'blur', camera_control: 'forward_up', seed: 3 });
    const draw: Json = await res.json();
    assert.equal(res.status, 200, JSON.stringify(draw));

    const [create, ...more] = fake.creates;
    assert.equal(more.length, 0);
    assert.equal(create!.path, '/v1/videos/text2video');
    assert.ok('claims' in verifyToken(create!.headers.authorization, KLING_SECRET_KEY));
    assert.deepEqual(create!.json, {
      model_name: 'kling-v2-5-turbo',
      prompt: 'A paper boat drifting down a rainy gutter',
      negative_prompt: 'blur',
      mode: 'pro',
      aspect_ratio: '9:16',
      duration: '10',
      camera_control: { type: 'forward_up' },
    });
    const taskId = [...fake.tasks.keys()].at(-1)!;
    assert.ok(fake.queries.length >= 3);
    for (const q of fake.queries) assert.equal(q.path, `/v1/videos/text2video/${taskId}`);
    assert.deepEqual(new Set(fake.issuers), new Set([KLING_ACCESS_KEY]));
    const videoDownload = fake.requests.find((r) => r.path.startsWith('/cdn/'))!;
    assert.equal(videoDownload.headers.authorization, undefined, 'no token is sent to the file storage');

    const item = draw.output_content[0];
    assert.equal(item.type, 'video');
    assert.deepEqual(item.mediaSize, { type: 'video', ...KLING_VIDEO_SIZE, status: 1 });
    assert.equal(item.has_audio, false);
    const file = await download(item.url);
    assert.equal(file.contentType, 'video/mp4');
    const record = await user.record(draw.task_id);
    assert.deepEqual(record.generate_info.warnings, ['seed was not sent: Kling takes none']);
  });

  it('the mode follows the resolution the model renders; a resolution it has not is rendered as the nearest, with a warning', async () => {
    const { fake, user } = gateway;
    const std = await user.postOk('/v1/video/generations', { ...TEXT_TO_VIDEO, resolution: '720p' });
    assert.equal((fake.creates.at(-1)!.json as Json).mode, 'std');
    assert.deepEqual((await user.record(std.task_id)).generate_info.warnings ?? [], []);
    const master = await user.postOk('/v1/video/generations', { ...TEXT_TO_VIDEO, model: 'kling-v2.1-master' });
    assert.deepEqual(fake.creates.at(-1)!.json, {
      model_name: 'kling-v2-1-master', prompt: 'A paper boat drifting down a rainy gutter', mode: 'pro', duration: '5',
    });
    assert.deepEqual((await user.record(master.task_id)).generate_info.warnings, ['resolution 720p rendered as 1080p (mode pro): kling-v2.1-master renders 1080p']);
  });

  it('image to video: an uploaded URL goes as it is, a data URI as raw base64, the last frame as image_tail; sound on 2.6', async () => {
    const { fake, user } = gateway;
    const first = await user.upload(await png('#ff0000'), 'first.png', 'image/png');
    const last = await png('#0000ff');
    const draw = await user.postOk('/v1/video/generations', {
      model: 'kling-v2.6',
      content: [
        { type: 'text', text: 'The colour drains away' },
        { type: 'image_url', image_url: { url: first }, role: 'first_frame' },
        { type: 'image_url', image_url: { url: `data:image/png;base64,${last.toString('base64')}` }, role: 'last_frame' },
      ],
      aspect_ratio: '16:9',
      audio: true,
    });
    const create = fake.creates[0]!;
    assert.equal(create.path, '/v1/videos/image2video');
    assert.deepEqual(create.json, {
      model_name: 'kling-v2-6',
      prompt: 'The colour drains away',
      mode: 'std',
      image: first,
      image_tail: last.toString('base64'),
      duration: '5',
      sound: 'on',
    });
    assert.ok(fake.queries.every((q) => q.path.startsWith('/v1/videos/image2video/')));
    assert.equal(draw.output_content[0].has_audio, true);
    assert.ok(audioStream(await ffprobe((await download(draw.output[0])).data)), 'the video carries its sound');
    assert.deepEqual((await user.record(draw.task_id)).generate_info.warnings, ['aspect_ratio 16:9 was not sent: Kling image-to-video follows the first frame']);
  });

  it('omni video: images with their frame types, subjects by element id and a reference video in one omni-video request', async () => {
    const { fake, user } = gateway;
    await user.postOk('/v1/video/generations', {
      model: 'kling-o1',
      content: [
        { type: 'text', text: '<<<element_1>>> walks through <<<image_2>>> in the style of <<<video_1>>>' },
        { type: 'image_url', image_url: { url: 'https://images.example/start.png' }, role: 'first_frame' },
        { type: 'image_url', image_url: { url: 'https://images.example/street.png' }, role: 'reference' },
        { type: 'element', element: { system_element_id: '829836802793406551' } },
        { type: 'video_url', video_url: { url: 'https://videos.example/style.mp4', refer_type: 'feature', keep_original_sound: 'no' } },
      ],
      resolution: '1080p',
      duration: 7,
    });
    const create = fake.creates[0]!;
    assert.equal(create.path, '/v1/videos/omni-video');
    assert.deepEqual(create.json, {
      model_name: 'kling-video-o1',
      prompt: '<<<element_1>>> walks through <<<image_2>>> in the style of <<<video_1>>>',
      mode: 'pro',
      image_list: [{ image_url: 'https://images.example/start.png', type: 'first_frame' }, { image_url: 'https://images.example/street.png' }],
      element_list: [{ element_id: '829836802793406551' }],
      video_list: [{ video_url: 'https://videos.example/style.mp4', refer_type: 'feature', keep_original_sound: 'no' }],
      duration: '7',
    });
    // Text alone: the ratio Kling needs when nothing else sets it.
    await user.postOk('/v1/video/generations', { model: 'kling-o1', content: [{ type: 'text', text: 'a comet' }], resolution: '1080p' });
    assert.deepEqual(fake.creates[1]!.json, { model_name: 'kling-video-o1', prompt: 'a comet', mode: 'pro', aspect_ratio: '16:9', duration: '5' });
  });

  it('refuses what Kling cannot do before anything is sent', async () => {
    const { fake, user } = gateway;
    const frame = `data:image/png;base64,${(await png('#00ff00')).toString('base64')}`;
    const cases: [Json, RegExp][] = [
      [{ ...TEXT_TO_VIDEO, aspect_ratio: '4:3' }, /kling-v2.5-turbo has no 4:3 aspect ratio \(it renders 16:9, 9:16, 1:1\)/],
      [{ ...TEXT_TO_VIDEO, duration: 7 }, /kling-v2.5-turbo renders 5 or 10 seconds, not 7/],
      [{ ...TEXT_TO_VIDEO, camera_control: 'simple' }, /camera_control takes down_back, forward_up, right_turn_forward, left_turn_forward, not simple/],
      [{ model: 'kling-v2.6', content: [{ type: 'image_url', image_url: { url: frame }, role: 'reference' }] }, /takes first and last frames, not an image with role reference/],
      [{ model: 'kling-v2.6', content: [{ type: 'image_url', image_url: { url: frame }, role: 'last_frame' }] }, /takes one first frame/],
      [{ model: 'kling-o1', content: [{ type: 'text', text: 'x' }, { type: 'audio_url', audio_url: { url: 'https://a.example/a.mp3' } }] }, /Kling takes no audio input \(content\[1\]\)/],
      [{ model: 'kling-o1', content: [{ type: 'text', text: 'x' }, { type: 'element', element: { inline_element: { name: 'cat', frontal_image_url: frame } } }] }, /by element id only/],
    ];
    for (const [body, message] of cases) await user.assertRejected(await submit(user, body), message);
    assert.equal(fake.creates.length, 0);
  });

  it('a failed task fails with Kling\'s reason; a refused request with its code and message', async () => {
    const { fake, user } = gateway;
    fake.statuses = ['submitted', 'failed'];
    const failed = await user.failedStatus(await submit(user, TEXT_TO_VIDEO));
    assert.equal(failed.message, 'kling video task failed');
    assert.equal(failed.original_error_message, fake.failureMessage);

    fake.statuses = ['succeed'];
    fake.inject('POST', '/v1/videos/text2video', { status: 400, body: { code: 1301, message: 'content safety policy triggered', request_id: 'r1' } });
    const refused = await user.failedStatus(await submit(user, TEXT_TO_VIDEO));
    assert.equal(refused.message, 'kling answered HTTP 400');
    assert.equal(refused.original_error_message, '1301 content safety policy triggered');
  });

  it('a wrong key pair is refused by Kling with its auth code; a missing pair before sending', async () => {
    const { fake } = gateway;
    const tasksBefore = fake.tasks.size;
    process.env.GENGATE_TEST_KLING_WRONG = `${KLING_ACCESS_KEY}:not-the-secret`;
    process.env.GENGATE_TEST_KLING_HALF = KLING_ACCESS_KEY;
    await withGateway(gatewayEnv(fake, { api_key_env: 'GENGATE_TEST_KLING_WRONG' }), 'director', async (other) => {
      const status = await other.failedStatus(await submit(other, TEXT_TO_VIDEO));
      assert.equal(status.original_error_message, '1002 Authorization is invalid');
    });
    await withGateway(gatewayEnv(fake, { api_key_env: 'GENGATE_TEST_KLING_HALF' }), 'director', async (other) => {
      await other.assertRejected(await submit(other, TEXT_TO_VIDEO), /no key pair \(set the variable named by api_key_env to ACCESS_KEY:SECRET_KEY\)/);
    });
    assert.equal(fake.tasks.size, tasksBefore, 'no task was made');
  });

  it('retries a 429 (1303) and a 500 on create, then succeeds with one task', async () => {
    const { fake, user } = gateway;
    const tasksBefore = fake.tasks.size;
    fake.createErrors = [429, 500];
    await user.postOk('/v1/video/generations', TEXT_TO_VIDEO);
    assert.equal(fake.creates.length, 3);
    assert.equal(fake.tasks.size - tasksBefore, 1);
  });

  it('cancel answers 409; a task past max_wait_ms fails saying so', async () => {
    const { fake, user } = gateway;
    fake.holding = true;
    await assertNotCancellableWhileHeld(user, held(fake));
    fake.holding = true;
    await withGateway(gatewayEnv(fake, { max_wait_ms: 1000 }), 'director', async (other) => {
      const status = await other.settledStatus((await other.postOk('/v1/video/generations', TEXT_TO_VIDEO, { 'x-async': '1' })).task_id);
      assert.equal(status.status, 'failed');
      assert.equal(status.message, 'the upstream task did not finish within 1 s');
    });
    fake.holding = false;
  });

  it('a task resumed after a restart polls the task it created: one create', async () => {
    const { fake } = gateway;
    fake.holding = true;
    await assertResumedAfterRestart({ ...gatewayEnv(fake), TASK_LEASE_MS: '300' }, held(fake), () => fake.creates.length);
  });
});
