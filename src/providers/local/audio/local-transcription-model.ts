import type { ChatCallOptions, Transcription, TranscriptionModel, TranscriptionRequest } from '../../spec.ts';
import { ApiError } from '../../../core/errors.ts';
import { FfmpegError, probe } from '../ffmpeg.ts';

/** ffmpeg's channel layout words. */
const CHANNELS: Record<string, number> = { mono: 1, stereo: 2, '2.1': 3, quad: 4, '5.0': 5, '5.1': 6, '6.1': 7, '7.1': 8 };

function channelCount(layout: string | undefined): number | undefined {
  if (!layout) return undefined;
  const named = CHANNELS[layout.replace(/\(.*\)$/, '')];
  if (named) return named;
  const counted = /^(\d+) channels/.exec(layout);
  return counted ? Number(counted[1]) : undefined;
}

/** Scripts that name one language well enough to guess it from a prompt. */
const SCRIPT_LANGUAGES: [RegExp, string][] = [
  [/[\u3040-\u30ff]/u, 'ja'],
  [/[\uac00-\ud7af]/u, 'ko'],
  [/\p{Script=Han}/u, 'zh'],
  [/\p{Script=Cyrillic}/u, 'ru'],
  [/\p{Script=Arabic}/u, 'ar'],
  [/\p{Script=Greek}/u, 'el'],
  [/\p{Script=Hebrew}/u, 'he'],
  [/\p{Script=Thai}/u, 'th'],
  [/\p{Script=Devanagari}/u, 'hi'],
];

/** The language the caller named, else one the prompt's script points to; null when nothing tells. */
function languageOf(request: TranscriptionRequest): string | null {
  if (request.language) return request.language.toLowerCase();
  const prompt = request.prompt ?? '';
  for (const [script, language] of SCRIPT_LANGUAGES) if (script.test(prompt)) return language;
  return null;
}

/**
 * The built-in offline transcription. It recognises no words (there is no speech model offline):
 * the text is empty, and what it reports is what it can measure of the file: its duration and
 * channels, and the language the request points to.
 */
export class LocalTranscriptionModel implements TranscriptionModel {
  async transcribe(request: TranscriptionRequest, { signal }: ChatCallOptions): Promise<Transcription> {
    let media;
    try {
      media = await probe(request.file.data, { signal });
    } catch (err) {
      if (err instanceof FfmpegError) throw new ApiError('invalid_parameter', `file is not an audio file ffmpeg can read: ${err.message}`, 'file');
      throw err;
    }
    if (!media.audio) throw new ApiError('invalid_parameter', 'file has no audio stream', 'file');
    const duration = Math.round((media.durationSeconds ?? 0) * 1000) / 1000;
    const channels = channelCount(media.audio.channels);
    return {
      text: '',
      language: languageOf(request),
      duration,
      ...(channels ? { channels } : {}),
      segments: [],
      usage: { type: 'duration', seconds: Math.ceil(duration) },
    };
  }
}
