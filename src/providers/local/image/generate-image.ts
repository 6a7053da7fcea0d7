import type { GenerationJob, GenerationOutput, RunContext } from '../../spec.ts';
import type { LocalHandler } from '../local-handler.ts';
import { drawPicture } from './draw-picture.ts';
import { checkImageOutput, encodeImage, imageCountOf, outputFormatOf, pictureKey } from './image-output.ts';
import { requestedSize } from './image-size.ts';

/**
 * Text to image: `n` pictures drawn from the prompt (its colours) and the seed (the layout),
 * at the requested size, in the requested format. The same model, prompt and seed give the
 * same pictures; without a seed, the same input does.
 */
export const generateImage: LocalHandler = {
  check(job: GenerationJob): void {
    checkImageOutput(job.input, requestedSize(job.input));
  },

  async run(job: GenerationJob, ctx: RunContext): Promise<GenerationOutput> {
    const size = requestedSize(job.input);
    const format = outputFormatOf(job.input);
    const prompt = typeof job.input.prompt === 'string' ? job.input.prompt : '';
    const files = [];
    for (let i = 0; i < imageCountOf(job.input); i++) {
      ctx.signal.throwIfAborted();
      files.push(await encodeImage(drawPicture(prompt, pictureKey(job, i), size), format, job, i, size));
    }
    return { files };
  },
};
