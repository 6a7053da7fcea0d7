import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { BUILTIN_CATALOG_PATH } from '../src/catalog/catalog.ts';
import { audioMetadata, decodePcm, download, rms } from './support/audio.ts';
import { itAccepts, itRejects, jobRecorder, without } from './support/request-validation.ts';
import { startTestServer, tempDataDir, type TestServer } from './support/server.ts';
import { eventually } from './support/wait.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const SENTENCE = 'The quick brown fox jumps over the lazy dog near the quiet river bank.';
const SPEECH = { model: 'minimax-speech-02-hd', text: SENTENCE, voice_id: 'English_Graceful_Lady' };

function submit(srv: TestServer, token: string, body: Json, headers: Record<string, string> = {}): Promise<Response> {
  return srv.fetch('/v1/speech/generations', { method: 'POST', token, json: body, headers });
}

/** Runs a speech request synchronously; the audio file and its duration in seconds. */
async function speak(srv: TestServer, token: string, body: Json, mimeType = 'audio/mpeg'): Promise<{ draw: Json; data: Buffer; seconds: number }> {
  const res = await submit(srv, token, body);
  const draw: Json = await res.json();
  assert.equal(res.status, 200, JSON.stringify(draw));
  const file = await download(draw.output[0]);
  assert.equal(file.contentType, mimeType);
  const meta = await audioMetadata(file.data, mimeType);
  return { draw, data: file.data, seconds: meta.format.duration! };
}

describe('speech synthesis on the local engine', () => {
  let srv: TestServer;
  let token: string;
  let sentence: { data: Buffer; seconds: number };
  before(async () => {
    srv = await startTestServer();
    token = await srv.tokenFor('speaker');
  });
  after(() => srv.close());

  it('sync: an MP3 of the spoken text, not silent', async () => {
    const { draw, data, seconds } = await speak(srv, token, SPEECH);
    sentence = { data, seconds };
    assert.equal(draw.status, 'success');
    assert.equal(draw.type, 'audio');
    assert.equal(draw.output_content[0].type, 'audio');
    assert.match(draw.output_content[0].filename, /\.mp3$/);
    const meta = await audioMetadata(data);
    assert.equal(meta.format.codec, 'MPEG 2 Layer 3');
    assert.equal(meta.format.numberOfChannels, 1);
    assert.ok(seconds > 2 && seconds < 10, `a sentence takes a few seconds, got ${seconds}`);
    assert.ok(rms(await decodePcm(data)) > 0.03, 'speech is audible');
  });

  it('is deterministic, and another voice sounds different', async () => {
    const again = await speak(srv, token, SPEECH);
    assert.ok(again.data.equals(sentence.data));
    const other = await speak(srv, token, { ...SPEECH, voice_id: 'Deep_Voice_Man' });
    assert.ok(!other.data.equals(sentence.data));
  });

  it('takes longer for longer text and less time at a higher speed', async () => {
    const long = await speak(srv, token, { ...SPEECH, text: Array(4).fill(SENTENCE).join(' ') });
    assert.ok(long.seconds > 3 * sentence.seconds, `four sentences ${long.seconds} s, one ${sentence.seconds} s`);
    const fast = await speak(srv, token, { ...SPEECH, text: Array(4).fill(SENTENCE).join(' '), speed: 1.5 });
    assert.ok(fast.seconds < 0.8 * long.seconds, `speed 1.5: ${fast.seconds} s against ${long.seconds} s`);
    const slow = await speak(srv, token, { ...SPEECH, speed: 0.5 });
    assert.ok(slow.seconds > 1.5 * sentence.seconds, `speed 0.5: ${slow.seconds} s against ${sentence.seconds} s`);
  });

  it('is louder at a higher vol', async () => {
    const quiet = rms(await decodePcm(sentence.data));
    const loud = rms(await decodePcm((await speak(srv, token, { ...SPEECH, vol: 5 })).data));
    assert.ok(loud > 1.5 * quiet, `RMS at vol 5 ${loud}, at vol 1 ${quiet}`);
  });

  it('speaks Chinese with a Chinese voice, and writes WAV on request', async () => {
    const { data, seconds } = await speak(srv, token, { ...SPEECH, voice_id: 'female-shaonv', text: '今天天气很好，我们去公园散步吧。', emotion: 'happy', pitch: 3 });
    assert.ok(seconds > 1, `got ${seconds} s`);
    assert.ok(rms(await decodePcm(data)) > 0.03);
    const wav = await speak(srv, token, { ...SPEECH, format: 'wav' }, 'audio/wav');
    assert.equal(wav.data.toString('latin1', 0, 4), 'RIFF');
    assert.match(wav.draw.output_content[0].filename, /\.wav$/);
  });

  it('text_file_id: speaks an uploaded text file instead of text; a non-text file fails the task', async () => {
    const form = new FormData();
    form.append('file', new Blob([Array(5).fill(SENTENCE).join('\n')]), 'story.txt');
    const upload: Json = await (await srv.fetch('/v1/files/upload', { method: 'POST', token, body: form })).json();
    const fromFile = await speak(srv, token, { ...SPEECH, text: 'Hi.', text_file_id: upload.data.url });
    assert.ok(fromFile.seconds > 4 * sentence.seconds, `five sentences from the file: ${fromFile.seconds} s`);

    const png = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
    const res = await submit(srv, token, { ...SPEECH, text_file_id: png });
    const body: Json = await res.json();
    assert.equal(res.status, 502);
    assert.equal(body.error.code, 'task_failed');
    assert.match(body.error.message, /text file/);
  });

  it('async: answers the task id at once; the result record carries the audio', async () => {
    const res = await submit(srv, token, SPEECH, { 'x-async': '1' });
    const body: Json = await res.json();
    assert.equal(res.status, 200);
    assert.equal(body.status, 'submitted');
    const record: Json = await eventually('the speech task to succeed', async () => {
      const r: Json = await (await srv.fetch(`/v1/ai/result/${body.task_id}`, { token })).json();
      return r.queue_status.status === 'success' ? r : undefined;
    });
    assert.equal(record.queue_status.data.type, 'audio');
    assert.ok((await download(record.queue_status.data.output[0])).data.equals(sentence.data));
  });

  it('refuses a voice the model does not list: 400 on voice_id', async () => {
    const res = await submit(srv, token, { ...SPEECH, voice_id: 'no-such-voice' });
    const body: Json = await res.json();
    assert.equal(res.status, 400);
    assert.equal(body.error.code, 'invalid_parameter');
    assert.equal(body.error.param, 'voice_id');
  });
});

describe('speech request validation', () => {
  let srv: TestServer;
  let token: string;
  const catalogDir = tempDataDir();
  // Accepted requests reach this engine instead of being spoken.
  const { engine, jobs } = jobRecorder();
  before(async () => {
    // One more model: no voice list, its own volume range and formats, no emotion control.
    const catalog: Json = JSON.parse(readFileSync(BUILTIN_CATALOG_PATH, 'utf8'));
    const base = catalog.baseModels.find((m: Json) => m.alias === 'minimax-speech-02-turbo');
    const openVoices = structuredClone(base);
    Object.assign(openVoices, { catalogKey: 'base:runtime:open-voices', alias: 'open-voices' });
    delete openVoices.capabilities.text_to_speech.voices;
    delete openVoices.capabilities.text_to_speech.default_voice_id;
    Object.assign(openVoices.capabilities.text_to_speech.tts_params, { emotion: false, audio_formats: ['mp3', 'wav'], volume_range: { min: 0, max: 5, step: 0.5 } });
    catalog.baseModels.push(openVoices);
    const catalogPath = path.join(catalogDir, 'catalog.json');
    writeFileSync(catalogPath, JSON.stringify(catalog));
    srv = await startTestServer({ CATALOG_PATH: catalogPath }, { engines: { engineFor: () => engine } });
    token = await srv.tokenFor('validator');
  });
  after(async () => {
    await srv.close();
    rmSync(catalogDir, { recursive: true, force: true });
  });

  const OPEN = { model: 'open-voices', text: SENTENCE, voice_id: 'my-own-voice' };
  itRejects((body) => submit(srv, token, body), [
    ['no text', without(SPEECH, 'text'), 400, 'missing_parameter', 'text'],
    ['empty text', { ...SPEECH, text: '' }, 400, 'invalid_parameter', 'text'],
    ['blank text', { ...SPEECH, text: ' \n ' }, 400, 'invalid_parameter', 'text'],
    ['text over 10000 characters', { ...SPEECH, text: 'a'.repeat(10_001) }, 400, 'invalid_parameter', 'text'],
    ['no voice_id', without(SPEECH, 'voice_id'), 400, 'missing_parameter', 'voice_id'],
    ['an unknown voice_id', { ...SPEECH, voice_id: 'Nobody' }, 400, 'invalid_parameter', 'voice_id'],
    ['no model', without(SPEECH, 'model'), 400, 'missing_parameter', 'model'],
    ['an unknown model', { ...SPEECH, model: 'no-such-model' }, 404, 'model_not_found', 'model'],
    ['a music model', { ...SPEECH, model: 'suno-v5' }, 400, 'model_capability_mismatch', 'model'],
    ['speed below 0.5', { ...SPEECH, speed: 0.4 }, 400, 'invalid_parameter', 'speed'],
    ['speed above 2', { ...SPEECH, speed: 2.1 }, 400, 'invalid_parameter', 'speed'],
    ['speed as text', { ...SPEECH, speed: '1' }, 400, 'invalid_parameter', 'speed'],
    ['vol below 0', { ...SPEECH, vol: -1 }, 400, 'invalid_parameter', 'vol'],
    ['vol above 10', { ...SPEECH, vol: 10.5 }, 400, 'invalid_parameter', 'vol'],
    ['vol above the model\'s volume_range', { ...OPEN, vol: 6 }, 400, 'invalid_parameter', 'vol'],
    ['pitch above 12', { ...SPEECH, pitch: 13 }, 400, 'invalid_parameter', 'pitch'],
    ['pitch below -12', { ...SPEECH, pitch: -13 }, 400, 'invalid_parameter', 'pitch'],
    ['a fractional pitch', { ...SPEECH, pitch: 1.5 }, 400, 'invalid_parameter', 'pitch'],
    ['an unknown emotion', { ...SPEECH, emotion: 'bored' }, 400, 'invalid_parameter', 'emotion'],
    ['emotion on a model without emotion control', { ...OPEN, emotion: 'happy' }, 400, 'unsupported_parameter', 'emotion'],
    ['an unknown format', { ...SPEECH, format: 'ogg' }, 400, 'invalid_parameter', 'format'],
    ['a format the model does not write', { ...OPEN, format: 'flac' }, 400, 'invalid_parameter', 'format'],
    ['an empty text_file_id', { ...SPEECH, text_file_id: '' }, 400, 'invalid_parameter', 'text_file_id'],
    ['an unknown field', { ...SPEECH, voice_setting: {} }, 400, 'unsupported_parameter', 'voice_setting'],
  ]);

  itAccepts({ submit: (body) => submit(srv, token, body), jobs, endpoint: 'speech.generations', type: 'audio' }, [
    ['the required fields only', SPEECH],
    ['every field', { ...SPEECH, text_file_id: 'blake3:' + 'a'.repeat(64), speed: 1.25, vol: 2.5, pitch: -3, emotion: 'sad', format: 'flac' }],
    ['speed 0.5', { ...SPEECH, speed: 0.5 }],
    ['speed 2', { ...SPEECH, speed: 2 }],
    ['vol 0', { ...SPEECH, vol: 0 }],
    ['vol 10', { ...SPEECH, vol: 10 }],
    ['pitch -12', { ...SPEECH, pitch: -12 }],
    ['pitch 12', { ...SPEECH, pitch: 12 }],
    ...['happy', 'sad', 'angry', 'fearful', 'disgusted', 'surprised', 'calm', 'neutral', 'fluent'].map((emotion): [string, Json] => [`emotion ${emotion}`, { ...SPEECH, emotion }]),
    ['any voice on a model that lists none', OPEN],
    ['vol at the top of the model\'s volume_range', { ...OPEN, vol: 5 }],
    ['a format the model writes', { ...OPEN, format: 'wav' }],
  ]);
});
