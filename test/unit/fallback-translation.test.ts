/**
 * Translating a task's input for a fallback model through the model's catalog capabilities:
 * each capability field a value is fitted to, without a server.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { LiveModel } from '../../src/catalog/catalog.ts';
import type { Capabilities, CapabilityName } from '../../src/catalog/schema.ts';
import type { EndpointDeclaration } from '../../src/providers/spec.ts';
import type { Translation } from '../../src/routing/router.ts';
import { translateChatParams, translateTaskInput } from '../../src/routing/translate.ts';

type Input = Record<string, unknown>;

function model(alias: string, capabilities: Record<string, Record<string, unknown>>, extra: Partial<LiveModel> = {}): LiveModel {
  const typed = Object.fromEntries(Object.entries(capabilities).map(([type, fields]) => [type, { type, ...fields }])) as Capabilities;
  return {
    catalogKey: `base:seed:${alias}`,
    providerCode: 'acme',
    displayName: alias,
    alias,
    defaultRealModelName: alias,
    modelTypes: Object.keys(capabilities) as CapabilityName[],
    capabilities: typed,
    status: 'active',
    enabled: true,
    ...extra,
  };
}

function translated(result: Translation<Input>): { input: Input; warnings: string[] } {
  assert.ok(!('skip' in result), `expected a translation, got skip: ${'skip' in result ? result.skip : ''}`);
  return result;
}

function skipped(result: Translation<Input>): string {
  assert.ok('skip' in result, `expected a skip, got ${JSON.stringify(result)}`);
  return result.skip;
}

const image = (fields: Record<string, unknown>, alias = 'painter') => model(alias, { image_generate: fields, image_edit: fields });
const generate = (input: Input, target: LiveModel, declaration?: EndpointDeclaration) => translateTaskInput('images.generations', input, target, declaration);
const sizeFor = (size: string, fields: Record<string, unknown>, declaration?: EndpointDeclaration) => translated(generate({ prompt: 'p', size }, image(fields), declaration)).input.size;

describe('image size', () => {
  it('keeps an allowed aspect ratio and brings each side into width_height_range', () => {
    const result = translated(generate({ prompt: 'p', size: '1024x1024' }, image({ aspect_ratio_allowed: ['1:1'], width_height_range: [256, 512], allow_custom_width_height_size: true }, 'small-squares')));
    assert.equal(result.input.size, '512x512');
    assert.deepEqual(result.warnings, ['size "1024x1024" became "512x512": fallback model small-squares takes aspect ratios 1:1; sides of 256 to 512 pixels']);
  });

  it('grows a size below width_height_range and leaves a size within it', () => {
    assert.equal(sizeFor('100x200', { width_height_range: [256, 1024], allow_custom_width_height_size: true }), '256x512');
    assert.equal(sizeFor('300x400', { width_height_range: [256, 1024], allow_custom_width_height_size: true }), '300x400');
  });

  it('clamps each side when no scale keeps the ratio within the range', () => {
    assert.equal(sizeFor('4000x500', { width_height_range: [256, 512], allow_custom_width_height_size: true }), '512x500');
  });

  it('moves a ratio outside aspect_ratio_allowed to the nearest allowed ratio at the same area', () => {
    assert.equal(sizeFor('1000x800', { aspect_ratio_allowed: ['1:1', '16:9'], width_height_range: [256, 2048], allow_custom_width_height_size: true }), '894x894');
    assert.equal(sizeFor('1536x1024', { aspect_ratio_allowed: ['1:1'], width_height_range: [256, 512], allow_custom_width_height_size: true }), '512x512');
  });

  it('counts a ratio within 3% of a listed one as that one', () => {
    assert.equal(sizeFor('1344x768', { aspect_ratio_allowed: ['16:9'], allow_custom_width_height_size: true }), '1344x768');
  });

  it('brings a ratio into aspect_ratio_range when custom sizes are allowed, the listed ratios being presets', () => {
    const fields = { aspect_ratio_allowed: ['1:1', '16:9'], aspect_ratio_range: [0.5, 2], allow_custom_width_height_size: true, width_height_multiple: 16 };
    assert.equal(sizeFor('3000x1000', fields), '2448x1232');
    assert.equal(sizeFor('1250x1000', fields), '1248x1008', 'a ratio within the range stays; sides become multiples of 16');
  });

  it('scales a size into output_size_range and under output_max_size', () => {
    assert.equal(sizeFor('512x512', { output_size_range: [921600, 16777216], allow_custom_width_height_size: true }), '960x960');
    assert.equal(sizeFor('2048x2048', { output_max_size: 1048576, allow_custom_width_height_size: true }), '1024x1024');
    const [w, h] = String(sizeFor('1500x1000', { aspect_ratio_allowed: ['3:2', '1:1'], output_max_size: 1048576, allow_custom_width_height_size: false })).split('x').map(Number);
    assert.ok(w! * h! <= 1048576 && Math.abs(w! / h! - 1.5) < 0.01, `${w}x${h}`);
  });

  it('rounds sides to width_height_multiple within the range', () => {
    assert.equal(sizeFor('1024x1024', { width_height_range: [256, 1000], width_height_multiple: 64, allow_custom_width_height_size: true }), '960x960');
  });

  it('takes the nearest listed size when custom sizes are not allowed', () => {
    const result = translated(generate({ prompt: 'p', size: '1536x1024' }, image({ output_resolutions: ['256x256', '512x512', '1024x1024'], allow_custom_width_height_size: false }, 'dall-e-2')));
    assert.equal(result.input.size, '1024x1024');
    assert.deepEqual(result.warnings, ['size "1536x1024" became "1024x1024": fallback model dall-e-2 takes 256x256, 512x512, 1024x1024']);
  });

  it('drops size auto for a model that lists sizes without auto, and keeps it for one that lists auto', () => {
    const result = translated(generate({ prompt: 'p', size: 'auto' }, image({ output_resolutions: ['512x512'] })));
    assert.equal(result.input.size, undefined);
    assert.match(result.warnings[0]!, /^size dropped: fallback model painter takes only 512x512$/);
    assert.equal(sizeFor('auto', { output_resolutions: ['1024x1024', 'auto'] }), 'auto');
  });

  it('holds each side to the largest the adapter declares', () => {
    assert.equal(sizeFor('4096x2048', { allow_custom_width_height_size: true }, { limits: { maxImageSide: 2048 } }), '2048x1024');
  });

  it('fits the deprecated endpoint\'s width and height the same way', () => {
    const result = translated(translateTaskInput('ai.generations', { prompt: 'p', width: 1024, height: 1024 }, image({ aspect_ratio_allowed: ['1:1'], width_height_range: [256, 512], allow_custom_width_height_size: true }), undefined));
    assert.deepEqual([result.input.width, result.input.height], [512, 512]);
    assert.equal(result.warnings.length, 2);
  });
});

describe('image parameters', () => {
  it('moves aspect_ratio to the nearest listed ratio, or into the ratio range', () => {
    const listed = translated(generate({ prompt: 'p', aspect_ratio: '5:4' }, image({ aspect_ratio_allowed: ['1:1', '16:9', '4:3'] })));
    assert.equal(listed.input.aspect_ratio, '4:3');
    assert.deepEqual(listed.warnings, ['aspect_ratio "5:4" became "4:3": fallback model painter takes aspect ratios 1:1, 16:9, 4:3']);
    const ranged = translated(generate({ prompt: 'p', aspect_ratio: '4:1' }, image({ aspect_ratio_range: [0.4286, 2.3333], allow_custom_width_height_size: true })));
    assert.equal(ranged.input.aspect_ratio, '7:3');
    const custom = translated(generate({ prompt: 'p', aspect_ratio: '5:4' }, image({ aspect_ratio_allowed: ['1:1', '4:3'], aspect_ratio_range: [0.0625, 16], allow_custom_width_height_size: true })));
    assert.deepEqual(custom.warnings, [], 'a ratio within the range of a model taking custom sizes stays');
  });

  it('moves resolution to the nearest level of output_resolutions', () => {
    const result = translated(generate({ prompt: 'p', resolution: '1K' }, image({ output_resolutions: ['2K', '4K'] })));
    assert.equal(result.input.resolution, '2K');
  });

  it('holds n to output_multiple_images, output_max_images_count, input_output_max_images_count and the adapter\'s maxOutputs', () => {
    assert.equal(translated(generate({ prompt: 'p', n: 4 }, image({ output_multiple_images: false }))).input.n, 1);
    assert.equal(translated(generate({ prompt: 'p', n: 8 }, image({ output_multiple_images: true, output_max_images_count: 4 }))).input.n, 4);
    assert.equal(translated(generate({ prompt: 'p', n: 8 }, image({}), { limits: { maxOutputs: 2 } })).input.n, 2);
    const edit = translated(translateTaskInput('images.edits', { prompt: 'p', image: ['a', 'b', 'c'], n: 8 }, image({ input_output_max_images_count: 5 }), undefined));
    assert.equal(edit.input.n, 2);
    assert.deepEqual(edit.warnings, ['n 8 became 2: fallback model painter takes at most 2 beside 3 input images']);
  });

  it('skips a fallback that takes fewer input images than the edit has', () => {
    const edit = { prompt: 'p', image: ['a', 'b'] };
    assert.match(skipped(translateTaskInput('images.edits', edit, image({ input_max_images_count: 1 }), undefined)), /^fallback model painter takes at most 1 input image, not 2$/);
    assert.match(skipped(translateTaskInput('images.edits', edit, image({ input_multiple_images: false }), undefined)), /at most 1 input image/);
    assert.match(skipped(translateTaskInput('images.edits', edit, image({}), { limits: { maxInputImages: 1 } })), /at most 1 input image/);
    assert.match(skipped(translateTaskInput('images.edits', { prompt: 'p', image: ['a', 'b', 'c'] }, image({ input_output_max_images_count: 3 }), undefined)), /makes no image beside 3 input images/);
  });

  it('drops a mask for a model whose input_parameters take none', () => {
    const result = translated(translateTaskInput('images.edits', { prompt: 'p', image: ['a'], mask: 'm' }, image({ input_parameters: [{ type: 'image', parameter: 'image' }] }), undefined));
    assert.equal(result.input.mask, undefined);
    assert.deepEqual(result.warnings, ['mask dropped: fallback model painter takes no mask']);
  });

  it('fits quality to support_quality_control and quality_options', () => {
    assert.equal(translated(generate({ prompt: 'p', quality: 'high' }, image({ support_quality_control: false }))).input.quality, undefined);
    assert.equal(translated(generate({ prompt: 'p', quality: 'hd' }, image({ quality_options: ['low', 'auto'] }))).input.quality, 'auto');
    assert.equal(translated(generate({ prompt: 'p', quality: 'hd' }, image({ quality_options: ['low', 'high'] }))).input.quality, undefined);
  });

  it('skips a model without the endpoint\'s capability type', () => {
    assert.match(skipped(translateTaskInput('images.edits', { prompt: 'p', image: ['a'] }, model('drawer', { image_generate: {} }), undefined)), /cannot do images\.edits \(it has none of image_edit\)/);
  });

  it('drops the fields the adapter does not read or refuses', () => {
    const result = translated(generate({ prompt: 'p', seed: 3, style: 'x', _metadata: { a: 1 } }, image({}), { fields: ['prompt', 'style'], refused: ['style'] }));
    assert.deepEqual(result.input, { prompt: 'p', _metadata: { a: 1 } });
    assert.deepEqual(result.warnings, ['seed dropped: fallback model painter (provider acme) does not take it', 'style dropped: fallback model painter (provider acme) refuses it']);
  });
});

describe('video', () => {
  const text = [{ type: 'text', text: 'a lighthouse' }];
  const withImage = [...text, { type: 'image_url', image_url: { url: 'https://example.com/a.png' } }];
  const video = (content: unknown[], extra: Input = {}): Input => ({ content, aspect_ratio: 'adaptive', resolution: '720p', duration: 5, watermark: false, seed: -1, camerafixed: false, ...extra });
  const fit = (input: Input, target: LiveModel) => translateTaskInput('video.generations', input, target, undefined);

  it('needs a capability type the content calls for, and fits to that capability', () => {
    const i2vOnly = model('i2v', { image_to_video: { aspect_ratio_allowed: ['16:9', 'adaptive'] } });
    assert.match(skipped(fit(video(text), i2vOnly)), /cannot do video\.generations with this content \(it has none of video_generate, omni_video\)/);
    const both = model('both', { video_generate: { aspect_ratio_allowed: ['16:9'] }, image_to_video: { aspect_ratio_allowed: ['1:1'] } });
    assert.equal(translated(fit(video(withImage, { aspect_ratio: '4:3' }), both)).input.aspect_ratio, '1:1');
    assert.equal(translated(fit(video(text, { aspect_ratio: '4:3' }), both)).input.aspect_ratio, '16:9');
  });

  it('moves resolution to the nearest of output_resolutions, listed or per mode', () => {
    const result = translated(fit(video(text, { resolution: '480p' }), model('kling', { video_generate: { output_resolutions: { std: ['720p'], pro: ['1080p'] } } })));
    assert.equal(result.input.resolution, '720p');
    assert.deepEqual(result.warnings, ['resolution "480p" became "720p": fallback model kling takes 720p, 1080p']);
  });

  it('moves duration to the nearest of duration_options, else into duration_range (one range or one per mode)', () => {
    assert.equal(translated(fit(video(text, { duration: 7 }), model('a', { video_generate: { duration_options: [5, 10], duration_range: [2, 12] } }))).input.duration, 5);
    assert.equal(translated(fit(video(text, { duration: 20 }), model('b', { video_generate: { duration_range: [2, 12] } }))).input.duration, 12);
    const perMode = translated(fit(video(text, { duration: 20 }), model('c', { video_generate: { duration_range: { std: [5, 10], pro: [5, 15] } } })));
    assert.equal(perMode.input.duration, 15);
    assert.deepEqual(perMode.warnings, ['duration 20 became 15: fallback model c takes durations of 5 to 10 or 5 to 15 s']);
    const omni = model('omni', { omni_video: { duration_options: [5, 10], limits_with_video: { duration_options: [3] } } });
    const withVideo = [...text, { type: 'video_url', video_url: { url: 'https://example.com/v.mp4' } }];
    assert.equal(translated(fit(video(withVideo, { duration: 5 }), omni)).input.duration, 3, 'with a video, limits_with_video lists the lengths');
  });

  it('moves aspect_ratio to the nearest listed or into aspect_ratio_range, and leaves adaptive', () => {
    assert.equal(translated(fit(video(text, { aspect_ratio: '21:9' }), model('a', { video_generate: { aspect_ratio_allowed: ['16:9', '1:1'] } }))).input.aspect_ratio, '16:9');
    assert.equal(translated(fit(video(text, { aspect_ratio: '21:9' }), model('b', { video_generate: { aspect_ratio_range: [0.5, 2] } }))).input.aspect_ratio, '2:1');
    assert.equal(translated(fit(video(text), model('c', { video_generate: { aspect_ratio_allowed: ['16:9'] } }))).input.aspect_ratio, 'adaptive');
  });

  it('drops audio for a model without output_audio', () => {
    const result = translated(fit(video(text, { audio: true }), model('quiet', { video_generate: { output_audio: false } })));
    assert.equal(result.input.audio, undefined);
    assert.deepEqual(result.warnings, ['audio dropped: fallback model quiet makes no audio']);
  });

  it('skips a model that cannot take the content\'s media or prompt', () => {
    const image = (role?: string) => ({ type: 'image_url', image_url: { url: 'https://example.com/a.png' }, ...(role ? { role } : {}) });
    const i2v = (fields: Record<string, unknown>) => model('i2v', { image_to_video: fields });
    assert.match(skipped(fit(video([...text, image(), image()]), i2v({ max_images: 1 }))), /takes at most 1 image, not 2/);
    assert.match(skipped(fit(video([...text, image('first_frame'), image('last_frame')]), i2v({ input_first_last_frame: false }))), /no first and last frame together/);
    assert.match(skipped(fit(video([...text, image('last_frame')]), i2v({ input_last_frame: false }))), /no last frame alone/);
    assert.match(skipped(fit(video([...text, image(), { type: 'audio_url', audio_url: { url: 'https://example.com/a.mp3' } }]), i2v({ input_audio: false }))), /takes no audio input/);
    assert.match(skipped(fit(video([{ type: 'text', text: 'x'.repeat(501) }]), model('t2v', { video_generate: { prompt_length_limit: { max: 500 } } }))), /prompts of at most 500 characters, not 501/);
    const omni = model('omni', { omni_video: { max_videos: 0 } });
    assert.match(skipped(fit(video([...text, { type: 'video_url', video_url: { url: 'https://example.com/v.mp4' } }]), omni)), /at most 0 videos, not 1/);
  });
});

describe('song and speech', () => {
  it('drops makeInstrumental and customMode for a model without instrumentals or lyrics', () => {
    const result = translated(translateTaskInput('song.generations', { prompt: 'p', tags: 't', negativeTags: '', makeInstrumental: true, customMode: true }, model('songs', { audio_generate: { supports_instrumental: false, supports_lyrics: false } }), undefined));
    assert.deepEqual(result.warnings, ['makeInstrumental dropped: fallback model songs cannot make instrumentals', 'customMode dropped: fallback model songs takes no lyrics']);
  });

  it('fits voice, volume, emotion and format to the text_to_speech capability', () => {
    const voices = [{ id: 'v1', name: 'One' }, { id: 'v2', name: 'Two' }];
    const target = model('speaker', { text_to_speech: { voices, default_voice_id: 'v2', tts_params: { emotion: false, audio_formats: ['pcm', 'wav'], volume_range: { min: 0, max: 5, step: 1 } } } });
    const result = translated(translateTaskInput('speech.generations', { text: 'hi', voice_id: 'other', vol: 8, emotion: 'happy', format: 'mp3' }, target, undefined));
    assert.deepEqual(result.input, { text: 'hi', voice_id: 'v2', vol: 5, format: 'wav' });
    assert.equal(result.warnings.length, 4);
    const mp3Only = model('mp3', { text_to_speech: { tts_params: { audio_formats: ['pcm'] } } });
    assert.equal(translated(translateTaskInput('speech.generations', { text: 'hi', voice_id: 'x', format: 'flac' }, mp3Only, undefined)).input.format, undefined);
    const defaults = translated(translateTaskInput('speech.generations', { text: 'hi', voice_id: 'x', vol: 12 }, model('plain', { text_to_speech: {} }), undefined));
    assert.equal(defaults.input.vol, 10, 'without a declared range, volumes of 0 to 10');
    assert.equal(defaults.input.voice_id, 'x', 'a model listing no voices takes any voice id');
  });
});

describe('digital human', () => {
  it('needs the capability type alone', () => {
    const input = { image_url: 'https://example.com/a.png', audio_url: 'https://example.com/a.mp3' };
    assert.deepEqual(translated(translateTaskInput('digital-human.generations', input, model('human', { digital_human_generate: {} }), undefined)), { input, warnings: [] });
    assert.match(skipped(translateTaskInput('digital-human.generations', input, model('painter', { image_generate: {} }), undefined)), /none of digital_human_generate/);
  });
});

describe('3D', () => {
  it('drops generation fields the model does not take, sets unlisted options to its defaults, brings face_limit into its range', () => {
    const target = model('mesher', { text_to_model: { support_quad: false, output_formats: ['glb', 'obj'], default_output_format: 'obj', texture_quality_options: ['standard'], face_limit_range: { min: 3000, max: 1_500_000 } } });
    const result = translated(translateTaskInput('mesh3d.generate.text', { prompt: 'a chair', topology: 'quad', geometry_file_format: 'fbx', texture_quality: 'detailed', face_limit: 2_000_000 }, target, undefined));
    assert.deepEqual(result.input, { prompt: 'a chair', geometry_file_format: 'obj', texture_quality: 'standard', face_limit: 1_500_000 });
    assert.deepEqual(result.warnings, [
      'topology dropped: fallback model mesher does not take it',
      'texture_quality "detailed" became "standard": fallback model mesher takes standard',
      'geometry_file_format "fbx" became "obj": fallback model mesher takes glb, obj',
      'face_limit 2000000 became 1500000: fallback model mesher takes face limits of 3000 to 1500000 (triangle)',
    ]);
  });

  it('skips a multiview fallback whose views do not suit the request', () => {
    const views = ['front', 'left', 'back', 'right', 'top'].map((view_type) => ({ view_type, file: { url: 'https://example.com/v.png' } }));
    const target = model('four', { multiview_to_model: { multiview_input: { min_images: 2, max_images: 4, views: ['front', 'left', 'back', 'right', 'top'].map((type, order) => ({ type, order })) } } });
    assert.match(skipped(translateTaskInput('mesh3d.generate.multiview', { view_images: views }, target, undefined)), /cannot take these views \(this model takes 2 to 4 views, got 5\)/);
  });

  it('skips an edit fallback without the operation, its format or its texture prompt mode', () => {
    const source = { history_id: 'h', operation: 'generate', model: 'm' };
    const editor = model('editor', { mesh_edit: { supported_operations: { convert: { supported: true, supported_formats: ['GLTF'] }, texture: { supported: true, supported_texture_prompt_modes: ['text'] } } } });
    assert.match(skipped(translateTaskInput('mesh3d.edit.rig', { source }, editor, undefined)), /does not support the rig operation/);
    assert.match(skipped(translateTaskInput('mesh3d.edit.convert', { source, format: 'FBX' }, editor, undefined)), /cannot write FBX \(only GLTF\)/);
    assert.match(skipped(translateTaskInput('mesh3d.edit.texture', { source, texture: true, pbr: true, texture_prompt: { image: { url: 'https://example.com/t.png' } } }, editor, undefined)), /takes no texture_prompt\.image/);
    assert.ok(!('skip' in translateTaskInput('mesh3d.edit.convert', { source, format: 'GLTF' }, editor, undefined)));
  });
});

describe('chat', () => {
  it('holds the output tokens to max_output_tokens and drops tools for a model without tool calls', () => {
    const target = model('talker', { text_generate: { max_output_tokens: 1000, supportTool: false } });
    const result = translateChatParams({ max_tokens: 4000, tools: [] }, target);
    assert.ok(!('skip' in result));
    assert.deepEqual(result.input, { max_tokens: 1000 });
    assert.deepEqual(result.warnings, ['max_tokens 4000 became 1000: fallback model talker takes at most 1000 output tokens', 'tools dropped: fallback model talker cannot call tools']);
  });

  it('fits reasoning_effort to thinkingEffortLevels, and drops it for a model that does not reason', () => {
    const levels = model('thinker', { text_generate: { thinkingEffortLevels: ['low', 'high'] } });
    assert.deepEqual(translateChatParams({ reasoning_effort: 'minimal' }, levels), { input: { reasoning_effort: 'low' }, warnings: ['reasoning_effort "minimal" became "low": fallback model thinker takes low, high'] });
    assert.deepEqual(translateChatParams({ reasoning_effort: 'high' }, model('plain', { text_generate: { supportThinking: false } })), { input: {}, warnings: ['reasoning_effort dropped: fallback model plain does not reason'] });
  });
});
