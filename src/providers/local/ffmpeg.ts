import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ffmpegInstaller from '@ffmpeg-installer/ffmpeg';
import { runChild, type ChildRun } from './run-child.ts';

// ffmpeg is GPL: it only ever runs as a child process; the installer package just locates it.
const FFMPEG_PATH = ffmpegInstaller.path;

/** How much of ffmpeg's stderr an error keeps (the end holds the reason). */
const STDERR_TAIL_CHARS = 2000;

/** ffmpeg exited with an error; `stderr` holds the end of its log. */
export class FfmpegError extends Error {
  readonly stderr: string;

  constructor(message: string, stderr: string) {
    super(message);
    this.stderr = stderr;
  }
}

export interface RunFfmpegOptions {
  /** Bytes fed to ffmpeg's stdin (use `-i pipe:0`). */
  input?: Buffer;
  /**
   * The working directory ffmpeg runs in, made by `withWorkDir` and kept after the run (for
   * work in several steps); without it a run that needs one gets a temporary directory.
   */
  dir?: string;
  /**
   * Files written, by name, into the run's temporary working directory before ffmpeg starts;
   * arguments refer to them by name. Demuxers that seek (MP4 with the index at the end) need this.
   */
  files?: Record<string, Buffer>;
  /**
   * A file ffmpeg writes in the working directory whose bytes are returned instead of stdout;
   * needed for outputs that seek back, such as MP4 with `-movflags +faststart`.
   */
  outputFile?: string;
  /** Kills ffmpeg and rejects with the signal's reason. */
  signal?: AbortSignal;
}

function spawnFfmpeg(args: string[], cwd: string | undefined, input: Buffer | undefined, signal?: AbortSignal): Promise<ChildRun> {
  return runChild(FFMPEG_PATH, ['-hide_banner', '-loglevel', 'info', ...args], { cwd, input, signal, stderrTailChars: STDERR_TAIL_CHARS * 4 });
}

/** Runs `fn` in a fresh temporary directory, removed afterwards whatever happens. */
export async function withWorkDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'gengate-ffmpeg-'));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Runs ffmpeg with `args` (after `-hide_banner`) and returns what it wrote to stdout, or the
 * bytes of `outputFile`. Throws FfmpegError when ffmpeg fails.
 */
export function runFfmpeg(args: string[], opts: RunFfmpegOptions = {}): Promise<Buffer> {
  const run = async (dir: string | undefined): Promise<Buffer> => {
    if (dir) {
      for (const [name, data] of Object.entries(opts.files ?? {})) await writeFile(join(dir, name), data);
    }
    const done = await spawnFfmpeg(args, dir, opts.input, opts.signal);
    if (done.code !== 0) {
      const tail = done.stderr.slice(-STDERR_TAIL_CHARS);
      throw new FfmpegError(`ffmpeg exited with code ${done.code}: ${lastLine(tail)}`, tail);
    }
    return dir && opts.outputFile ? readFile(join(dir, opts.outputFile)) : done.stdout;
  };
  if (opts.dir !== undefined) return run(opts.dir);
  return opts.files !== undefined || opts.outputFile !== undefined ? withWorkDir(run) : run(undefined);
}

function lastLine(text: string): string {
  const lines = text.trim().split('\n');
  return lines[lines.length - 1] ?? '';
}

/** What ffmpeg reports about a media file's container and first video and audio streams. */
export interface MediaProbe {
  /** Container formats as ffmpeg names them, e.g. `mov,mp4,m4a,3gp,3g2,mj2`, `wav`, `mp3`. */
  format: string;
  /** Seconds; undefined when the container does not say (e.g. a raw stream). */
  durationSeconds?: number;
  video?: { codec: string; width: number; height: number; fps?: number };
  audio?: { codec: string; sampleRate?: number; channels?: string };
}

/**
 * Reads a media file's header with ffmpeg itself (no ffprobe at run time). Throws FfmpegError
 * when ffmpeg cannot parse the bytes as media.
 */
export async function probe(data: Buffer, opts: { signal?: AbortSignal } = {}): Promise<MediaProbe> {
  return withWorkDir(async (dir) => {
    await writeFile(join(dir, 'input'), data);
    // Without an output ffmpeg prints the input's description and exits 1; a parse failure
    // shows up as the missing "Input #0" header.
    const run = await spawnFfmpeg(['-i', 'input'], dir, undefined, opts.signal);
    return parseProbe(run.stderr);
  });
}

/** Parses the input description ffmpeg prints to stderr. */
function parseProbe(stderr: string): MediaProbe {
  const header = /Input #0, ([^ ]+), from/.exec(stderr);
  if (!header) {
    const tail = stderr.slice(-STDERR_TAIL_CHARS);
    throw new FfmpegError(`not a media file: ${lastLine(tail)}`, tail);
  }
  const result: MediaProbe = { format: header[1].replace(/,$/, '') };
  const duration = /Duration: (\d+):(\d+):(\d+(?:\.\d+)?)/.exec(stderr);
  if (duration) result.durationSeconds = Number(duration[1]) * 3600 + Number(duration[2]) * 60 + Number(duration[3]);
  const videoLine = /Stream #0:\d+[^:]*: Video: (.*)/.exec(stderr);
  if (videoLine) {
    const size = /, (\d{2,5})x(\d{2,5})/.exec(videoLine[1]);
    const fps = /, (\d+(?:\.\d+)?) fps/.exec(videoLine[1]) ?? /, (\d+(?:\.\d+)?) tbr/.exec(videoLine[1]);
    result.video = {
      codec: firstWord(videoLine[1]),
      width: size ? Number(size[1]) : 0,
      height: size ? Number(size[2]) : 0,
      ...(fps ? { fps: Number(fps[1]) } : {}),
    };
  }
  const audioLine = /Stream #0:\d+[^:]*: Audio: (.*)/.exec(stderr);
  if (audioLine) {
    const rate = /, (\d+) Hz/.exec(audioLine[1]);
    const channels = /Hz, ([^,]+)/.exec(audioLine[1]);
    result.audio = {
      codec: firstWord(audioLine[1]),
      ...(rate ? { sampleRate: Number(rate[1]) } : {}),
      ...(channels ? { channels: channels[1].trim() } : {}),
    };
  }
  return result;
}

function firstWord(text: string): string {
  return /^[\w.-]+/.exec(text)?.[0] ?? '';
}
