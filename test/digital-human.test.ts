import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { blake3 } from 'hash-wasm';
import sharp from 'sharp';
import { startTestServer, type TestServer } from './support/server.ts';
import { eventually } from './support/wait.ts';
import { assertNear, audioStream, colourVideo, download, ffprobe, frameColours, near, upload, videoStream, wav, type Rgb } from './support/media.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const LITE = 'volc-digital-human-lite';
const BASIC = 'volc-digital-human-basic';
const RED: Rgb = [255, 0, 0];
const BLUE: Rgb = [0, 0, 255];

function post(srv: TestServer, token: string, path: string, body: Json, headers: Record<string, string> = {}): Promise<Response> {
  return srv.fetch(path, { method: 'POST', token, json: body, headers });
}

describe('digital humans on the local engine', () => {
  let srv: TestServer;
  let token: string;
  let otherToken: string;
  /** A 2 s template: red for the first second, blue for the second, with its own sound. */
  let templateUrl: string;
  let template: Buffer;
  /** 3 s of speech stand-in. */
  let audioUrl: string;
  let liteResource: string;

  async function create(model: string, videoId: string, extra: Json = {}): Promise<{ status: number; body: Json }> {
    const res = await post(srv, token, '/v1/digital-human/create', { model, video_id: videoId, ...extra });
    return { status: res.status, body: await res.json() };
  }

  async function lipSync(body: Json, as = token): Promise<{ status: number; body: Json }> {
    const res = await post(srv, as, '/v1/digital-human/generations', body);
    return { status: res.status, body: await res.json() };
  }

  before(async () => {
    srv = await startTestServer();
    token = await srv.tokenFor('presenter');
    otherToken = await srv.tokenFor('stranger');
    template = await colourVideo(['red', 'blue'], { secondsEach: 1, width: 320, height: 240, fps: 25, audio: true });
    templateUrl = await upload(srv, token, template, 'template.mp4', 'video/mp4');
    audioUrl = await upload(srv, token, wav(3), 'speech.wav', 'audio/wav');
    const { status, body } = await create(LITE, templateUrl);
    assert.equal(status, 200, JSON.stringify(body));
    liteResource = body.resource_id;
  });
  after(() => srv.close());

  it('create answers a resource id and keeps the source video as the owner\'s asset', async () => {
    const { status, body } = await create(LITE, templateUrl);
    assert.equal(status, 200, JSON.stringify(body));
    assert.equal(body.status, 'success');
    assert.match(body.resource_id, /^dh_\w+$/);
    assert.notEqual(body.resource_id, liteResource, 'each create makes a new resource');
    const text = body.output_content.find((o: Json) => o.type === 'text');
    assert.deepEqual(text, { type: 'text', content: body.resource_id, role: 'resource_id' });
    const source = body.output_content.find((o: Json) => o.role === 'source');
    assert.equal(source.type, 'video');
    assert.deepEqual(source.mediaSize, { type: 'video', width: 320, height: 240, status: 1 });
    assert.equal(source.has_audio, true);

    const hash = `blake3:${await blake3(template)}`;
    const kept = await srv.fetch(`/api/assets/hash/${hash}`, { method: 'HEAD', token });
    assert.equal(kept.status, 200, 'the source video is an asset of the owner');

    const stored: Json = await (await srv.fetch(`/v1/ai/result/${body.task_id}`, { token })).json();
    assert.equal(stored.generate_info.input.interaction_optimise, 1, 'interaction_optimise defaults to on');
  });

  it('lip-syncs to the audio: the template loops to the audio length, with the audio as AAC', async () => {
    const { status, body } = await lipSync({ model: LITE, resource_id: liteResource, audio_url: audioUrl });
    assert.equal(status, 200, JSON.stringify(body));
    assert.equal(body.type, 'video');
    assert.equal(body.output_content[0].has_audio, true);
    assert.deepEqual(body.output_content[0].mediaSize, { type: 'video', width: 320, height: 240, status: 1 });
    const mp4 = await download(body.output[0]);
    const probed = await ffprobe(mp4);
    assert.equal(videoStream(probed)!.codec_name, 'h264');
    assert.equal(videoStream(probed)!.r_frame_rate, '25/1');
    assert.equal(audioStream(probed)!.codec_name, 'aac');
    assertNear(Number(probed.format.duration), 3, 0.1, 'video length is the audio length');
    const colours = await frameColours(mp4);
    assert.ok(near(colours[0]!, RED), `starts on the template's first second (${colours[0]})`);
    assert.ok(near(colours[37]!, BLUE), `then its second second (${colours[37]})`);
    assert.ok(near(colours[62]!, RED), `then loops forwards to the start again (${colours[62]})`);
  });

  it('ping-pongs with align_audio_reverse, and starts at templ_start_seconds', async () => {
    const reverse = await lipSync({ model: LITE, resource_id: liteResource, audio_url: audioUrl, align_audio_reverse: true });
    assert.equal(reverse.status, 200, JSON.stringify(reverse.body));
    const back = await download(reverse.body.output[0]);
    assertNear(Number((await ffprobe(back)).format.duration), 3, 0.1, 'duration');
    const colours = await frameColours(back);
    // At 2.5 s a forward loop is back in the red first second; ping-pong is on its way back through the blue one.
    assert.ok(near(colours[62]!, BLUE), `plays backwards after the end (${colours[62]})`);

    const late = await lipSync({ model: LITE, resource_id: liteResource, audio_url: audioUrl, templ_start_seconds: 1, align_audio: false });
    assert.equal(late.status, 200, JSON.stringify(late.body));
    const cut = await download(late.body.output[0]);
    assertNear(Number((await ffprobe(cut)).format.duration), 1, 0.1, 'without align_audio the shorter of template rest (1 s) and audio (3 s)');
    assert.ok(near((await frameColours(cut))[0]!, BLUE), 'starts one second into the template');
  });

  it('plays a given picture or video instead of the resource video', async () => {
    const picture = await sharp({ create: { width: 200, height: 150, channels: 3, background: { r: 0, g: 200, b: 0 } } }).png().toBuffer();
    const still = await lipSync({ model: LITE, resource_id: liteResource, audio_url: audioUrl, image_url: `data:image/png;base64,${picture.toString('base64')}` });
    assert.equal(still.status, 200, JSON.stringify(still.body));
    const stillMp4 = await download(still.body.output[0]);
    const probed = await ffprobe(stillMp4);
    assert.deepEqual([videoStream(probed)!.width, videoStream(probed)!.height], [200, 150]);
    assertNear(Number(probed.format.duration), 3, 0.1, 'duration');
    assert.ok(near((await frameColours(stillMp4))[10]!, [0, 200, 0]));

    const other = await colourVideo(['yellow'], { secondsEach: 1, width: 160, height: 120, fps: 20 });
    const moving = await lipSync({ model: LITE, resource_id: liteResource, audio_url: audioUrl, video_url: `data:video/mp4;base64,${other.toString('base64')}` });
    assert.equal(moving.status, 200, JSON.stringify(moving.body));
    const movingProbe = await ffprobe(await download(moving.body.output[0]));
    assert.deepEqual([videoStream(movingProbe)!.width, videoStream(movingProbe)!.height, videoStream(movingProbe)!.r_frame_rate], [160, 120, '20/1']);
    assertNear(Number(movingProbe.format.duration), 3, 0.1, 'duration');
  });

  it('Basic mode cuts to the shorter of video and audio and takes open_scenedet', async () => {
    const made = await create(BASIC, templateUrl, { interaction_optimise: 0 });
    assert.equal(made.status, 200, JSON.stringify(made.body));
    const { status, body } = await lipSync({ model: BASIC, resource_id: made.body.resource_id, audio_url: audioUrl, open_scenedet: true, separate_vocal: true });
    assert.equal(status, 200, JSON.stringify(body));
    const probed = await ffprobe(await download(body.output[0]));
    assertNear(Number(probed.format.duration), 2, 0.1, 'the 2 s template is shorter than the 3 s audio');
    assert.equal(audioStream(probed)!.codec_name, 'aac');
  });

  it('refuses options of the other mode, and align_audio_reverse without align_audio', async () => {
    const cases: [string, Json, string, string][] = [
      [BASIC, { templ_start_seconds: 1 }, 'unsupported_parameter', 'templ_start_seconds'],
      [BASIC, { align_audio: true }, 'unsupported_parameter', 'align_audio'],
      [BASIC, { align_audio_reverse: false }, 'unsupported_parameter', 'align_audio_reverse'],
      [LITE, { open_scenedet: true }, 'unsupported_parameter', 'open_scenedet'],
      [LITE, { align_audio: false, align_audio_reverse: true }, 'invalid_parameter', 'align_audio_reverse'],
      [LITE, { templ_start_seconds: -1 }, 'invalid_parameter', 'templ_start_seconds'],
      [LITE, { templ_start_strategy: 'start_from_end' }, 'invalid_parameter', 'templ_start_strategy'],
      [LITE, { separate_vocal: 'yes' }, 'invalid_parameter', 'separate_vocal'],
      [LITE, { audio_url: undefined }, 'missing_parameter', 'audio_url'],
      [LITE, { audio_url: 'speech.wav' }, 'invalid_parameter', 'audio_url'],
      [LITE, { resource_id: undefined }, 'missing_parameter', 'resource_id'],
      [LITE, { voice: 'x' }, 'unsupported_parameter', 'voice'],
      ['seedance-1.0-pro', {}, 'model_capability_mismatch', 'model'],
    ];
    for (const [model, change, code, param] of cases) {
      const { status, body } = await lipSync({ model, resource_id: liteResource, audio_url: audioUrl, ...change });
      assert.equal(status, 400, `${model} ${JSON.stringify(change)}: ${JSON.stringify(body)}`);
      assert.equal(body.error.code, code, body.error.message);
      assert.equal(body.error.param, param, body.error.message);
    }
    const accepted = await lipSync({ model: LITE, resource_id: liteResource, audio_url: audioUrl, templ_start_strategy: 'start_from_given_seconds', templ_start_seconds: 0.5, align_audio: true, align_audio_reverse: false, separate_vocal: false }, token);
    assert.equal(accepted.status, 200, JSON.stringify(accepted.body));
    const stored: Json = await (await srv.fetch(`/v1/ai/result/${accepted.body.task_id}`, { token })).json();
    assert.equal(stored.generate_info.input.templ_start_seconds, 0.5);
  });

  it('another user\'s resource, or an unknown one, is not found', async () => {
    for (const [as, id] of [[otherToken, liteResource], [token, 'dh_nothing']] as const) {
      const { status, body } = await lipSync({ model: LITE, resource_id: id, audio_url: audioUrl }, as);
      assert.equal(status, 404, JSON.stringify(body));
      assert.equal(body.error.type, 'not_found_error');
      assert.equal(body.error.code, 'resource_not_found');
      assert.equal(body.error.param, 'resource_id');
    }
  });

  it('create fails the task for a file that is not a video; validates its fields', async () => {
    const notVideo = await create(LITE, audioUrl);
    assert.equal(notVideo.status, 502, JSON.stringify(notVideo.body));
    assert.equal(notVideo.body.error.code, 'task_failed');
    assert.match(notVideo.body.error.message, /video_id is not a video/);

    const cases: [Json, string, string][] = [
      [{ interaction_optimise: 2 }, 'invalid_parameter', 'interaction_optimise'],
      [{ interaction_optimise: true }, 'invalid_parameter', 'interaction_optimise'],
      [{ video_id: undefined }, 'missing_parameter', 'video_id'],
      [{ video_id: 'my-video' }, 'invalid_parameter', 'video_id'],
      [{ model: 'kling-o1' }, 'model_capability_mismatch', 'model'],
    ];
    for (const [change, code, param] of cases) {
      const res = await post(srv, token, '/v1/digital-human/create', { model: LITE, video_id: templateUrl, ...change });
      const body: Json = await res.json();
      assert.equal(res.status, 400, `${JSON.stringify(change)}: ${JSON.stringify(body)}`);
      assert.equal(body.error.code, code);
      assert.equal(body.error.param, param);
    }
  });

  it('works asynchronously: create, then generation, read through /v1/ai/result', async () => {
    const result = async (taskId: string) =>
      eventually(`task ${taskId} to succeed`, async () => {
        const record: Json = await (await srv.fetch(`/v1/ai/result/${taskId}`, { token })).json();
        assert.notEqual(record.queue_status.status, 'failed', JSON.stringify(record));
        return record.queue_status.status === 'success' ? record : undefined;
      });
    const hash = `blake3:${await blake3(template)}`;
    const submitted: Json = await (await post(srv, token, '/v1/digital-human/create', { model: LITE, video_id: hash }, { 'x-async': '1' })).json();
    assert.equal(submitted.status, 'submitted');
    const created = await result(submitted.task_id);
    const resourceId = created.queue_status.output_content.find((o: Json) => o.role === 'resource_id').content;
    assert.match(resourceId, /^dh_/);

    const generation: Json = await (await post(srv, token, '/v1/digital-human/generations', { model: LITE, resource_id: resourceId, audio_url: audioUrl }, { 'x-async': 'true' })).json();
    assert.equal(generation.status, 'submitted');
    const done = await result(generation.task_id);
    assert.equal(done.queue_status.data.type, 'video');
    const probed = await ffprobe(await download(done.queue_status.output_content[0].url));
    assertNear(Number(probed.format.duration), 3, 0.1, 'duration');
    assert.ok(audioStream(probed));
  });
});
