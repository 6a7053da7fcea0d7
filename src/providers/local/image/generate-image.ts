import type { GenerationOutput, RunContext } from '../../spec.ts';
import type { LocalHandler } from '../local-handler.ts';
import { drawPicture } from './draw-picture.ts';
import { encodeImage, imageRequestOf, outputFormatOf, pictureKey } from './image-output.ts';
import { checkDrawable, draftSize, requestedSize } from './image-size.ts';

/**
 * Text to image: `n` pictures drawn from the prompt (its colours) and the seed (the layout),
 * at the requested size, in the requested format. The same model, prompt and seed give the
 * same pictures; without a seed, the same input does.
 */
export const generateImage: LocalHandler<'images.generations' | 'ai.generations'> = {
  check(job): void {
    checkDrawable(requestedSize(imageRequestOf(job)));
  },

  async run(job, ctx: RunContext): Promise<GenerationOutput> {
    const request = imageRequestOf(job);
    const size = requestedSize(request);
    const format = outputFormatOf(request);
    const files = [];
    for (let i = 0; i < (request.n ?? 1); i++) {
      ctx.signal.throwIfAborted();
      files.push(await encodeImage(drawPicture(request.prompt ?? '', pictureKey(job, i), size), format, job, i, size));
    }
    return { files };
  },

  async draft(job): Promise<Buffer> {
    const request = imageRequestOf(job);
    return drawPicture(request.prompt ?? '', pictureKey(job, 0), draftSize(requestedSize(request))).blur(1.5).png().toBuffer();
  },
};
