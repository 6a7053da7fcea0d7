/**
 * Music (Suno-style) and speech synthesis (MiniMax-style), docs/api/audio.md: the rules that depend
 * on the chosen model's capabilities, then the task submitted through the generation pipeline.
 */
import type { LiveModel } from '../catalog/catalog.ts';
import { speechVoicesOf, speechVolumeRangeOf } from '../catalog/capabilities.ts';
import { ApiError } from '../core/errors.ts';
import type { GenerationCaller, GenerationOutcome, GenerationService } from '../tasks/generation-service.ts';
import { MUSIC_WEIGHTS, type SongInput, type SpeechInput } from '../endpoints/audio.ts';

type Mode = 'sync' | 'async';

/** Rules of a song request beyond its schema: two-decimal weights, instrumental only where the model can. */
function checkSong(input: SongInput, model: LiveModel): void {
  for (const name of MUSIC_WEIGHTS) {
    const value = input[name];
    if (value !== undefined && Math.abs(value * 100 - Math.round(value * 100)) > 1e-9) {
      throw new ApiError('invalid_parameter', `${name} has at most two decimals, got ${value}`, name);
    }
  }
  if (input.makeInstrumental && model.capabilities.audio_generate?.supports_instrumental === false) {
    throw new ApiError('unsupported_parameter', `model ${model.alias} cannot make instrumentals`, 'makeInstrumental');
  }
}

/** Rules of a speech request that depend on the model's text_to_speech capability. */
function checkSpeech(input: SpeechInput, model: LiveModel): void {
  if (!input.text.trim()) throw new ApiError('invalid_parameter', 'text must not be blank', 'text');
  const capability = model.capabilities.text_to_speech;
  const voices = speechVoicesOf(model);
  if (voices.length > 0 && !voices.some((v) => v.id === input.voice_id)) {
    throw new ApiError('invalid_parameter', `model ${model.alias} has no voice ${input.voice_id}`, 'voice_id');
  }
  const params = capability?.tts_params || undefined;
  const range = speechVolumeRangeOf(capability);
  if (input.vol !== undefined && (input.vol < range.min || input.vol > range.max)) {
    throw new ApiError('invalid_parameter', `vol must be from ${range.min} to ${range.max}`, 'vol');
  }
  if (input.emotion !== undefined && params?.emotion === false) {
    throw new ApiError('unsupported_parameter', `model ${model.alias} has no emotion control`, 'emotion');
  }
  if (input.format !== undefined && params?.audio_formats && !params.audio_formats.includes(input.format)) {
    throw new ApiError('invalid_parameter', `model ${model.alias} writes ${params.audio_formats.join(', ')}`, 'format');
  }
}

export class AudioService {
  private readonly generations: GenerationService;

  constructor(generations: GenerationService) {
    this.generations = generations;
  }

  /** POST /v1/song/generations; `model` undefined: the catalog's default. */
  song(caller: GenerationCaller, body: SongInput & { model?: string }, mode: Mode): Promise<GenerationOutcome> {
    const { model: alias, ...input } = body;
    const model = this.generations.resolveModel(alias, ['audio_generate']);
    checkSong(input, model);
    return this.generations.generate({ ...caller, endpoint: 'song.generations', model, input }, mode);
  }

  /** POST /v1/speech/generations; `model` undefined: the catalog's default, `voice_id` undefined: its first voice. */
  speech(caller: GenerationCaller, body: Omit<SpeechInput, 'voice_id'> & { model?: string; voice_id?: string }, mode: Mode): Promise<GenerationOutcome> {
    const { model: alias, voice_id: voice, ...rest } = body;
    if (rest.text_file_id !== undefined) this.generations.checkCallerUrl(rest.text_file_id, 'text_file_id');
    const model = this.generations.resolveModel(alias, ['text_to_speech']);
    const input: SpeechInput = { ...rest, voice_id: voice ?? model.capabilities.text_to_speech?.voices?.[0]?.id ?? 'default' };
    checkSpeech(input, model);
    return this.generations.generate({ ...caller, endpoint: 'speech.generations', model, input }, mode);
  }
}
