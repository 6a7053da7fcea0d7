import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import sharp from 'sharp';
import type { GenerationEngine } from '../src/providers/spec.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { eventually } from './support/wait.ts';
import { assertNear, audioStream, colourVideo, download, ffprobe, frameColours, near, upload, videoStream, wav } from './support/media.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const TEXT = { type: 'text', text: 'a paper boat drifting on a pond' };

function solidPng(width: number, height: number, rgb: [number, number, number]): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: { r: rgb[0], g: rgb[1], b: rgb[2] } } }).png().toBuffer();
}

function dataUri(png: Buffer): string {
  return `data:image/png;base64,${png.toString('base64')}`;
}

function generate(srv: TestServer, token: string, body: Json, headers: Record<string, string> = {}): Promise<Response> {
  return srv.fetch('/v1/video/generations', { method: 'POST', token, json: body, headers });
}

async function record(srv: TestServer, token: string, taskId: string): Promise<Json> {
  return (await srv.fetch(`/v1/ai/result/${taskId}`, { token })).json();
}

describe('video generation on the local engine', () => {
  let srv: TestServer;
  let token: string;
  before(async () => {
    srv = await startTestServer();
    token = await srv.tokenFor('director');
  });
  after(() => srv.close());

  it('text to video: an H.264 MP4 of the asked size, frame rate and length, index first, no audio unless asked', async () => {
    const res = await generate(srv, token, { model: 'seedance-1.0-pro', content: [TEXT], resolution: '480p', aspect_ratio: '16:9', duration: 2, framespersecond: 24 });
    const body: Json = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.equal(body.status, 'success');
    assert.equal(body.type, 'video');
    assert.equal(body.output.length, 1);
    const [item] = body.output_content;
    assert.equal(item.type, 'video');
    assert.equal(item.has_audio, false);
    assert.deepEqual(item.mediaSize, { type: 'video', width: 854, height: 480, status: 1 });
    assert.deepEqual(body.mediaSize, item.mediaSize);

    const mp4 = await download(body.output[0]);
    const probed = await ffprobe(mp4);
    const video = videoStream(probed)!;
    assert.equal(video.codec_name, 'h264');
    assert.equal(video.pix_fmt, 'yuv420p');
    assert.equal(video.width, 854);
    assert.equal(video.height, 480);
    assert.equal(video.r_frame_rate, '24/1');
    assertNear(Number(probed.format.duration), 2, 0.1, 'duration');
    assert.equal(audioStream(probed), undefined, 'no audio track was asked for');
    assert.ok(mp4.indexOf('moov') < mp4.indexOf('mdat'), 'the index (moov) comes before the media data (+faststart)');
  });

  it('adds an AAC track when audio is true, at the asked ratio, rate and length', async () => {
    const res = await generate(srv, token, { model: 'seedance-1.5-pro', content: [TEXT], resolution: '480p', aspect_ratio: '9:16', duration: 1.5, framespersecond: 30, audio: true });
    const body: Json = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.equal(body.output_content[0].has_audio, true);
    assert.deepEqual(body.output_content[0].mediaSize, { type: 'video', width: 480, height: 854, status: 1 });
    const probed = await ffprobe(await download(body.output[0]));
    const video = videoStream(probed)!;
    assert.deepEqual([video.width, video.height, video.r_frame_rate], [480, 854, '30/1']);
    assert.equal(audioStream(probed)?.codec_name, 'aac');
    assertNear(Number(probed.format.duration), 1.5, 0.1, 'duration');
    assertNear(Number(video.duration), 1.5, 0.1, 'video stream duration');
  });

  it('starts on the first-frame picture and ends on the last-frame picture; adaptive takes the first frame\'s ratio', async () => {
    const red = await solidPng(400, 300, [230, 20, 20]);
    const blue = await solidPng(400, 300, [20, 40, 230]);
    const firstUrl = await upload(srv, token, red, 'first.png', 'image/png');
    const res = await generate(srv, token, {
      model: 'seedance-1.0-lite-i2v',
      content: [TEXT, { type: 'image_url', image_url: { url: firstUrl }, role: 'first_frame' }, { type: 'image_url', image_url: { url: dataUri(blue) }, role: 'last_frame' }],
      resolution: '480p',
      duration: 2,
      watermark: true,
    });
    const body: Json = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.deepEqual(body.output_content[0].mediaSize, { type: 'video', width: 640, height: 480, status: 1 });
    const colours = await frameColours(await download(body.output[0]));
    assert.equal(colours.length, 48);
    assert.ok(near(colours[0]!, [230, 20, 20]), `first frame ${colours[0]} is the red picture`);
    assert.ok(near(colours.at(-1)!, [20, 40, 230]), `last frame ${colours.at(-1)} is the blue picture`);
    const middle = colours[24]!;
    assert.ok(!near(middle, [230, 20, 20]) && !near(middle, [20, 40, 230]), `the middle frame ${middle} shows the drawn scene between the pictures`);

    const stored = await record(srv, token, body.task_id);
    const input = stored.generate_info.input;
    assert.equal(input.aspect_ratio, 'adaptive', 'the default aspect ratio is kept with the task');
    assert.equal(input.watermark, true);
    assert.equal(input.seed, -1);
    assert.equal(input.camerafixed, false);
  });

  it('draws the same video for the same request and seed, and another for another seed', async () => {
    const request = { model: 'seedance-1.0-pro-fast', content: [TEXT], resolution: '480p', aspect_ratio: '1:1', duration: 1, seed: 7 };
    const sha = async (body: Json) => createHash('sha256').update(await download((await (await generate(srv, token, body)).json()).output[0])).digest('hex');
    const once = await sha(request);
    assert.equal(await sha(request), once);
    assert.notEqual(await sha({ ...request, seed: 8 }), once);
  });

  it('async mode answers with the task id at once; the result holds the video', async () => {
    const res = await generate(srv, token, { model: 'seedance-1.0-pro', content: [TEXT], resolution: '480p', duration: 1 }, { 'x-async': 'true' });
    const body: Json = await res.json();
    assert.equal(res.status, 200);
    assert.equal(body.status, 'submitted');
    assert.match(body.task_id, /\S/);
    const done = await eventually('the video task to succeed', async () => {
      const r = await record(srv, token, body.task_id);
      return r.queue_status.status === 'success' ? r : undefined;
    });
    assert.equal(done.queue_status.data.type, 'video');
    const [item] = done.queue_status.output_content;
    assert.equal(item.type, 'video');
    assert.deepEqual(item.mediaSize, { type: 'video', width: 854, height: 480, status: 1 }, 'adaptive without a picture is 16:9');
    const probed = await ffprobe(await download(item.url));
    assertNear(Number(probed.format.duration), 1, 0.1, 'duration');
    assert.equal(videoStream(probed)!.r_frame_rate, '24/1', 'the default frame rate is 24');
  });

  it('edits a video with an omni model: the result is as long as asked and keeps the original sound', async () => {
    const source = await colourVideo(['green'], { secondsEach: 1, width: 320, height: 240, fps: 25, audio: true });
    const url = await upload(srv, token, source, 'source.mp4', 'video/mp4');
    const res = await generate(srv, token, {
      model: 'kling-o1',
      content: [TEXT, { type: 'video_url', video_url: { url, refer_type: 'base', keep_original_sound: 'yes' }, role: 'video_base' }],
      resolution: '480p',
      aspect_ratio: '4:3',
      duration: 2,
      audio: true,
    });
    const body: Json = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body));
    const probed = await ffprobe(await download(body.output[0]));
    assert.deepEqual([videoStream(probed)!.width, videoStream(probed)!.height], [640, 480]);
    assert.equal(audioStream(probed)?.codec_name, 'aac');
    assertNear(Number(probed.format.duration), 2, 0.1, 'duration (the 1 s source loops)');
  });

  it('reference pictures tint the scene, and a given sound becomes the track', async () => {
    const request = { model: 'seedance-1.0-pro', content: [TEXT], resolution: '480p', aspect_ratio: '16:9', duration: 1, framespersecond: 12 };
    const distanceToBlue = async (body: Json) => {
      const colours = await frameColours(await download(body.output[0]));
      return colours.reduce((sum, [r, g, b]) => sum + Math.hypot(r, g, b - 255), 0) / colours.length;
    };
    const plain: Json = await (await generate(srv, token, request)).json();
    const blue = await solidPng(64, 64, [0, 0, 255]);
    const tinted: Json = await (await generate(srv, token, {
      ...request,
      content: [TEXT, { type: 'image_url', image_url: { url: dataUri(blue) }, role: 'reference' }, { type: 'audio_url', audio_url: { url: await upload(srv, token, wav(0.4), 'beat.wav', 'audio/wav') } }],
      audio: true,
    })).json();
    assert.equal(tinted.status, 'success', JSON.stringify(tinted));
    assert.ok((await distanceToBlue(tinted)) < (await distanceToBlue(plain)) - 20, 'the blue reference pulls the colours towards blue');
    const probed = await ffprobe(await download(tinted.output[0]));
    assert.equal(audioStream(probed)?.codec_name, 'aac');
    assertNear(Number(probed.format.duration), 1, 0.1, 'the 0.4 s sound loops to the video length');
  });

  it('refuses a render too large for the offline engine before it starts', async () => {
    const res = await generate(srv, token, { model: 'seedance-1.0-pro', content: [TEXT], resolution: '2160p', duration: 60 });
    const body: Json = await res.json();
    assert.equal(res.status, 422, JSON.stringify(body));
    assert.equal(body.error.code, 'task_rejected');
    assert.match(body.error.message, /at most 3.2 billion pixels/);
  });

  it('fails the task when a picture is not an image', async () => {
    const res = await generate(srv, token, {
      model: 'seedance-1.0-lite-i2v',
      content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,bm90IGFuIGltYWdl' }, role: 'first_frame' }],
      resolution: '480p',
      duration: 1,
    });
    const body: Json = await res.json();
    assert.equal(res.status, 502);
    assert.equal(body.error.code, 'task_failed');
    assert.match(body.error.message, /content\[0\]\.image_url is not an image/);
  });
});

describe('video request validation', () => {
  let srv: TestServer;
  let token: string;
  // Validation is the route's work: an engine that answers at once keeps these tests fast.
  const instant: GenerationEngine = { cancellable: true, run: async () => ({ files: [] }) };
  before(async () => {
    srv = await startTestServer({}, { engines: { engineFor: () => instant } });
    token = await srv.tokenFor('validator');
  });
  after(() => srv.close());

  async function accepted(body: Json): Promise<Json> {
    const res = await generate(srv, token, body);
    const reply: Json = await res.json();
    assert.equal(res.status, 200, `${JSON.stringify(body)} → ${JSON.stringify(reply)}`);
    return (await record(srv, token, reply.task_id)).generate_info.input;
  }

  it('stores the documented defaults with the task input', async () => {
    const input = await accepted({ model: 'seedance-1.0-pro', content: [TEXT] });
    assert.deepEqual(input, { content: [TEXT], aspect_ratio: 'adaptive', resolution: '720p', duration: 5, watermark: false, seed: -1, camerafixed: false });
  });

  it('accepts every documented value', async () => {
    const image = { type: 'image_url', image_url: { url: 'https://example.com/a.png' } };
    const video = { type: 'video_url', video_url: { url: 'https://example.com/a.mp4' } };
    for (const aspect_ratio of ['16:9', '9:16', '4:3', '3:4', '1:1', '21:9', '9:21', 'adaptive', 'keep_ratio']) {
      assert.equal((await accepted({ model: 'seedance-1.0-pro', content: [TEXT], aspect_ratio })).aspect_ratio, aspect_ratio);
    }
    for (const resolution of ['480p', '720p', '1080p', '1440p', '2160p']) {
      assert.equal((await accepted({ model: 'seedance-1.0-pro', content: [TEXT], resolution })).resolution, resolution);
    }
    const options = { duration: 2.5, audio: true, framespersecond: 60, watermark: true, seed: 4_294_967_295, camerafixed: true, camera_control: 'down_back', negative_prompt: 'blur', cfg_scale: 0.5 };
    assert.deepEqual(await accepted({ model: 'kling-v2.6', content: [TEXT], aspect_ratio: '1:1', resolution: '1080p', ...options }), { content: [TEXT], aspect_ratio: '1:1', resolution: '1080p', ...options });
    await accepted({ model: 'seedance-1.0-pro', content: [TEXT], duration: 1, seed: 0 });
    await accepted({ model: 'seedance-1.0-pro', content: [TEXT], duration: 60, framespersecond: 1 });
    const everything = [
      TEXT,
      { ...image, role: 'first_frame', name: 'start' },
      { ...image, role: 'last_frame' },
      { ...image, role: 'digital_human_frame' },
      { ...image, role: 'reference' },
      { type: 'video_url', video_url: { url: 'https://example.com/a.mp4', refer_type: 'feature', keep_original_sound: 'no' }, role: 'video_feature' },
      { type: 'video_url', video_url: { url: 'data:video/mp4;base64,AAAA', refer_type: 'base', keep_original_sound: 'yes' }, role: 'video_base' },
      { type: 'text', text: 'shot one', role: 'shot_prompt', shot_index: 1, duration: 2 },
      { type: 'audio_url', audio_url: { url: 'blake3:' + 'a'.repeat(64) } },
      { type: 'element', element: { system_element_id: 'el-1' }, role: 'element' },
      { type: 'element', element: { inline_element: { name: 'cat', description: 'a grey cat', frontal_image_url: 'https://example.com/cat.png', refer_images: ['https://example.com/cat2.png'] } } },
      video,
    ];
    assert.deepEqual((await accepted({ model: 'kling-o1', content: everything })).content, everything);
  });

  it('rejects each broken field with 400 naming it', async () => {
    const image = (extra: Json = {}) => ({ type: 'image_url', image_url: { url: 'https://example.com/a.png' }, ...extra });
    const cases: [string, Json, string, string][] = [
      ['no content', { content: undefined }, 'missing_parameter', 'content'],
      ['empty content', { content: [] }, 'invalid_parameter', 'content'],
      ['unknown item type', { content: [{ type: 'gif' }] }, 'invalid_parameter', 'content[0].type'],
      ['text item without text', { content: [{ type: 'text' }] }, 'missing_parameter', 'content[0].text'],
      ['empty text', { content: [{ type: 'text', text: '' }] }, 'invalid_parameter', 'content[0].text'],
      ['image item without image_url', { content: [TEXT, { type: 'image_url' }] }, 'missing_parameter', 'content[1].image_url'],
      ['image_url without url', { content: [TEXT, { type: 'image_url', image_url: {} }] }, 'missing_parameter', 'content[1].image_url.url'],
      ['image url of another scheme', { content: [TEXT, { type: 'image_url', image_url: { url: 'ftp://x/a.png' } }] }, 'url_not_allowed', 'content[1].image_url.url'],
      ['image url that is no URL', { content: [TEXT, { type: 'image_url', image_url: { url: 'a.png' } }] }, 'invalid_parameter', 'content[1].image_url.url'],
      ['audio item without audio_url', { content: [TEXT, { type: 'audio_url' }] }, 'missing_parameter', 'content[1].audio_url'],
      ['video item without video_url', { content: [TEXT, { type: 'video_url' }] }, 'missing_parameter', 'content[1].video_url'],
      ['unknown refer_type', { content: [TEXT, { type: 'video_url', video_url: { url: 'https://x/a.mp4', refer_type: 'style' } }] }, 'invalid_parameter', 'content[1].video_url.refer_type'],
      ['unknown keep_original_sound', { content: [TEXT, { type: 'video_url', video_url: { url: 'https://x/a.mp4', keep_original_sound: 'maybe' } }] }, 'invalid_parameter', 'content[1].video_url.keep_original_sound'],
      ['refer_type against its role', { content: [TEXT, { type: 'video_url', video_url: { url: 'https://x/a.mp4', refer_type: 'base' }, role: 'video_feature' }] }, 'invalid_parameter', 'content[1].video_url.refer_type'],
      ['element item without element', { content: [TEXT, { type: 'element' }] }, 'missing_parameter', 'content[1].element'],
      ['element with neither kind', { content: [TEXT, { type: 'element', element: {} }] }, 'missing_parameter', 'content[1].element'],
      ['element with both kinds', { content: [TEXT, { type: 'element', element: { system_element_id: 'x', inline_element: { name: 'n', frontal_image_url: 'https://x/f.png' } } }] }, 'invalid_parameter', 'content[1].element.inline_element'],
      ['inline element without a frontal image', { content: [TEXT, { type: 'element', element: { inline_element: { name: 'n' } } }] }, 'missing_parameter', 'content[1].element.inline_element.frontal_image_url'],
      ['unknown role', { content: [{ ...TEXT, role: 'hero' }] }, 'invalid_parameter', 'content[0].role'],
      ['a picture role on text', { content: [{ ...TEXT, role: 'first_frame' }] }, 'invalid_parameter', 'content[0].role'],
      ['a text role on a picture', { content: [TEXT, image({ role: 'shot_prompt' })] }, 'invalid_parameter', 'content[1].role'],
      ['two first frames', { content: [TEXT, image({ role: 'first_frame' }), image({ role: 'first_frame' })] }, 'invalid_parameter', 'content[2].role'],
      ['another type\'s object in an item', { content: [{ ...TEXT, image_url: { url: 'https://x/a.png' } }] }, 'unsupported_parameter', 'content[0].image_url'],
      ['unknown item field', { content: [{ ...TEXT, weight: 1 }] }, 'unsupported_parameter', 'content[0].weight'],
      ['negative shot_index', { content: [{ ...TEXT, shot_index: -1 }] }, 'invalid_parameter', 'content[0].shot_index'],
      ['zero shot duration', { content: [{ ...TEXT, duration: 0 }] }, 'invalid_parameter', 'content[0].duration'],
      ['name not text', { content: [{ ...TEXT, name: 5 }] }, 'invalid_parameter', 'content[0].name'],
      ['unknown aspect ratio', { aspect_ratio: '5:4' }, 'invalid_parameter', 'aspect_ratio'],
      ['unknown resolution', { resolution: '4k' }, 'invalid_parameter', 'resolution'],
      ['zero duration', { duration: 0 }, 'invalid_parameter', 'duration'],
      ['duration over a minute', { duration: 61 }, 'invalid_parameter', 'duration'],
      ['duration as text', { duration: '5' }, 'invalid_parameter', 'duration'],
      ['zero frame rate', { framespersecond: 0 }, 'invalid_parameter', 'framespersecond'],
      ['frame rate over 60', { framespersecond: 61 }, 'invalid_parameter', 'framespersecond'],
      ['audio as text', { audio: 'yes' }, 'invalid_parameter', 'audio'],
      ['watermark as a number', { watermark: 1 }, 'invalid_parameter', 'watermark'],
      ['seed below -1', { seed: -2 }, 'invalid_parameter', 'seed'],
      ['fractional seed', { seed: 1.5 }, 'invalid_parameter', 'seed'],
      ['camerafixed as text', { camerafixed: 'no' }, 'invalid_parameter', 'camerafixed'],
      ['camera_control as a number', { camera_control: 5 }, 'invalid_parameter', 'camera_control'],
      ['negative_prompt as a number', { negative_prompt: 5 }, 'invalid_parameter', 'negative_prompt'],
      ['negative cfg_scale', { cfg_scale: -1 }, 'invalid_parameter', 'cfg_scale'],
      ['unknown field', { style: 'anime' }, 'unsupported_parameter', 'style'],
      ['no model', { model: undefined }, 'missing_parameter', 'model'],
    ];
    for (const [what, change, code, param] of cases) {
      const res = await generate(srv, token, { model: 'kling-o1', content: [TEXT], ...change });
      const body: Json = await res.json();
      assert.equal(res.status, 400, `${what}: ${JSON.stringify(body)}`);
      assert.equal(body.error.type, 'invalid_request_error', what);
      assert.equal(body.error.code, code, `${what}: ${body.error.message}`);
      assert.equal(body.error.param, param, `${what}: ${body.error.message}`);
    }
  });

  it('needs a model able to do what the content asks', async () => {
    const picture = { type: 'image_url', image_url: { url: 'https://example.com/a.png' }, role: 'first_frame' };
    const video = { type: 'video_url', video_url: { url: 'https://example.com/a.mp4' }, role: 'video_base' };
    const element = { type: 'element', element: { system_element_id: 'el-1' } };
    const mismatches: [string, Json[]][] = [
      ['seedance-1.0-lite-i2v', [TEXT]],
      ['seedance-1.0-lite-t2v', [TEXT, picture]],
      ['seedance-1.0-pro', [TEXT, video]],
      ['kling-v2.6', [TEXT, element]],
      ['seedream-4.0', [TEXT]],
    ];
    for (const [model, content] of mismatches) {
      const res = await generate(srv, token, { model, content });
      const body: Json = await res.json();
      assert.equal(res.status, 400, `${model}: ${JSON.stringify(body)}`);
      assert.equal(body.error.code, 'model_capability_mismatch', model);
      assert.equal(body.error.param, 'model');
    }
    await accepted({ model: 'seedance-1.0-lite-t2v', content: [TEXT] });
    await accepted({ model: 'seedance-1.0-lite-i2v', content: [picture] });
    await accepted({ model: 'kling-o1', content: [TEXT, picture] });
    const unknown = await generate(srv, token, { model: 'no-such-video-model', content: [TEXT] });
    assert.equal(unknown.status, 404);
    assert.equal(((await unknown.json()) as Json).error.code, 'model_not_found');
  });
});
