import { TaskFailedError } from '../../spec.ts';
import { FfmpegError, probe } from '../ffmpeg.ts';

/** A video input as the local engine plays it back. */
export interface VideoInput {
  width: number;
  height: number;
  /** Frames per second (25 when the file does not say). */
  fps: number;
  durationSeconds: number;
  hasAudio: boolean;
}

const DEFAULT_FPS = 25;

async function probeOrFail(data: Buffer, param: string, what: string, signal: AbortSignal) {
  try {
    return await probe(data, { signal });
  } catch (err) {
    if (err instanceof FfmpegError) throw new TaskFailedError(`${param} is not ${what} (${err.message})`);
    throw err;
  }
}

/**
 * Reads a video's streams with ffmpeg; a file without a moving picture (not media, a still
 * image, an audio file) fails the task naming the request field `param`.
 */
export async function readVideoInput(data: Buffer, param: string, signal: AbortSignal): Promise<VideoInput> {
  const media = await probeOrFail(data, param, 'a video', signal);
  const video = media.video;
  if (!video || video.width <= 0 || video.height <= 0 || !media.durationSeconds || media.durationSeconds <= 0) {
    throw new TaskFailedError(`${param} is not a video (${media.format} without a moving picture)`);
  }
  return {
    width: video.width,
    height: video.height,
    fps: video.fps && video.fps > 0 ? video.fps : DEFAULT_FPS,
    durationSeconds: media.durationSeconds,
    hasAudio: media.audio !== undefined,
  };
}

/** The length of an audio file in seconds; anything without an audio stream fails the task naming `param`. */
export async function readAudioDuration(data: Buffer, param: string, signal: AbortSignal): Promise<number> {
  const media = await probeOrFail(data, param, 'audio', signal);
  if (!media.audio || !media.durationSeconds || media.durationSeconds <= 0) throw new TaskFailedError(`${param} is not audio (${media.format} without a sound track)`);
  return media.durationSeconds;
}
