import { createHash } from 'node:crypto';
import sharp from 'sharp';
import { TaskRejectedError, type GenerationJob, type GenerationOutput } from '../../spec.ts';
import type { LocalHandler } from '../local-handler.ts';

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

/** Images drawn from the request: deterministic for the same model and parameters. */
export const generateImage: LocalHandler = {
  check(job: GenerationJob): void {
    const { width, height } = imageSize(job.input);
    if (width > MAX_SIDE || height > MAX_SIDE) throw new TaskRejectedError(`the local engine draws at most ${MAX_SIDE}x${MAX_SIDE}, got ${width}x${height}`);
    const n = job.input.n ?? 1;
    if (!Number.isInteger(n) || (n as number) < 1 || (n as number) > MAX_IMAGES) throw new TaskRejectedError(`n must be an integer from 1 to ${MAX_IMAGES}`);
  },

  async run(job: GenerationJob): Promise<GenerationOutput> {
    const { width, height } = imageSize(job.input);
    const n = (job.input.n as number | undefined) ?? 1;
    const files = [];
    for (let i = 0; i < n; i++) {
      const digest = createHash('sha256').update(JSON.stringify([job.model.alias, job.input, i])).digest();
      const data = await sharp({ create: { width, height, channels: 3, background: { r: digest[0]!, g: digest[1]!, b: digest[2]! } } }).png().toBuffer();
      files.push({ type: 'image', data, fileName: `${job.taskId}-${i}.png`, mimeType: 'image/png', mediaSize: { type: 'image', width, height, status: 1 } });
    }
    return { files };
  },
};
