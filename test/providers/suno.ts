import { beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import sharp from 'sharp';
import { PLACEHOLDER_CALLBACK_URL } from '../../src/providers/suno/adapter.ts';
import { SunoUpstream, TRACK_SECONDS } from '../fakes/suno-upstream.ts';
import { audioMetadata, download } from '../support/audio.ts';
import {
  assertNotCancellableWhileHeld, assertResumedAfterRestart, providerEnv, useProviderGateway, withGateway, type GatewayUser, type HeldTask, type Json,
} from '../support/provider-harness.ts';

const KEY_ENV = 'GENGATE_TEST_SUNO_KEY';
const WRONG_KEY_ENV = 'GENGATE_TEST_SUNO_WRONG_KEY';
process.env[KEY_ENV] = 'suno-secret-key';
process.env[WRONG_KEY_ENV] = 'not-the-key';

const CUSTOM_SONG = {
  model: 'suno-v4.5',
  prompt: '[Verse]\nSalt on the wind, the harbour lights',
  tags: 'folk, acoustic',
  negativeTags: 'metal',
  title: 'Harbour Lights',
  customMode: true,
  vocalGender: 'f',
  styleWeight: 0.65,
  weirdnessConstraint: 0.3,
  audioWeight: 0.5,
};

const gatewayEnv = (fake: SunoUpstream, settings: Record<string, unknown> = {}) => providerEnv('suno', fake.url, { api_key_env: KEY_ENV, ...settings });

const submit = (user: GatewayUser, body: Json, headers: Record<string, string> = {}) => user.post('/v1/song/generations', body, headers);

/** A custom-mode song Suno keeps PENDING while the fake is holding. */
const held = (fake: SunoUpstream): HeldTask => ({
  path: '/v1/song/generations',
  body: () => CUSTOM_SONG,
  polled: () => fake.requestsTo('/api/v1/generate/record-info').length > 0 && [...fake.tasks.keys()].at(-1),
  finish: () => void (fake.holding = false),
});

describe('suno adapter', () => {
  const gateway = useProviderGateway({ startFake: () => SunoUpstream.start(process.env[KEY_ENV]!), env: (fake) => gatewayEnv(fake), userId: 'composer' });
  beforeEach(() => {
    const { fake } = gateway;
    fake.requests.length = 0;
    fake.statuses = ['PENDING', 'TEXT_SUCCESS', 'FIRST_SUCCESS', 'SUCCESS'];
    fake.generateErrors = [];
    fake.holding = false;
  });

  it('custom mode: sends the renamed fields, polls to SUCCESS and serves both tracks and covers', async () => {
    const { fake, user } = gateway;
    const res = await submit(user, CUSTOM_SONG);
    const draw: Json = await res.json();
    assert.equal(res.status, 200, JSON.stringify(draw));
    assert.equal(draw.status, 'success');
    assert.equal(draw.type, 'audio');

    const [generate, ...others] = fake.requestsTo('/api/v1/generate');
    assert.equal(others.length, 0, 'one submit');
    assert.equal(generate!.method, 'POST');
    assert.equal(generate!.headers.authorization, 'Bearer suno-secret-key');
    assert.match(String(generate!.headers['content-type']), /^application\/json/);
    assert.deepEqual(generate!.json, {
      customMode: true,
      instrumental: false,
      model: 'V4_5',
      callBackUrl: PLACEHOLDER_CALLBACK_URL,
      prompt: CUSTOM_SONG.prompt,
      style: 'folk, acoustic',
      title: 'Harbour Lights',
      negativeTags: 'metal',
      vocalGender: 'f',
      styleWeight: 0.65,
      weirdnessConstraint: 0.3,
      audioWeight: 0.5,
    });
    const taskId = [...fake.tasks.keys()].at(-1)!;
    const polls = fake.requestsTo('/api/v1/generate/record-info');
    assert.ok(polls.length >= 4, `polled through every status (${polls.length})`);
    for (const poll of polls) {
      assert.equal(poll.method, 'GET');
      assert.deepEqual(poll.query, { taskId });
      assert.equal(poll.headers.authorization, 'Bearer suno-secret-key');
    }
    const downloads = fake.requests.filter((r) => r.path.startsWith('/files/'));
    assert.ok(downloads.every((r) => r.headers.authorization === undefined), 'no key is sent with file downloads');

    assert.deepEqual(draw.output_content.map((o: Json) => [o.type, o.role ?? null]), [['audio', null], ['audio', null], ['image', 'cover'], ['image', 'cover']]);
    for (const [i, seconds] of TRACK_SECONDS.entries()) {
      const file = await download(draw.output_content[i].url);
      assert.equal(file.contentType, 'audio/mpeg');
      const meta = await audioMetadata(file.data);
      assert.equal(meta.format.codec, 'MPEG 1 Layer 3');
      assert.ok(Math.abs(meta.format.duration! - seconds) < 0.2, `track ${i} lasts ${meta.format.duration} s`);
    }
    const cover = await download(draw.output_content[2].url);
    assert.equal(cover.contentType, 'image/png');
    assert.equal((await sharp(cover.data).metadata()).width, 16);

    const r = await user.record(draw.task_id);
    assert.equal(r.queue_status.status, 'success');
    assert.equal(r.queue_status.progress, 100);
    assert.equal(r.billings.length, 1);
    assert.deepEqual(r.billings[0].billing_model, { name: 'suno-v4.5', real_model: 'V4_5' });
    assert.equal(r.billings[0].platform.code, 'suno');
    assert.equal(r.billings[0].billing_type, 'audio');
  });

  it('description mode sends only what the upstream reads there', async () => {
    const { fake, user } = gateway;
    const res = await submit(user, { model: 'suno-v5', prompt: 'a calm piano piece for a rainy morning', tags: 'piano', negativeTags: '', makeInstrumental: true, vocalGender: 'm', title: 'Rain' });
    assert.equal(res.status, 200, await res.clone().text());
    assert.deepEqual(fake.requestsTo('/api/v1/generate')[0]!.json, {
      customMode: false,
      instrumental: true,
      model: 'V5',
      callBackUrl: PLACEHOLDER_CALLBACK_URL,
      prompt: 'a calm piano piece for a rainy morning',
    });
  });

  it('refuses what the upstream would refuse before sending anything', async () => {
    const { fake, user } = gateway;
    const cases: [Json, RegExp][] = [
      [{ ...CUSTOM_SONG, title: undefined }, /custom mode needs a non-empty title/],
      [{ ...CUSTOM_SONG, title: 'x'.repeat(101) }, /title is 101 characters; V4_5 takes at most 100/],
      [{ ...CUSTOM_SONG, customMode: false, prompt: 'y'.repeat(501) }, /at most 500/],
    ];
    for (const [body, message] of cases) await user.assertRejected(await submit(user, body), message);
    assert.equal(fake.requestsTo('/api/v1/generate').length, 0);
  });

  it('a failure status fails the task with the upstream message', async () => {
    const { fake, user } = gateway;
    fake.statuses = ['PENDING', 'SENSITIVE_WORD_ERROR'];
    const res = await submit(user, CUSTOM_SONG);
    const q = await user.failedStatus(res);
    assert.equal(q.message, 'suno refused the request for sensitive words');
    assert.equal(q.original_error_message, 'Song description contains artist name: Taylor Swift (errorCode 413)');
  });

  it('retries a 429 and a 503 on submit, then succeeds with one task', async () => {
    const { fake, user } = gateway;
    fake.generateErrors = [429, 503];
    const res = await submit(user, CUSTOM_SONG);
    assert.equal(res.status, 200, await res.clone().text());
    const submits = fake.requestsTo('/api/v1/generate');
    assert.equal(submits.length, 3);
    assert.deepEqual(submits[2]!.json, submits[0]!.json, 'the same body each time');
  });

  it('external API tasks cannot be cancelled', async () => {
    const { fake, user } = gateway;
    fake.holding = true;
    await assertNotCancellableWhileHeld(user, held(fake));
  });

  it('a wrong key: the upstream 401 fails the task with its text', async () => {
    const { fake } = gateway;
    await withGateway(gatewayEnv(fake, { api_key_env: WRONG_KEY_ENV }), 'composer', async (other) => {
      const res = await submit(other, CUSTOM_SONG);
      const err: Json = await res.json();
      assert.equal(res.status, 502);
      assert.match(err.error.message, /You do not have access permissions/);
    });
    assert.equal(fake.requestsTo('/api/v1/generate')[0]!.headers.authorization, 'Bearer not-the-key');
  });

  it('options.callback_url is sent as callBackUrl; a task running past max_wait_ms fails', async () => {
    const { fake } = gateway;
    fake.holding = true;
    await withGateway(gatewayEnv(fake, { max_wait_ms: 150, options: { callback_url: 'https://hooks.example.com/suno' } }), 'composer', async (other) => {
      const res = await submit(other, CUSTOM_SONG);
      const err: Json = await res.json();
      assert.equal(res.status, 502);
      assert.match(err.error.message, /did not finish within/);
    });
    assert.equal((fake.requestsTo('/api/v1/generate')[0]!.json as Json).callBackUrl, 'https://hooks.example.com/suno');
  });

  it('a task resumed after a restart polls the upstream task it submitted: one submit', async () => {
    const { fake } = gateway;
    fake.holding = true;
    const status = await assertResumedAfterRestart(gatewayEnv(fake), held(fake), () => fake.requestsTo('/api/v1/generate').length);
    assert.equal(status.output_content.filter((o: Json) => o.type === 'audio').length, 2);
  });
});
