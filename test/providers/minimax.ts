import { beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ASYNC_SECONDS, MinimaxUpstream, SYNC_SECONDS } from '../fakes/minimax-upstream.ts';
import { audioMetadata, download } from '../support/audio.ts';
import {
  assertNotCancellableWhileHeld, assertResumedAfterRestart, providerEnv, useProviderGateway, withGateway, type GatewayUser, type HeldTask, type Json,
} from '../support/provider-harness.ts';

const KEY_ENV = 'GENGATE_TEST_MINIMAX_KEY';
const WRONG_KEY_ENV = 'GENGATE_TEST_MINIMAX_WRONG_KEY';
process.env[KEY_ENV] = 'minimax-secret-key';
process.env[WRONG_KEY_ENV] = 'expired-key';

const SPEECH = { model: 'minimax-speech-02-hd', text: 'The harbour lights came on one by one.', voice_id: 'English_Graceful_Lady' };
const STORY = Array(40).fill('Once more the tide rose over the old stones of the pier.').join('\n');

const gatewayEnv = (fake: MinimaxUpstream, settings: Record<string, unknown> = {}) => providerEnv('minimax', fake.url, { api_key_env: KEY_ENV, ...settings });

const submit = (user: GatewayUser, body: Json, headers: Record<string, string> = {}) => user.post('/v1/speech/generations', body, headers);

/** The story uploaded as a text file, for the long-text API. */
const storyFile = (user: GatewayUser) => user.upload(Buffer.from(STORY), 'story.txt', 'text/plain');

/** A long-text task MiniMax keeps Processing while the fake is holding. */
const held = (fake: MinimaxUpstream): HeldTask => ({
  path: '/v1/speech/generations',
  body: async (user) => ({ ...SPEECH, text_file_id: await storyFile(user) }),
  polled: () => fake.requestsTo('/v1/query/t2a_async_query_v2').length > 0 && String([...fake.tasks.keys()].at(-1)),
  finish: () => void (fake.holding = false),
});

describe('minimax adapter', () => {
  const gateway = useProviderGateway({ startFake: () => MinimaxUpstream.start(process.env[KEY_ENV]!), env: (fake) => gatewayEnv(fake, { options: { group_id: '1840000000000000001' } }), userId: 'narrator' });
  beforeEach(() => {
    const { fake } = gateway;
    fake.requests.length = 0;
    fake.statuses = ['Processing', 'Processing', 'Success'];
    fake.holding = false;
    fake.syncError = undefined;
    fake.httpErrors = [];
  });

  it('sync: voice_setting and audio_setting as T2A v2 wants them, hex audio decoded, characters billed', async () => {
    const { fake, user } = gateway;
    const res = await submit(user, { ...SPEECH, speed: 1.2, vol: 2, pitch: -1, emotion: 'happy' });
    const draw: Json = await res.json();
    assert.equal(res.status, 200, JSON.stringify(draw));
    assert.equal(draw.status, 'success');

    const [call, ...more] = fake.requestsTo('/v1/t2a_v2');
    assert.equal(more.length, 0);
    assert.equal(call!.method, 'POST');
    assert.equal(call!.headers.authorization, 'Bearer minimax-secret-key');
    assert.deepEqual(call!.query, { GroupId: '1840000000000000001' });
    assert.deepEqual(call!.json, {
      model: 'speech-02-hd',
      text: SPEECH.text,
      stream: false,
      voice_setting: { voice_id: 'English_Graceful_Lady', speed: 1.2, vol: 2, pitch: -1, emotion: 'happy' },
      audio_setting: { sample_rate: 32000, bitrate: 128000, format: 'mp3', channel: 1 },
    });

    assert.equal(draw.output_content.length, 1);
    assert.equal(draw.output_content[0].type, 'audio');
    assert.equal(draw.output_content[0].filename, 'speech.mp3');
    const file = await download(draw.output[0]);
    assert.equal(file.contentType, 'audio/mpeg');
    const meta = await audioMetadata(file.data);
    assert.equal(meta.format.codec, 'MPEG 1 Layer 3');
    assert.ok(Math.abs(meta.format.duration! - SYNC_SECONDS) < 0.15, `lasts ${meta.format.duration} s`);

    const r = await user.record(draw.task_id);
    const characters = [...SPEECH.text].length;
    assert.deepEqual(r.usage, { input_tokens: characters, output_tokens: 0, total_tokens: characters });
    assert.equal(r.billings[0].result.token, characters);
    assert.deepEqual(r.billings[0].billing_model, { name: 'minimax-speech-02-hd', real_model: 'speech-02-hd' });
  });

  it('sends only the voice fields given and the requested format', async () => {
    const { fake, user } = gateway;
    const res = await submit(user, { ...SPEECH, format: 'flac' });
    assert.equal(res.status, 200);
    const body = fake.requestsTo('/v1/t2a_v2')[0]!.json as Json;
    assert.deepEqual(body.voice_setting, { voice_id: 'English_Graceful_Lady' });
    assert.equal(body.audio_setting.format, 'flac');
  });

  it('a non-zero base_resp fails the task with status_msg', async () => {
    const { fake, user } = gateway;
    fake.syncError = { status_code: 1026, status_msg: 'input new_sensitive' };
    const q = await user.failedStatus(await submit(user, SPEECH));
    assert.equal(q.message, 'minimax refused the speech request (status_code 1026)');
    assert.equal(q.original_error_message, 'input new_sensitive');
  });

  it('retries a 503 and a 429, then succeeds', async () => {
    const { fake, user } = gateway;
    fake.httpErrors = [503, 429];
    const res = await submit(user, SPEECH);
    assert.equal(res.status, 200, await res.clone().text());
    assert.equal(fake.requestsTo('/v1/t2a_v2').length, 3);
  });

  it('a text file: uploaded for the long-text API, polled, the MP3 taken out of the result archive', async () => {
    const { fake, user } = gateway;
    const url = await storyFile(user);
    const res = await submit(user, { ...SPEECH, text: 'ignored', text_file_id: url, speed: 0.9 });
    const draw: Json = await res.json();
    assert.equal(res.status, 200, JSON.stringify(draw));
    assert.equal(fake.requestsTo('/v1/t2a_v2').length, 0, 'no sync call');

    const [upload] = fake.requestsTo('/v1/files/upload');
    assert.equal(upload!.headers.authorization, 'Bearer minimax-secret-key');
    assert.match(String(upload!.headers['content-type']), /^multipart\/form-data; boundary=/);
    assert.deepEqual(upload!.query, { GroupId: '1840000000000000001' });
    const [fileId, uploaded] = [...fake.uploads].at(-1)!;
    assert.deepEqual(uploaded, { purpose: 't2a_async_input', fileName: 'story.txt', text: STORY });

    const [submitted] = fake.requestsTo('/v1/t2a_async_v2');
    assert.deepEqual(submitted!.json, {
      model: 'speech-02-hd',
      text_file_id: fileId,
      voice_setting: { voice_id: 'English_Graceful_Lady', speed: 0.9 },
      audio_setting: { audio_sample_rate: 32000, bitrate: 128000, format: 'mp3', channel: 1 },
    });
    const task = [...fake.tasks.values()].at(-1)!;
    const queries = fake.requestsTo('/v1/query/t2a_async_query_v2');
    assert.equal(queries.length, 3);
    for (const q of queries) assert.deepEqual(q.query, { GroupId: '1840000000000000001', task_id: String(task.taskId) });
    assert.deepEqual(fake.requestsTo('/v1/files/retrieve_content').map((r) => r.query), [{ GroupId: '1840000000000000001', file_id: String(task.fileId) }]);

    const meta = await audioMetadata((await download(draw.output[0])).data);
    assert.ok(Math.abs(meta.format.duration! - ASYNC_SECONDS) < 0.15, `the archive's MP3 (${meta.format.duration} s)`);
    const r = await user.record(draw.task_id);
    assert.equal(r.usage.total_tokens, [...STORY].length);
  });

  it('a long-text task that fails upstream fails the task; a file that is not text never leaves', async () => {
    const { fake, user } = gateway;
    fake.statuses = ['Processing', 'Failed'];
    const q = await user.failedStatus(await submit(user, { ...SPEECH, text_file_id: await storyFile(user) }));
    assert.equal(q.message, 'minimax speech task failed');
    assert.equal(q.original_error_message, 'task status Failed');

    fake.requests.length = 0;
    const png = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
    const notText = await user.failedStatus(await submit(user, { ...SPEECH, text_file_id: png }));
    assert.equal(notText.message, 'text_file_id is not a UTF-8 text file');
    assert.equal(fake.requests.length, 0);
  });

  it('external API tasks cannot be cancelled', async () => {
    const { fake, user } = gateway;
    fake.holding = true;
    await assertNotCancellableWhileHeld(user, held(fake));
  });

  it('options.sync_text_limit sends longer text to the long-text API as text', async () => {
    const { fake } = gateway;
    await withGateway(gatewayEnv(fake, { options: { sync_text_limit: 20 } }), 'narrator', async (other) => {
      const res = await submit(other, SPEECH);
      assert.equal(res.status, 200, await res.clone().text());
    });
    const [submitted] = fake.requestsTo('/v1/t2a_async_v2');
    assert.equal((submitted!.json as Json).text, SPEECH.text);
    assert.deepEqual(submitted!.query, {}, 'no GroupId without options.group_id');
    assert.equal(fake.requestsTo('/v1/files/upload').length, 0);
  });

  it('a wrong key: the 1004 answer fails the task with its message', async () => {
    const { fake } = gateway;
    const q = await withGateway(gatewayEnv(fake, { api_key_env: WRONG_KEY_ENV }), 'narrator', async (other) => other.failedStatus(await submit(other, SPEECH)));
    assert.equal(fake.requestsTo('/v1/t2a_v2')[0]!.headers.authorization, 'Bearer expired-key');
    assert.equal(q.message, 'minimax refused the speech request (status_code 1004)');
    assert.match(q.original_error_message, /login fail/);
  });

  it('a hung sync call fails after timeout_ms; a long-text task past max_wait_ms fails', async () => {
    const { fake } = gateway;
    fake.hangSync = true;
    try {
      await withGateway(gatewayEnv(fake, { timeout_ms: 300, max_wait_ms: 150 }), 'narrator', async (other) => {
        const hung = await other.failedStatus(await submit(other, SPEECH));
        assert.equal(hung.message, 'minimax timed out after 300 ms');
        assert.equal(fake.requestsTo('/v1/t2a_v2').length, 1, 'a POST that may have been acted on is not sent again');

        fake.holding = true;
        const slow = await other.failedStatus(await submit(other, { ...SPEECH, text_file_id: await storyFile(other) }));
        assert.match(slow.message, /the upstream task did not finish within/);
      });
    } finally {
      fake.hangSync = false;
    }
  });

  it('a long-text task resumed after a restart polls the task it submitted: one upload, one submit', async () => {
    const { fake } = gateway;
    fake.holding = true;
    await assertResumedAfterRestart(gatewayEnv(fake), held(fake), () => fake.requestsTo('/v1/t2a_async_v2').length);
    assert.equal(fake.requestsTo('/v1/files/upload').length, 1, 'uploaded once');
  });
});
