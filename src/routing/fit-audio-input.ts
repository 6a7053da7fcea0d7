/**
 * Song and speech requests fitted to a fallback model: what its audio_generate capability cannot
 * do is dropped; a voice, volume, emotion or format its text_to_speech capability does not
 * take becomes its own or is dropped.
 */
import { speechVoicesOf, speechVolumeRangeOf } from '../catalog/capabilities.ts';
import { SPEECH_FORMATS } from '../endpoints/audio.ts';
import { listOf, type InputFitter } from './input-changes.ts';
import { clamp } from './nearest-values.ts';

export const fitSongInput: InputFitter = (changes, { target }) => {
  const capability = target.capabilities.audio_generate;
  const { input } = changes;
  if (input.makeInstrumental === true && capability?.supports_instrumental === false) changes.drop('makeInstrumental', 'cannot make instrumentals');
  if (input.customMode === true && capability?.supports_lyrics === false) changes.drop('customMode', 'takes no lyrics');
  return undefined;
};

export const fitSpeechInput: InputFitter = (changes, { target }) => {
  const capability = target.capabilities.text_to_speech;
  const params = capability?.tts_params || undefined;
  const { input } = changes;
  const voices = speechVoicesOf(target).map((v) => v.id);
  if (typeof input.voice_id === 'string' && voices.length > 0 && !voices.includes(input.voice_id)) {
    const own = capability?.default_voice_id !== undefined && voices.includes(capability.default_voice_id) ? capability.default_voice_id : voices[0]!;
    changes.set('voice_id', own, `only its own voices (${own} is its default)`);
  }
  const range = speechVolumeRangeOf(capability);
  if (typeof input.vol === 'number' && clamp(input.vol, [range.min, range.max]) !== input.vol) {
    changes.set('vol', clamp(input.vol, [range.min, range.max]), `volumes of ${range.min} to ${range.max}`);
  }
  if (input.emotion !== undefined && params?.emotion === false) changes.drop('emotion', 'has no emotion control');
  const formats = params?.audio_formats;
  if (typeof input.format === 'string' && formats && !formats.includes(input.format)) {
    const written = formats.find((f) => (SPEECH_FORMATS as readonly string[]).includes(f));
    if (written) changes.set('format', written, listOf(formats));
    else changes.drop('format', `writes only ${listOf(formats)}`);
  }
  return undefined;
};
