import { SOURCE_VIDEO_ROLE, type DigitalHumanCreateExtra } from '../../../endpoints/digital-human-engines.ts';
import type { GenerationOutput, RunContext } from '../../spec.ts';
import type { LocalHandler } from '../local-handler.ts';
import { readVideoInput } from './media-input.ts';
import { MP4_MIME_TYPE } from './mp4-encoding.ts';

const EXTENSIONS: Record<string, string> = { 'video/webm': 'webm', 'video/quicktime': 'mov', 'video/x-matroska': 'mkv', 'video/x-msvideo': 'avi' };

/**
 * A digital human from a source video: the video is checked to be one (ffmpeg reads its
 * streams) and handed back as the source file, which the gateway keeps as the owner's asset.
 */
export const createDigitalHuman: LocalHandler<'digital-human.create'> = {
  async run(job, ctx: RunContext): Promise<GenerationOutput> {
    const source = await ctx.readInput(job.input.video_id);
    const video = await readVideoInput(source.data, 'video_id', ctx.signal);
    const mimeType = source.mimeType.startsWith('video/') ? source.mimeType : MP4_MIME_TYPE;
    const extra: DigitalHumanCreateExtra = {
      video: { width: video.width, height: video.height, fps: video.fps, duration_seconds: video.durationSeconds, has_audio: video.hasAudio },
    };
    return {
      files: [{
        type: 'video',
        data: source.data,
        fileName: `${job.taskId}-source.${EXTENSIONS[mimeType] ?? 'mp4'}`,
        mimeType,
        role: SOURCE_VIDEO_ROLE,
        mediaSize: { type: 'video', width: video.width, height: video.height, status: 1 },
        hasAudio: video.hasAudio,
      }],
      extra: { ...extra },
    };
  },
};
