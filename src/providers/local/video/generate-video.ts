import { createHash } from 'node:crypto';
import sharp from 'sharp';
import { TaskFailedError, TaskRejectedError, type GenerationJob, type GenerationOutput, type InputFile, type RunContext } from '../../spec.ts';
import { runFfmpeg } from '../ffmpeg.ts';
import type { LocalHandler } from '../local-handler.ts';
import { readVideoInput } from './media-input.ts';
import { AAC_ARGS, H264_MP4_ARGS, MP4_MIME_TYPE, even } from './mp4-encoding.ts';
import { videoFrameSize } from './video-frame-size.ts';

/** The request as POST /v1/video/generations stores it (defaults filled in by the route). */
interface VideoRequest {
  content: ContentItem[];
  aspect_ratio?: string;
  resolution?: string;
  duration?: number;
  audio?: boolean;
  framespersecond?: number;
  watermark?: boolean;
  seed?: number;
  camerafixed?: boolean;
  camera_control?: string;
  negative_prompt?: string;
  cfg_scale?: number;
}

interface ContentItem {
  type: string;
  text?: string;
  image_url?: { url: string };
  audio_url?: { url: string };
  video_url?: { url: string; refer_type?: string; keep_original_sound?: string };
  element?: { system_element_id?: string; inline_element?: { frontal_image_url: string } };
  role?: string;
}

const DEFAULT_FPS = 24;
/** The background is drawn this much larger than the frame so the camera can pan across it. */
const PAN_MARGIN = 1.25;
/**
 * Pixels (width x height x frames) one local video may have: 1080p for a minute at 24 fps,
 * 4K for ten seconds. Beyond that an offline render takes minutes.
 */
const MAX_RENDERED_PIXELS = 3.2e9;
const AUDIO_RATE = 44_100;

/** The media the content items point at, read and checked. */
interface VideoInputs {
  first?: InputFile;
  last?: InputFile;
  /** Reference pictures: they tint the drawn scene. */
  references: InputFile[];
  /** A video to edit: it replaces the drawn background. */
  base?: { data: Buffer; keepSound: boolean; hasAudio: boolean };
  /** A sound track to use when audio is asked for. */
  sound?: Buffer;
}

type Rgb = [number, number, number];

function settingsOf(input: Record<string, unknown>) {
  const request = input as unknown as VideoRequest;
  const fps = request.framespersecond ?? DEFAULT_FPS;
  const duration = request.duration ?? 5;
  return {
    request,
    fps,
    duration,
    frames: Math.max(1, Math.round(duration * fps)),
    resolution: request.resolution ?? '720p',
    aspectRatio: request.aspect_ratio ?? 'adaptive',
  };
}

async function readPicture(ctx: RunContext, ref: string, param: string): Promise<InputFile & { width: number; height: number }> {
  const file = await ctx.readInput(ref);
  try {
    const meta = await sharp(file.data).metadata();
    return { ...file, width: meta.autoOrient.width, height: meta.autoOrient.height };
  } catch (err) {
    throw new TaskFailedError(`${param} is not an image (${(err as Error).message})`);
  }
}

/**
 * Reads every picture, video and sound the content points at. As in Seedance, a lone image
 * without a role is the first frame; further role-less images are references.
 */
async function readInputs(content: ContentItem[], ctx: RunContext): Promise<VideoInputs & { firstSize?: { width: number; height: number } }> {
  const inputs: VideoInputs & { firstSize?: { width: number; height: number } } = { references: [] };
  const explicitFirst = content.some((c) => c.role === 'first_frame');
  for (const [i, item] of content.entries()) {
    const at = `content[${i}]`;
    if (item.image_url) {
      const picture = await readPicture(ctx, item.image_url.url, `${at}.image_url`);
      const isFirst = item.role === 'first_frame' || (item.role === undefined && !explicitFirst && !inputs.first);
      if (isFirst) {
        inputs.first = picture;
        inputs.firstSize = { width: picture.width, height: picture.height };
      } else if (item.role === 'last_frame') inputs.last = picture;
      else inputs.references.push(picture);
    } else if (item.element?.inline_element) {
      inputs.references.push(await readPicture(ctx, item.element.inline_element.frontal_image_url, `${at}.element.inline_element.frontal_image_url`));
    } else if (item.video_url && !inputs.base && (item.role === 'video_base' || item.video_url.refer_type === 'base')) {
      const data = (await ctx.readInput(item.video_url.url)).data;
      const video = await readVideoInput(data, `${at}.video_url`, ctx.signal);
      inputs.base = { data, keepSound: item.video_url.keep_original_sound === 'yes', hasAudio: video.hasAudio };
    } else if (item.audio_url && !inputs.sound) {
      inputs.sound = (await ctx.readInput(item.audio_url.url)).data;
    }
  }
  return inputs;
}

function hslToRgb(hue: number, saturation: number, lightness: number): Rgb {
  const a = saturation * Math.min(lightness, 1 - lightness);
  const channel = (n: number) => {
    const k = (n + hue / 30) % 12;
    return Math.round(255 * (lightness - a * Math.max(-1, Math.min(k - 3, 9 - k, 1))));
  };
  return [channel(0), channel(8), channel(4)];
}

function mix(a: Rgb, b: Rgb, weight: number): Rgb {
  return [0, 1, 2].map((i) => Math.round(a[i]! * (1 - weight) + b[i]! * weight)) as Rgb;
}

function hex(rgb: Rgb): string {
  return `0x${rgb.map((v) => v.toString(16).padStart(2, '0')).join('')}`;
}

/** The drawn scene's colours and motion, from the prompt and seed: the same request draws the same video. */
function sceneOf(job: GenerationJob, request: VideoRequest) {
  const prompt = request.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
  const digest = createHash('sha256')
    .update(JSON.stringify([job.model.alias, prompt, request.negative_prompt ?? '', request.seed ?? -1, request.cfg_scale ?? null, request.camera_control ?? '']))
    .digest();
  const baseHue = (digest[0]! / 255) * 360;
  const grid: Rgb[] = [];
  for (let i = 0; i < 9; i++) {
    grid.push(hslToRgb((baseHue + (digest[1 + i]! / 255) * 120) % 360, 0.55 + (digest[10 + i]! / 255) * 0.3, 0.35 + (digest[19 + (i % 9)]! / 255) * 0.3));
  }
  return {
    grid,
    shape: hslToRgb((baseHue + 180) % 360, 0.8, 0.6),
    /** Root of the chord of the generated sound bed. */
    toneHz: 196 + digest[28]!,
    phase: (digest[29]! / 255) * 2 * Math.PI,
  };
}

/** The mean colour of each reference picture, so references tint the scene. */
async function referenceTint(references: InputFile[]): Promise<Rgb | undefined> {
  if (references.length === 0) return undefined;
  const colours: Rgb[] = [];
  for (const picture of references) {
    const { channels } = await sharp(picture.data).removeAlpha().stats();
    colours.push([channels[0]!.mean, channels[1]!.mean, channels[2]!.mean].map(Math.round) as Rgb);
  }
  return colours.reduce((sum, c) => [sum[0] + c[0] / colours.length, sum[1] + c[1] / colours.length, sum[2] + c[2] / colours.length], [0, 0, 0]).map(Math.round) as Rgb;
}

/** A smooth gradient through a 3x3 grid of colours, drawn larger than the frame for panning. */
async function gradientPng(grid: Rgb[], width: number, height: number): Promise<Buffer> {
  return sharp(Buffer.from(grid.flat()), { raw: { width: 3, height: 3, channels: 3 } })
    .resize(width, height, { kernel: 'cubic', fit: 'fill' })
    .png({ compressionLevel: 1 })
    .toBuffer();
}

/** A picture cut to exactly the frame size (covering it, centred), without transparency. */
function framePng(picture: InputFile, width: number, height: number): Promise<Buffer> {
  return sharp(picture.data).rotate().resize(width, height, { fit: 'cover' }).flatten({ background: '#000000' }).png({ compressionLevel: 1 }).toBuffer();
}

/** Crop-window expressions of the camera: fixed in the middle, a pan in the named direction, or a slow orbit. */
function cameraPath(request: VideoRequest, duration: number): { x: string; y: string } {
  const centre = { x: '(iw-ow)/2', y: '(ih-oh)/2' };
  if (request.camerafixed) return centre;
  const control = (request.camera_control ?? '').toLowerCase();
  const progress = `t/${duration}`;
  if (control.includes('left')) return { ...centre, x: `(iw-ow)*(1-${progress})` };
  if (control.includes('right')) return { ...centre, x: `(iw-ow)*${progress}` };
  if (control.includes('up')) return { ...centre, y: `(ih-oh)*(1-${progress})` };
  if (control.includes('down')) return { ...centre, y: `(ih-oh)*${progress}` };
  const period = Math.max(duration, 2);
  return { x: `(iw-ow)*(0.5+0.5*sin(2*PI*t/${period}))`, y: `(ih-oh)*(0.5+0.5*sin(4*PI*t/${period}))` };
}

/** Builds ffmpeg's inputs and filter graph for the video. */
class FilterGraph {
  readonly args: string[] = [];
  readonly files: Record<string, Buffer> = {};
  readonly chains: string[] = [];
  private count = 0;

  /** Adds an input file; answers its input index. */
  input(name: string, data: Buffer, before: string[] = []): number {
    this.files[name] = data;
    this.args.push(...before, '-i', name);
    return this.count++;
  }

  chain(text: string): void {
    this.chains.push(text);
  }
}

/**
 * A video drawn from the request: a gradient scene in the prompt's colours (tinted by
 * reference pictures, or the video to edit) under a moving camera, with a shape crossing it;
 * it starts on the first-frame picture and ends on the last-frame picture, blending between.
 * With `audio`, an AAC track: the given sound, the edited video's own sound, or a generated chord.
 */
export const generateVideo: LocalHandler = {
  check(job: GenerationJob): void {
    const { frames, resolution, aspectRatio } = settingsOf(job.input);
    const { width, height } = videoFrameSize(resolution, aspectRatio);
    if (width * height * frames > MAX_RENDERED_PIXELS) {
      throw new TaskRejectedError(`the local engine renders at most ${MAX_RENDERED_PIXELS / 1e9} billion pixels per video (${resolution} for ${job.input.duration} s is more); ask for a lower resolution, frame rate or duration`);
    }
  },

  async run(job: GenerationJob, ctx: RunContext): Promise<GenerationOutput> {
    const { request, fps, duration, frames, resolution, aspectRatio } = settingsOf(job.input);
    const inputs = await readInputs(request.content, ctx);
    const { width, height } = videoFrameSize(resolution, aspectRatio, inputs.firstSize);
    const scene = sceneOf(job, request);
    const tint = await referenceTint(inputs.references);
    const grid = tint ? scene.grid.map((c) => mix(c, tint, 0.5)) : scene.grid;
    const withAudio = request.audio === true;
    // Each still picture becomes `frames` frames timed at the output rate.
    const still = `loop=loop=${frames - 1}:size=1:start=0,setpts=N/${fps}/TB`;
    const timing = `fps=${fps},trim=end_frame=${frames},setpts=N/${fps}/TB`;

    const graph = new FilterGraph();
    const panWidth = even(width * PAN_MARGIN);
    const panHeight = even(height * PAN_MARGIN);
    let baseIndex: number | undefined;
    if (inputs.base) {
      const base = (baseIndex = graph.input('base', inputs.base.data, ['-stream_loop', '-1']));
      graph.chain(`[${base}:v]scale=${panWidth}:${panHeight}:force_original_aspect_ratio=increase,crop=${panWidth}:${panHeight},setsar=1,${timing}[backdrop]`);
    } else {
      const gradient = graph.input('gradient.png', await gradientPng(grid, panWidth, panHeight));
      graph.chain(`[${gradient}:v]${still}[backdrop]`);
    }
    const camera = cameraPath(request, duration);
    const period = Math.max(duration, 2);
    const shapeSide = even(Math.min(width, height) / 4);
    graph.chain(`[backdrop]crop=${width}:${height}:${camera.x}:${camera.y},hue=h=90*t/${period}[scene0]`);
    graph.chain(`color=c=${hex(scene.shape)}:s=${shapeSide}x${shapeSide}:r=${fps}:d=${duration}[shape]`);
    graph.chain(`[scene0][shape]overlay=x=(W-w)*(0.5+0.45*sin(2*PI*t/${period}+${scene.phase.toFixed(3)})):y=(H-h)*(0.5+0.4*cos(2*PI*t/${period})):shortest=1[scene1]`);
    let scene1 = 'scene1';

    // Start on the first picture and end on the last one; with both, the drawn scene shows between them.
    const lastFrameTime = (frames - 1) / fps;
    if (inputs.first) {
      const fadeEnd = lastFrameTime * (inputs.last ? 0.45 : 0.6);
      const first = graph.input('first.png', await framePng(inputs.first, width, height));
      graph.chain(`[${first}:v]${still},format=rgba,fade=t=out:st=0:d=${fadeEnd.toFixed(4)}:alpha=1[firstpic]`);
      graph.chain(`[${scene1}][firstpic]overlay=shortest=1[withfirst]`);
      scene1 = 'withfirst';
    }
    if (inputs.last) {
      const fadeStart = lastFrameTime * (inputs.first ? 0.55 : 0.4);
      const last = graph.input('last.png', await framePng(inputs.last, width, height));
      graph.chain(`[${last}:v]${still},format=rgba,fade=t=in:st=${fadeStart.toFixed(4)}:d=${(lastFrameTime - fadeStart).toFixed(4)}:alpha=1[lastpic]`);
      graph.chain(`[${scene1}][lastpic]overlay=shortest=1[withlast]`);
      scene1 = 'withlast';
    }
    const watermark = request.watermark ? ',drawbox=x=iw-iw/5-iw/40:y=ih-ih/12-ih/40:w=iw/5:h=ih/12:color=white@0.6:t=fill' : '';
    graph.chain(`[${scene1}]setsar=1${watermark},format=yuv420p[video]`);

    const maps = ['-map', '[video]'];
    if (withAudio) {
      const trimSound = `aresample=${AUDIO_RATE},atrim=duration=${duration},asetpts=PTS-STARTPTS`;
      if (inputs.sound) {
        const sound = graph.input('sound', inputs.sound, ['-stream_loop', '-1']);
        graph.chain(`[${sound}:a]${trimSound}[audio]`);
      } else if (baseIndex !== undefined && inputs.base?.keepSound && inputs.base.hasAudio) {
        graph.chain(`[${baseIndex}:a]${trimSound}[audio]`);
      } else {
        const f = scene.toneHz;
        const chord = `0.12*sin(2*PI*${f}*t)+0.08*sin(2*PI*${f * 1.25}*t)+0.06*sin(2*PI*${f * 1.5}*t)*(0.5+0.5*sin(2*PI*t/${period}))+0.02*(2*random(0)-1)`;
        graph.chain(`aevalsrc=exprs=${chord}:s=${AUDIO_RATE}:d=${duration},afade=t=in:d=0.1,afade=t=out:st=${Math.max(0, duration - 0.2)}:d=0.2[audio]`);
      }
      maps.push('-map', '[audio]', ...AAC_ARGS);
    }

    const args = ['-y', ...graph.args, '-filter_complex', graph.chains.join(';'), ...maps, '-r', String(fps), ...H264_MP4_ARGS, '-t', String(duration), 'out.mp4'];
    const data = await runFfmpeg(args, { files: graph.files, outputFile: 'out.mp4', signal: ctx.signal });
    return {
      files: [{
        type: 'video',
        data,
        fileName: `${job.taskId}.mp4`,
        mimeType: MP4_MIME_TYPE,
        mediaSize: { type: 'video', width, height, status: 1 },
        hasAudio: withAudio,
      }],
    };
  },
};
