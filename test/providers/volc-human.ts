import { before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { RESULT_SIZE, VERSION, VolcHumanUpstream } from '../fakes/volc-human-upstream.ts';
import { sampleMp3, sampleMp4 } from '../fakes/upstream-media.ts';
import type { RecordedRequest } from '../fakes/recording-upstream.ts';
import { download } from '../support/audio.ts';
import { audioStream, ffprobe, videoStream } from '../support/media.ts';
import {
  assertNotCancellableWhileHeld, providerEnv, useProviderGateway, withGateway, withRestartingGateway, type GatewayUser, type HeldTask, type Json,
} from '../support/provider-harness.ts';
import { eventually } from '../support/wait.ts';

const ACCESS_KEY_ID = 'AKLTZmFrZS1hY2Nlc3Mta2V5';
const SECRET = 'TmpBd01qWXpNVFUxTnpVeE5EZzRZVGs0TURJeE5qRTJPV1Uz';
const PAIR_ENV = 'GENGATE_TEST_VOLC_AKSK';
const WRONG_PAIR_ENV = 'GENGATE_TEST_VOLC_WRONG_AKSK';
const ID_ENV = 'GENGATE_TEST_VOLC_AK';
const SECRET_ENV = 'GENGATE_TEST_VOLC_SK';
process.env[PAIR_ENV] = `${ACCESS_KEY_ID}:${SECRET}`;
process.env[WRONG_PAIR_ENV] = `${ACCESS_KEY_ID}:not-the-secret`;
process.env[ID_ENV] = ACCESS_KEY_ID;
process.env[SECRET_ENV] = SECRET;

const gatewayEnv = (fake: VolcHumanUpstream, settings: Record<string, unknown> = {}) => providerEnv('volc-human', fake.url, { api_key_env: PAIR_ENV, ...settings });

/** A presenter video with its sound, as digital humans are trained on. */
const presenterVideo = () => sampleMp4({ width: 160, height: 90, seconds: 2, audio: true });

/** The signed headers every call must carry, checked field by field. */
function assertSigned(call: RecordedRequest, action: string): void {
  assert.equal(call.method, 'POST');
  assert.equal(call.path, '/');
  assert.deepEqual(call.query, { Action: action, Version: VERSION });
  assert.match(String(call.headers['x-date']), /^\d{8}T\d{6}Z$/);
  assert.equal(call.headers['x-content-sha256'], createHash('sha256').update(call.body).digest('hex'));
  assert.match(String(call.headers['content-type']), /^application\/json/);
  const day = String(call.headers['x-date']).slice(0, 8);
  assert.match(String(call.headers.authorization), new RegExp(`^HMAC-SHA256 Credential=${ACCESS_KEY_ID}/${day}/cn-north-1/cv/request, SignedHeaders=content-type;host;x-content-sha256;x-date, Signature=[0-9a-f]{64}$`));
}

const create = (user: GatewayUser, body: Json) => user.post('/v1/digital-human/create', body);
const generate = (user: GatewayUser, body: Json, headers: Record<string, string> = {}) => user.post('/v1/digital-human/generations', body, headers);

describe('volcengine digital-human adapter', () => {
  const gateway = useProviderGateway({ startFake: () => VolcHumanUpstream.start(ACCESS_KEY_ID, SECRET), env: (fake) => gatewayEnv(fake), userId: 'presenter' });
  let sourceUrl: string;
  let audio: string;
  let resourceId: string;
  /** The resource_id the fake upstream gave the trained avatar. */
  let trainedAvatar: string;

  before(async () => {
    sourceUrl = await gateway.user.upload(await presenterVideo(), 'presenter.mp4', 'video/mp4');
    audio = `data:audio/mpeg;base64,${(await sampleMp3(1.5)).toString('base64')}`;
  });
  beforeEach(() => {
    const { fake } = gateway;
    fake.requests.length = 0;
    fake.refused.length = 0;
    fake.statuses = ['in_queue', 'generating', 'done'];
    fake.holding = false;
    fake.failure = undefined;
    fake.submitErrors = [];
  });

  it('create trains a clone avatar on the source video; the resource keeps its upstream id', async () => {
    const { fake, user } = gateway;
    const res = await create(user, { model: 'volc-digital-human-lite', video_id: sourceUrl, interaction_optimise: 0 });
    const draw: Json = await res.json();
    assert.equal(res.status, 200, JSON.stringify(draw));
    assert.equal(fake.refused.length, 0, 'every signature holds');

    const [submit, ...more] = fake.calls('CVSubmitTask');
    assert.equal(more.length, 0);
    assertSigned(submit!, 'CVSubmitTask');
    assert.deepEqual(submit!.json, { req_key: 'realman_avatar_training_task', video_url: sourceUrl, interaction_optimise: 0 });
    const task = [...fake.tasks.values()].at(-1)!;
    const queries = fake.calls('CVGetResult');
    assert.equal(queries.length, 3);
    for (const q of queries) {
      assertSigned(q, 'CVGetResult');
      assert.deepEqual(q.json, { req_key: 'realman_avatar_training_task', task_id: task.taskId });
    }

    resourceId = draw.resource_id;
    assert.match(resourceId, /^dh/);
    assert.deepEqual(draw.output_content.find((o: Json) => o.role === 'resource_id'), { type: 'text', content: resourceId, role: 'resource_id' });
    const source = draw.output_content.find((o: Json) => o.role === 'source');
    assert.deepEqual(source.mediaSize, { type: 'video', width: 160, height: 90, status: 1 });
    trainedAvatar = `avatar-${task.taskId.slice(0, 8)}`;
  });

  it('a generation without video_url has the trained avatar speak the audio', async () => {
    const { fake, user } = gateway;
    const res = await generate(user, { model: 'volc-digital-human-lite', resource_id: resourceId, audio_url: audio, templ_start_strategy: 'start_from_given_seconds', templ_start_seconds: 1.5 });
    const draw: Json = await res.json();
    assert.equal(res.status, 200, JSON.stringify(draw));
    const [submit] = fake.calls('CVSubmitTask');
    assertSigned(submit!, 'CVSubmitTask');
    const body = submit!.json as Json;
    assert.deepEqual(body, {
      req_key: 'realman_avatar_creation_task',
      resource_id: trainedAvatar,
      audio_url: body.audio_url,
      templ_start_strategy: 'start_from_given_seconds',
      templ_start_seconds: 1.5,
    });
    assert.match(body.audio_url, new RegExp(`^${user.srv.url}/files/`), 'the data URI is published as a gateway file');
    assert.ok((await download(body.audio_url)).data.equals(await sampleMp3(1.5)));

    const item = draw.output_content[0];
    assert.equal(item.type, 'video');
    assert.deepEqual(item.mediaSize, { type: 'video', ...RESULT_SIZE, status: 1 });
    assert.equal(item.has_audio, true);
    const probed = await ffprobe((await download(item.url)).data);
    assert.equal(videoStream(probed)!.codec_name, 'h264');
    assert.ok(audioStream(probed));
  });

  it('a video_url is lip-synced with the model mode\'s task and options', async () => {
    const { fake, user } = gateway;
    const lite = await generate(user, { model: 'volc-digital-human-lite', resource_id: resourceId, audio_url: audio, video_url: sourceUrl, align_audio_reverse: true, templ_start_seconds: 2 });
    assert.equal(lite.status, 200, await lite.clone().text());
    const liteBody = fake.calls('CVSubmitTask')[0]!.json as Json;
    assert.deepEqual(liteBody, {
      req_key: 'realman_change_lips',
      url: sourceUrl,
      pure_audio_url: liteBody.pure_audio_url,
      separate_vocal: false,
      align_audio: true,
      align_audio_reverse: true,
      templ_start_seconds: 2,
    });

    const basic = await generate(user, { model: 'volc-digital-human-basic', resource_id: resourceId, audio_url: audio, video_url: sourceUrl, separate_vocal: true, open_scenedet: true });
    assert.equal(basic.status, 200, await basic.clone().text());
    const basicBody = fake.calls('CVSubmitTask')[1]!.json as Json;
    assert.deepEqual(basicBody, { req_key: 'realman_change_lips_basic_chimera', url: sourceUrl, pure_audio_url: basicBody.pure_audio_url, separate_vocal: true, open_scenedet: true });
    assert.deepEqual(fake.calls('CVGetResult').map((q) => (q.json as Json).req_key), [...Array(3).fill('realman_change_lips'), ...Array(3).fill('realman_change_lips_basic_chimera')]);
  });

  it('a finished task whose resp_data carries an error code fails with its message', async () => {
    const { fake, user } = gateway;
    fake.failure = { code: 50511, msg: 'Post Img Risk Not Pass' };
    const res = await generate(user, { model: 'volc-digital-human-lite', resource_id: resourceId, audio_url: audio });
    const q = await user.failedStatus(res);
    assert.equal(q.message, 'the volcengine task failed (code 50511)');
    assert.equal(q.original_error_message, 'Post Img Risk Not Pass');
  });

  it('retries a QPS refusal (HTTP 429, code 50429) on submit', async () => {
    const { fake, user } = gateway;
    fake.submitErrors = [429];
    const res = await generate(user, { model: 'volc-digital-human-lite', resource_id: resourceId, audio_url: audio });
    assert.equal(res.status, 200, await res.clone().text());
    assert.equal(fake.calls('CVSubmitTask').length, 2);
    assert.equal(fake.tasks.size > 0, true);
  });

  it('a wrong secret: the upstream refuses the signature and the task fails with its text', async () => {
    const { fake } = gateway;
    const tasksBefore = fake.tasks.size;
    await withGateway(gatewayEnv(fake, { api_key_env: WRONG_PAIR_ENV }), 'presenter', async (other) => {
      const res = await create(other, { model: 'volc-digital-human-lite', video_id: await other.upload(await presenterVideo(), 'presenter.mp4', 'video/mp4') });
      const err: Json = await res.json();
      assert.equal(res.status, 502, JSON.stringify(err));
      assert.match(err.error.message, /SignatureDoesNotMatch/);
    });
    assert.deepEqual(fake.refused.map((r) => r.code), ['SignatureDoesNotMatch']);
    assert.equal(fake.tasks.size, tasksBefore, 'nothing was submitted');
  });

  it('external API tasks cannot be cancelled; a task past max_wait_ms fails', async () => {
    const { fake, user } = gateway;
    fake.holding = true;
    const speaking: HeldTask = {
      path: '/v1/digital-human/generations',
      body: () => ({ model: 'volc-digital-human-lite', resource_id: resourceId, audio_url: audio }),
      polled: () => fake.calls('CVGetResult').length > 0 && [...fake.tasks.keys()].at(-1),
      finish: () => void (fake.holding = false),
    };
    await assertNotCancellableWhileHeld(user, speaking);

    fake.holding = true;
    await withGateway(gatewayEnv(fake, { max_wait_ms: 150 }), 'presenter', async (other) => {
      const slow = await create(other, { model: 'volc-digital-human-lite', video_id: await other.upload(await presenterVideo(), 'presenter.mp4', 'video/mp4') });
      const err: Json = await slow.json();
      assert.equal(slow.status, 502);
      assert.match(err.error.message, /the upstream task did not finish within/);
    });
  });

  it('a resource made by the local engine is lip-synced from its source video; a resumed task submits once', async () => {
    const { fake } = gateway;
    // Credentials from two variables this time.
    const withUpstream = gatewayEnv(fake, { api_key_env: undefined, options: { access_key_id_env: ID_ENV, secret_access_key_env: SECRET_ENV } });
    await withRestartingGateway({}, 'presenter', async (restarting) => {
      const source = await presenterVideo();
      const made = await create(restarting.user, { model: 'volc-digital-human-basic', video_id: await restarting.user.upload(source, 'presenter.mp4', 'video/mp4') });
      const { resource_id: resourceId } = (await made.json()) as Json;
      assert.equal(made.status, 200);
      assert.equal(fake.requests.length, 0, 'the local engine made this one');

      fake.holding = true;
      const user = await restarting.restart({ env: withUpstream });
      const res = await generate(user, { model: 'volc-digital-human-basic', resource_id: resourceId, audio_url: `data:audio/mpeg;base64,${(await sampleMp3(1.5)).toString('base64')}` }, { 'x-async': '1' });
      const { task_id: taskId } = (await res.json()) as Json;
      await eventually('the task polled', () => fake.calls('CVGetResult').length > 0);
      const body = fake.calls('CVSubmitTask')[0]!.json as Json;
      assert.equal(body.req_key, 'realman_change_lips_basic_chimera');
      assert.ok((await download(body.url)).data.equals(source), 'the resource source video is handed over');

      const resumed = await restarting.restart({ meanwhile: () => void (fake.holding = false) });
      const status = await resumed.settledStatus(taskId);
      assert.equal(status.status, 'success', JSON.stringify(status));
      assert.equal(fake.calls('CVSubmitTask').length, 1, 'submitted once');
      assert.equal(fake.refused.length, 0);
    });
  });
});
