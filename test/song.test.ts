import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { audioMetadata, decodePcm, download, rms } from './support/audio.ts';
import { itAccepts, itRejects, jobRecorder, without } from './support/request-validation.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { eventually } from './support/wait.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const SONG = {
  model: 'suno-v5',
  prompt: 'A bright song about the sea and the wind',
  tags: 'pop, upbeat',
  negativeTags: '',
  title: 'Sea Song',
  vocalGender: 'f',
};

function submit(srv: TestServer, token: string, body: Json, headers: Record<string, string> = {}): Promise<Response> {
  return srv.fetch('/v1/song/generations', { method: 'POST', token, json: body, headers });
}

async function generate(srv: TestServer, token: string, body: Json): Promise<{ draw: Json; data: Buffer }> {
  const res = await submit(srv, token, body);
  const draw: Json = await res.json();
  assert.equal(res.status, 200, JSON.stringify(draw));
  const file = await download(draw.output[0]);
  assert.equal(file.contentType, 'audio/mpeg');
  return { draw, data: file.data };
}

describe('song generation on the local engine', () => {
  let srv: TestServer;
  let token: string;
  let vocal: Buffer;
  before(async () => {
    srv = await startTestServer();
    token = await srv.tokenFor('composer');
  });
  after(() => srv.close());

  it('sync: one MP3 of 30 to 90 s with the title in its tag', async () => {
    const { draw, data } = await generate(srv, token, SONG);
    vocal = data;
    assert.equal(draw.status, 'success');
    assert.equal(draw.type, 'audio');
    assert.equal(draw.output.length, 1);
    assert.equal(draw.output_content[0].type, 'audio');
    assert.equal(draw.output_content[0].url, draw.output[0]);
    assert.match(draw.output_content[0].filename, /\.mp3$/);

    const meta = await audioMetadata(data);
    assert.equal(meta.format.container, 'MPEG');
    assert.equal(meta.format.codec, 'MPEG 1 Layer 3');
    assert.equal(meta.format.sampleRate, 44100);
    assert.equal(meta.format.numberOfChannels, 2);
    assert.ok(meta.format.duration! >= 30 && meta.format.duration! <= 90.5, `duration ${meta.format.duration}`);
    assert.equal(meta.common.title, 'Sea Song');
    assert.deepEqual(meta.common.genre, ['pop, upbeat']);
    assert.ok(rms(await decodePcm(data)) > 0.02, 'the song is not silent');
  });

  it('is deterministic: the same request gives the same bytes, another prompt another song', async () => {
    const again = await generate(srv, token, SONG);
    assert.ok(again.data.equals(vocal), 'same request, same file');
    const { data: other } = await generate(srv, token, { ...SONG, prompt: 'A slow song of rain on the roof', title: undefined, tags: 'ballad, sad' });
    assert.ok(!other.equals(vocal));
    const meta = await audioMetadata(other);
    assert.equal(meta.common.title, 'A slow song of rain on the roof', 'without a title the prompt names the song');
    assert.ok(meta.format.duration! >= 30 && meta.format.duration! <= 90.5, `duration ${meta.format.duration}`);
  });

  it('makeInstrumental drops the voice: the same backing track, the difference lies in the speech band', async () => {
    const { data: instrumental } = await generate(srv, token, { ...SONG, makeInstrumental: true });
    assert.ok(!instrumental.equals(vocal));
    const [withVoice, without] = [await decodePcm(vocal), await decodePcm(instrumental)];
    assert.equal(withVoice.length, without.length, 'both versions last as long');
    const voice = rms(withVoice, without);
    assert.ok(voice > 0.3 * rms(without), `the voice is clearly audible (difference RMS ${voice})`);
    const band = 'highpass=f=300,lowpass=f=3400';
    const voiceInBand = rms(await decodePcm(vocal, band), await decodePcm(instrumental, band));
    assert.ok((voiceInBand / voice) ** 2 > 0.5, `most of the voice's energy is between 300 and 3400 Hz (${((voiceInBand / voice) ** 2).toFixed(2)})`);
  });

  it('async: answers the task id at once; the result record carries the MP3', async () => {
    const res = await submit(srv, token, { ...SONG, vocalGender: 'm', customMode: true, prompt: '[Verse]\nWaves roll in\nWaves roll out' }, { 'x-async': 'true' });
    assert.equal(res.status, 200);
    const body: Json = await res.json();
    assert.deepEqual(Object.keys(body).sort(), ['request_id', 'status', 'task_id']);
    assert.equal(body.status, 'submitted');
    const record: Json = await eventually('the song task to succeed', async () => {
      const r: Json = await (await srv.fetch(`/v1/ai/result/${body.task_id}`, { token })).json();
      return r.queue_status.status === 'success' ? r : undefined;
    }, 60_000);
    const url = record.queue_status.data.output[0];
    const meta = await audioMetadata((await download(url)).data);
    assert.equal(meta.format.codec, 'MPEG 1 Layer 3');
    assert.equal(meta.common.title, 'Sea Song');
  });
});

describe('song request validation', () => {
  let srv: TestServer;
  let token: string;
  // Accepted requests reach this engine instead of being synthesized.
  const { engine, jobs } = jobRecorder();
  before(async () => {
    srv = await startTestServer({}, { engines: { engineFor: () => engine } });
    token = await srv.tokenFor('validator');
  });
  after(() => srv.close());

  itRejects((body) => submit(srv, token, body), [
    ['no prompt', without(SONG, 'prompt'), 400, 'missing_parameter', 'prompt'],
    ['empty prompt', { ...SONG, prompt: '' }, 400, 'invalid_parameter', 'prompt'],
    ['no model', without(SONG, 'model'), 400, 'missing_parameter', 'model'],
    ['no tags', without(SONG, 'tags'), 400, 'missing_parameter', 'tags'],
    ['empty tags', { ...SONG, tags: '' }, 400, 'invalid_parameter', 'tags'],
    ['no negativeTags', without(SONG, 'negativeTags'), 400, 'missing_parameter', 'negativeTags'],
    ['vocalGender x', { ...SONG, vocalGender: 'x' }, 400, 'invalid_parameter', 'vocalGender'],
    ['makeInstrumental as text', { ...SONG, makeInstrumental: 'yes' }, 400, 'invalid_parameter', 'makeInstrumental'],
    ['customMode as number', { ...SONG, customMode: 1 }, 400, 'invalid_parameter', 'customMode'],
    ['title as number', { ...SONG, title: 7 }, 400, 'invalid_parameter', 'title'],
    ['styleWeight three decimals', { ...SONG, styleWeight: 0.555 }, 400, 'invalid_parameter', 'styleWeight'],
    ['styleWeight above 1', { ...SONG, styleWeight: 1.01 }, 400, 'invalid_parameter', 'styleWeight'],
    ['styleWeight below 0', { ...SONG, styleWeight: -0.1 }, 400, 'invalid_parameter', 'styleWeight'],
    ['styleWeight as text', { ...SONG, styleWeight: '0.5' }, 400, 'invalid_parameter', 'styleWeight'],
    ['weirdnessConstraint three decimals', { ...SONG, weirdnessConstraint: 0.555 }, 400, 'invalid_parameter', 'weirdnessConstraint'],
    ['audioWeight three decimals', { ...SONG, audioWeight: 0.555 }, 400, 'invalid_parameter', 'audioWeight'],
    ['audioWeight above 1', { ...SONG, audioWeight: 2 }, 400, 'invalid_parameter', 'audioWeight'],
    ['an unknown field', { ...SONG, lyrics: 'la la' }, 400, 'unsupported_parameter', 'lyrics'],
    ['an unknown model', { ...SONG, model: 'no-such-model' }, 404, 'model_not_found', 'model'],
    ['a speech model', { ...SONG, model: 'minimax-speech-02-hd' }, 400, 'model_capability_mismatch', 'model'],
  ]);

  itAccepts({ submit: (body) => submit(srv, token, body), jobs, endpoint: 'song.generations', type: 'audio' }, [
    ['the required fields only', { model: 'suno-v4.5', prompt: 'x', tags: 'rock', negativeTags: '' }],
    ['negativeTags text', { ...SONG, negativeTags: 'metal, drums' }],
    ['vocalGender m', { ...SONG, vocalGender: 'm' }],
    ['makeInstrumental and customMode', { ...SONG, makeInstrumental: true, customMode: true }],
    ['two-decimal weights at the ends and between', { ...SONG, styleWeight: 0, weirdnessConstraint: 1, audioWeight: 0.29 }],
    ['one-decimal weights', { ...SONG, styleWeight: 0.5, weirdnessConstraint: 0.1, audioWeight: 0.07 }],
  ]);
});
