import { link, mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import type { DigitalHumanGenerationInput } from '../../../endpoints/digital-human.ts';
import { TaskFailedError, type GenerationOutput, type RunContext } from '../../spec.ts';
import { runFfmpeg, withWorkDir } from '../ffmpeg.ts';
import type { LocalHandler } from '../local-handler.ts';
import { readAudioDuration, readVideoInput } from './media-input.ts';
import { AAC_ARGS, H264_MP4_ARGS, even, mp4Output } from './mp4-encoding.ts';
import { frameOrder } from './frame-order.ts';

/** The request as POST /v1/digital-human/generations stores it, with the resource the gateway adds. */
type LipSyncRequest = DigitalHumanGenerationInput;

/** Longest side of the frames the local engine plays back; larger templates are scaled down. */
const MAX_SIDE = 1280;
/** Frame rate of a video made from a still picture. */
const PICTURE_FPS = 25;
/** Keeps the voice band: the local stand-in for separating vocals from background noise. */
const VOICE_BAND = 'highpass=f=120,lowpass=f=7000';

/** The picture or video the digital human is played from, decoded into numbered JPEG frames. */
interface TemplateFrames {
  /** Frames in `frames/000001.jpg`… */
  available: number;
  fps: number;
  /** Frames the whole template has (more than `available` when only the needed ones were decoded). */
  total: number;
  isPicture: boolean;
}

function frameName(index: number): string {
  return `${String(index + 1).padStart(6, '0')}.jpg`;
}

/** Scales to at most MAX_SIDE with even sides, in ffmpeg expressions (commas escaped for the filter graph). */
const SCALE_DOWN = `scale=w=trunc(iw*min(1\\,${MAX_SIDE}/max(iw\\,ih))/2)*2:h=trunc(ih*min(1\\,${MAX_SIDE}/max(iw\\,ih))/2)*2,setsar=1`;

/**
 * Decodes the template into frames: the given video, else the given picture, else the
 * resource's source video. `neededSeconds` bounds how much of a video is decoded.
 */
async function decodeTemplate(request: LipSyncRequest, ctx: RunContext, dir: string, neededSeconds: number): Promise<TemplateFrames> {
  await mkdir(join(dir, 'frames'));
  if (request.image_url !== undefined && request.video_url === undefined) {
    const picture = (await ctx.readInput(request.image_url)).data;
    let image: Buffer;
    try {
      const { autoOrient } = await sharp(picture).metadata();
      const scale = Math.min(1, MAX_SIDE / Math.max(autoOrient.width, autoOrient.height));
      image = await sharp(picture).rotate().resize(even(autoOrient.width * scale), even(autoOrient.height * scale), { fit: 'fill' })
        .flatten({ background: '#000000' }).jpeg({ quality: 95 }).toBuffer();
    } catch (err) {
      throw new TaskFailedError(`image_url is not an image (${(err as Error).message})`);
    }
    await writeFile(join(dir, 'frames', frameName(0)), image);
    return { available: 1, total: 1, fps: PICTURE_FPS, isPicture: true };
  }
  const [ref, param] = request.video_url !== undefined ? [request.video_url, 'video_url'] : [request.resource.source, 'resource_id'];
  if (ref === null) throw new TaskFailedError(`digital-human resource ${request.resource.id} has no source video kept by this gateway`);
  const data = (await ctx.readInput(ref)).data;
  const video = await readVideoInput(data, param, ctx.signal);
  const fps = Math.min(video.fps, 60);
  await writeFile(join(dir, 'template'), data);
  const total = Math.max(1, Math.floor(video.durationSeconds * fps));
  await runFfmpeg(['-y', '-i', 'template', '-vf', `fps=${fps},${SCALE_DOWN}`, '-frames:v', String(Math.min(total, Math.ceil(neededSeconds * fps))), '-q:v', '2', join('frames', '%06d.jpg')], { dir, signal: ctx.signal });
  const available = (await readdir(join(dir, 'frames'))).length;
  if (available === 0) throw new TaskFailedError(`${param} has no decodable frames`);
  return { available, total: Math.max(total, available), fps, isPicture: false };
}

/**
 * A lip-synced digital-human video: frames of the template from templ_start_seconds, looped
 * (or ping-pong) to the audio's length when align_audio is on, otherwise cut to the shorter of
 * the two, with the given audio as its AAC sound track.
 */
export const lipSyncVideo: LocalHandler<'digital-human.generations'> = {
  async run(job, ctx: RunContext): Promise<GenerationOutput> {
    const request = job.input;
    const audio = (await ctx.readInput(request.audio_url)).data;
    const audioSeconds = await readAudioDuration(audio, 'audio_url', ctx.signal);
    const startSeconds = request.templ_start_seconds ?? 0;
    const align = request.align_audio === true;

    return withWorkDir(async (dir) => {
      // Decoding stops at the last frame the output can show (start plus the audio's length).
      const template = await decodeTemplate(request, ctx, dir, startSeconds + audioSeconds + 1);
      const start = Math.min(Math.round(startSeconds * template.fps) % template.total, template.available - 1);
      const audioFrames = Math.max(1, Math.round(audioSeconds * template.fps));
      const count = align || template.isPicture ? audioFrames : Math.max(1, Math.min(audioFrames, template.available - start));
      const order = frameOrder({ available: template.available, start, count, pingPong: align && request.align_audio_reverse === true });

      // Hard links make the play order a numbered sequence without copying a frame.
      await mkdir(join(dir, 'sequence'));
      for (const [i, source] of order.entries()) await link(join(dir, 'frames', frameName(source)), join(dir, 'sequence', frameName(i)));
      await writeFile(join(dir, 'audio'), audio);
      const seconds = count / template.fps;
      const args = ['-y', '-framerate', String(template.fps), '-i', join('sequence', '%06d.jpg'), '-i', 'audio', '-map', '0:v', '-map', '1:a',
        ...(request.separate_vocal ? ['-af', VOICE_BAND] : []), ...H264_MP4_ARGS, ...AAC_ARGS, '-t', seconds.toFixed(3), 'out.mp4'];
      const data = await runFfmpeg(args, { dir, outputFile: 'out.mp4', signal: ctx.signal });
      const size = await sharp(join(dir, 'frames', frameName(0))).metadata();
      return mp4Output(job.taskId, data, size, true);
    });
  },
};
