import { createHash } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import sharp from 'sharp';
import { TaskRejectedError, type GenerationEngine, type GenerationJob, type GenerationOutput, type RunContext } from '../spec.ts';

export interface LocalEngineOptions {
  /** The run's progress updates are spread over at least this long (LOCAL_ENGINE_MIN_DURATION_MS). */
  minDurationMs: number;
}

const PROGRESS_STEPS = [10, 30, 50, 70, 90];
const MAX_SIDE = 4096;
const DEFAULT_SIDE = 1024;
const MAX_IMAGES = 10;

/** `<w>x<h>` of the request, or the default square. */
function imageSize(input: Record<string, unknown>): { width: number; height: number } {
  const size = input.size;
  if (typeof size !== 'string' || size === '' || size === 'auto') {
    const w = Number(input.width);
    const h = Number(input.height);
    if (Number.isInteger(w) && Number.isInteger(h) && w > 0 && h > 0) return { width: w, height: h };
    return { width: DEFAULT_SIDE, height: DEFAULT_SIDE };
  }
  const match = /^(\d+)[x*](\d+)$/i.exec(size);
  if (!match) throw new TaskRejectedError(`size must look like 1024x1024, got "${size}"`);
  return { width: Number(match[1]), height: Number(match[2]) };
}

/**
 * The built-in offline engine: deterministic output derived from the request, progress spread
 * over the configured minimum duration, cancellable at every step.
 */
export class LocalEngine implements GenerationEngine {
  readonly cancellable = true;

  constructor(private readonly opts: LocalEngineOptions) {}

  check(job: GenerationJob): void {
    const { width, height } = imageSize(job.input);
    if (width > MAX_SIDE || height > MAX_SIDE) throw new TaskRejectedError(`the local engine draws at most ${MAX_SIDE}x${MAX_SIDE}, got ${width}x${height}`);
    const n = job.input.n ?? 1;
    if (!Number.isInteger(n) || (n as number) < 1 || (n as number) > MAX_IMAGES) throw new TaskRejectedError(`n must be an integer from 1 to ${MAX_IMAGES}`);
  }

  async run(job: GenerationJob, ctx: RunContext): Promise<GenerationOutput> {
    // Without a minimum duration there is nothing to watch: the task goes straight to its end.
    if (this.opts.minDurationMs > 0) {
      const stepMs = this.opts.minDurationMs / (PROGRESS_STEPS.length + 1);
      for (const percent of PROGRESS_STEPS) {
        await delay(stepMs, undefined, { signal: ctx.signal });
        await ctx.progress(percent, 'generating');
      }
      await delay(stepMs, undefined, { signal: ctx.signal });
    }
    ctx.signal.throwIfAborted();
    const { width, height } = imageSize(job.input);
    const n = (job.input.n as number | undefined) ?? 1;
    const files = [];
    for (let i = 0; i < n; i++) {
      const digest = createHash('sha256').update(JSON.stringify([job.model.alias, job.input, i])).digest();
      const data = await sharp({ create: { width, height, channels: 3, background: { r: digest[0]!, g: digest[1]!, b: digest[2]! } } }).png().toBuffer();
      files.push({ type: 'image', data, fileName: `${job.taskId}-${i}.png`, mimeType: 'image/png', mediaSize: { type: 'image', width, height, status: 1 } });
    }
    return { files };
  }
}
