import { createHash } from 'node:crypto';
import sharp from 'sharp';
import type { VideoContentItem, VideoGenerationInput } from '../../../endpoints/video.ts';
import { TaskFailedError, TaskRejectedError, type GenerationOutput, type InputFile, type JobContext, type RunContext } from '../../spec.ts';
import { runFfmpeg } from '../ffmpeg.ts';
import type { LocalHandler } from '../local-handler.ts';
import { readAudioDuration, readVideoInput } from './media-input.ts';
import { AAC_ARGS, H264_MP4_ARGS, even, mp4Output } from './mp4-encoding.ts';
import { videoFrameSize } from './video-frame-size.ts';
import { draftSize } from '../image/image-size.ts';

/** The request as POST /v1/video/generations stores it (defaults filled in by the service). */
type VideoRequest = VideoGenerationInput;
type ContentItem = VideoContentItem;

const DEFAULT_FPS = 24;
/** The background is drawn this much larger than the frame so the camera can pan across it. */
const PAN_MARGIN = 1.25;
/**
 * Pixels (width x height x frames) one local video may have: 1080p for a minute at 24 fps,
 * 4K for ten seconds. Beyond that an offline render takes minutes.
 */
const MAX_RENDERED_PIXELS = 3.2e9;
const AUDIO_RATE = 44_100;

/** A picture of the request with its upright size. */
type Picture = InputFile & { width: number; height: number };

/** The media the content items point at, read and checked. */
interface VideoInputs {
  first?: Picture;
  last?: Picture;
  /** Reference pictures: they tint the drawn scene. */
  references: Picture[];
  /** A video to edit: it replaces the drawn background. */
  base?: { data: Buffer; keepSound: boolean; hasAudio: boolean };
  /** A sound track to use when audio is asked for. */
  sound?: Buffer;
}

type Rgb = [number, number, number];

function settingsOf(request: VideoRequest) {
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

async function readPicture(ctx: RunContext, ref: string, param: string): Promise<Picture> {
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
async function readInputs(content: ContentItem[], ctx: RunContext): Promise<VideoInputs> {
  const inputs: VideoInputs = { references: [] };
  const explicitFirst = content.some((c) => c.role === 'first_frame');
  for (const [i, item] of content.entries()) {
    const at = `content[${i}]`;
    if (item.image_url) {
      const picture = await readPicture(ctx, item.image_url.url, `${at}.image_url`);
      const isFirst = item.role === 'first_frame' || (item.role === undefined && !explicitFirst && !inputs.first);
      if (isFirst) inputs.first = picture;
      else if (item.role === 'last_frame') inputs.last = picture;
      else inputs.references.push(picture);
    } else if (item.element?.inline_element) {
      inputs.references.push(await readPicture(ctx, item.element.inline_element.frontal_image_url, `${at}.element.inline_element.frontal_image_url`));
    } else if (item.video_url && !inputs.base && (item.role === 'video_base' || item.video_url.refer_type === 'base')) {
      const data = (await ctx.readInput(item.video_url.url)).data;
      const video = await readVideoInput(data, `${at}.video_url`, ctx.signal);
      inputs.base = { data, keepSound: item.video_url.keep_original_sound === 'yes', hasAudio: video.hasAudio };
    } else if (item.audio_url && !inputs.sound) {
      const data = (await ctx.readInput(item.audio_url.url)).data;
      await readAudioDuration(data, `${at}.audio_url`, ctx.signal);
      inputs.sound = data;
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
function sceneOf(job: JobContext, request: VideoRequest) {
  const prompt = request.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
  const digest = createHash('sha256')
    .update(JSON.stringify([job.model.alias, prompt, request.negative_prompt ?? '', request.seed ?? -1, request.cfg_scale ?? null, request.camera_control ?? '']))
    .digest();
  const baseHue = (digest[0]! / 255) * 360;
  const grid: Rgb[] = [];
  for (let i = 0; i < 9; i++) {
    grid.push(hslToRgb((baseHue + (digest[1 + i]! / 255) * 120) % 360, 0.55 + (digest[10 + i]! / 255) * 0.3, 0.35 + (digest[19 + i]! / 255) * 0.3));
  }
  return {
    grid,
    shape: hslToRgb((baseHue + 180) % 360, 0.8, 0.6),
    /** Root of the chord of the generated sound bed. */
    toneHz: 196 + digest[28]!,
    phase: (digest[29]! / 255) * 2 * Math.PI,
  };
}

/** The mean colour of the reference pictures, so references tint the scene. */
async function referenceTint(references: InputFile[]): Promise<Rgb | undefined> {
  if (references.length === 0) return undefined;
  const sum: Rgb = [0, 0, 0];
  for (const picture of references) {
    // Shrinking to one pixel averages the picture; flattening makes grey or transparent pictures RGB.
    const pixel = await sharp(picture.data).flatten({ background: '#000000' }).toColourspace('srgb').resize(1, 1, { fit: 'fill' }).raw().toBuffer();
    for (const c of [0, 1, 2]) sum[c] += pixel[c]! / references.length;
  }
  return sum.map(Math.round) as Rgb;
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

/** The output's timing and size, shared by every part of the filter graph. */
interface Frame {
  width: number;
  height: number;
  fps: number;
  frames: number;
  duration: number;
  /** Seconds of one cycle of the scene's motion. */
  period: number;
}

/** Filters that turn one still picture into the video's frames at the output rate. */
function stillFrames(frame: Frame): string {
  return `loop=loop=${frame.frames - 1}:size=1:start=0,setpts=N/${frame.fps}/TB`;
}

/**
 * The drawn scene, `[scene]`: the video to edit (looped to length) or the gradient, seen
 * through the moving camera with its hue drifting, and a shape crossing it. Answers the input
 * index of the video to edit, if any.
 */
async function addScene(graph: FilterGraph, frame: Frame, inputs: VideoInputs, request: VideoRequest, scene: ReturnType<typeof sceneOf>, grid: Rgb[]): Promise<number | undefined> {
  const panWidth = even(frame.width * PAN_MARGIN);
  const panHeight = even(frame.height * PAN_MARGIN);
  let baseIndex: number | undefined;
  if (inputs.base) {
    baseIndex = graph.input('base', inputs.base.data, ['-stream_loop', '-1']);
    graph.chain(`[${baseIndex}:v]scale=${panWidth}:${panHeight}:force_original_aspect_ratio=increase,crop=${panWidth}:${panHeight},setsar=1,fps=${frame.fps},trim=end_frame=${frame.frames},setpts=N/${frame.fps}/TB[backdrop]`);
  } else {
    const gradient = graph.input('gradient.png', await gradientPng(grid, panWidth, panHeight));
    graph.chain(`[${gradient}:v]${stillFrames(frame)}[backdrop]`);
  }
  const camera = cameraPath(request, frame.duration);
  const shapeSide = even(Math.min(frame.width, frame.height) / 4);
  graph.chain(`[backdrop]crop=${frame.width}:${frame.height}:${camera.x}:${camera.y},hue=h=90*t/${frame.period}[backdrop1]`);
  graph.chain(`color=c=${hex(scene.shape)}:s=${shapeSide}x${shapeSide}:r=${frame.fps}:d=${frame.duration}[shape]`);
  graph.chain(`[backdrop1][shape]overlay=x=(W-w)*(0.5+0.45*sin(2*PI*t/${frame.period}+${scene.phase.toFixed(3)})):y=(H-h)*(0.5+0.4*cos(2*PI*t/${frame.period})):shortest=1[scene]`);
  return baseIndex;
}

/**
 * Starts on the first picture and ends on the last one, each fading (by its transparency) into
 * the scene; with both, the scene shows between them. Answers the label of the result.
 */
async function addKeyFrames(graph: FilterGraph, frame: Frame, inputs: VideoInputs): Promise<string> {
  let label = 'scene';
  // The fades end on the last frame's time, so that frame shows the last picture exactly.
  const lastFrameTime = (frame.frames - 1) / frame.fps;
  const seconds = (n: number) => Math.max(n, 0.001).toFixed(4);
  if (inputs.first) {
    const first = graph.input('first.png', await framePng(inputs.first, frame.width, frame.height));
    graph.chain(`[${first}:v]${stillFrames(frame)},format=rgba,fade=t=out:st=0:d=${seconds(lastFrameTime * (inputs.last ? 0.45 : 0.6))}:alpha=1[firstpicture]`);
    graph.chain(`[${label}][firstpicture]overlay=shortest=1[withfirst]`);
    label = 'withfirst';
  }
  if (inputs.last) {
    const fadeStart = lastFrameTime * (inputs.first ? 0.55 : 0.4);
    const last = graph.input('last.png', await framePng(inputs.last, frame.width, frame.height));
    graph.chain(`[${last}:v]${stillFrames(frame)},format=rgba,fade=t=in:st=${fadeStart.toFixed(4)}:d=${seconds(lastFrameTime - fadeStart)}:alpha=1[lastpicture]`);
    graph.chain(`[${label}][lastpicture]overlay=shortest=1[withlast]`);
    label = 'withlast';
  }
  return label;
}

/** `[audio]`: the given sound, the edited video's own sound when kept, or a chord in the prompt's key over a little noise. */
function addSoundTrack(graph: FilterGraph, frame: Frame, inputs: VideoInputs, baseIndex: number | undefined, toneHz: number): void {
  const fitted = `aresample=${AUDIO_RATE},atrim=duration=${frame.duration},asetpts=PTS-STARTPTS[audio]`;
  if (inputs.sound) {
    const sound = graph.input('sound', inputs.sound, ['-stream_loop', '-1']);
    graph.chain(`[${sound}:a]${fitted}`);
  } else if (baseIndex !== undefined && inputs.base?.keepSound && inputs.base.hasAudio) {
    graph.chain(`[${baseIndex}:a]${fitted}`);
  } else {
    const f = toneHz;
    const chord = `0.12*sin(2*PI*${f}*t)+0.08*sin(2*PI*${f * 1.25}*t)+0.06*sin(2*PI*${f * 1.5}*t)*(0.5+0.5*sin(2*PI*t/${frame.period}))+0.02*(2*random(0)-1)`;
    graph.chain(`aevalsrc=exprs=${chord}:s=${AUDIO_RATE}:d=${frame.duration},afade=t=in:d=0.1,afade=t=out:st=${Math.max(0, frame.duration - 0.2)}:d=0.2[audio]`);
  }
}

/**
 * A video drawn from the request: a gradient scene in the prompt's colours (tinted by
 * reference pictures, or the video to edit) under a moving camera, with a shape crossing it;
 * it starts on the first-frame picture and ends on the last-frame picture, blending between.
 * With `audio`, an AAC track: the given sound, the edited video's own sound, or a generated chord.
 */
export const generateVideo: LocalHandler<'video.generations'> = {
  check(job): void {
    const { frames, resolution, aspectRatio, duration } = settingsOf(job.input);
    const { width, height } = videoFrameSize(resolution, aspectRatio);
    if (width * height * frames > MAX_RENDERED_PIXELS) {
      throw new TaskRejectedError(`the local engine renders at most ${MAX_RENDERED_PIXELS / 1e9} billion pixels per video (${resolution} for ${duration} s is more); ask for a lower resolution, frame rate or duration`);
    }
  },

  /** The scene's gradient, without the camera's motion, the shape or the key frames. */
  async draft(job): Promise<Buffer> {
    const { request, resolution, aspectRatio } = settingsOf(job.input);
    const { width, height } = draftSize(videoFrameSize(resolution, aspectRatio));
    return gradientPng(sceneOf(job, request).grid, width, height);
  },

  async run(job, ctx: RunContext): Promise<GenerationOutput> {
    const { request, fps, duration, frames, resolution, aspectRatio } = settingsOf(job.input);
    const inputs = await readInputs(request.content, ctx);
    const frame: Frame = { ...videoFrameSize(resolution, aspectRatio, inputs.first), fps, frames, duration, period: Math.max(duration, 2) };
    const { width, height } = frame;
    const scene = sceneOf(job, request);
    const tint = await referenceTint(inputs.references);
    const withAudio = request.audio === true;

    const graph = new FilterGraph();
    const baseIndex = await addScene(graph, frame, inputs, request, scene, tint ? scene.grid.map((c) => mix(c, tint, 0.5)) : scene.grid);
    const pictured = await addKeyFrames(graph, frame, inputs);
    const watermark = request.watermark ? ',drawbox=x=iw-iw/5-iw/40:y=ih-ih/12-ih/40:w=iw/5:h=ih/12:color=white@0.6:t=fill' : '';
    graph.chain(`[${pictured}]setsar=1${watermark},format=yuv420p[video]`);
    const maps = ['-map', '[video]'];
    if (withAudio) {
      addSoundTrack(graph, frame, inputs, baseIndex, scene.toneHz);
      maps.push('-map', '[audio]', ...AAC_ARGS);
    }

    const args = ['-y', ...graph.args, '-filter_complex', graph.chains.join(';'), ...maps, '-r', String(fps), ...H264_MP4_ARGS, '-t', String(duration), 'out.mp4'];
    const data = await runFfmpeg(args, { files: graph.files, outputFile: 'out.mp4', signal: ctx.signal });
    return mp4Output(job.taskId, data, { width, height }, withAudio);
  },
};
