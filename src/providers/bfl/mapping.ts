/**
 * Black Forest Labs FLUX Kontext: image requests → the body of POST /v1/flux-kontext-*, and the
 * get_result replies → task states. Pure functions.
 */
import type { ImageEditInput, ImageGenerationInput } from '../../endpoints/images.ts';
import { TaskFailedError, TaskRejectedError, type EngineDeclaration } from '../spec.ts';
import { readReply } from '../upstream-reply.ts';
import { BflErrorText, BflResult, BflSubmitted, BflValidationError } from './reply-schemas.ts';

/** Kontext's own options, taken from the request as they are. */
const KONTEXT_OPTIONS = ['prompt_upsampling', 'safety_tolerance'];

/** The widest and the tallest ratio Kontext draws (21:9 and 9:21). */
const RATIO_RANGE: [number, number] = [9 / 21, 21 / 9];

/** The most images one Kontext request takes: input_image and input_image_2 to _4. */
export const MAX_INPUT_IMAGES = 4;

/** Generations and edits, one image each; an edit has no mask. */
export const BFL_SERVES: EngineDeclaration = {
  'images.generations': { fields: ['prompt', 'n', 'size', 'aspect_ratio', 'seed', 'output_format', ...KONTEXT_OPTIONS], limits: { maxOutputs: 1 } },
  'images.edits': { fields: ['prompt', 'image', 'n', 'size', 'aspect_ratio', 'seed', 'output_format', ...KONTEXT_OPTIONS], refused: ['mask'], limits: { maxOutputs: 1, maxInputImages: MAX_INPUT_IMAGES } },
};

type ImageInput = ImageGenerationInput | ImageEditInput;

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

/** The aspect ratio to send: the request's, else the ratio of its size (with a warning that the pixels are Kontext's choice). */
function ratioOf(input: ImageInput): { ratio?: string; warning?: string } {
  if (input.aspect_ratio) return { ratio: input.aspect_ratio };
  const size = input.size && input.size !== 'auto' ? /^(\d+)x(\d+)$/.exec(input.size) : null;
  if (!size) return {};
  const [w, h] = [Number(size[1]), Number(size[2])];
  const ratio = `${w / gcd(w, h)}:${h / gcd(w, h)}`;
  return { ratio, warning: `size ${input.size} sent as aspect_ratio ${ratio}: FLUX Kontext chooses the pixel size itself (about one megapixel)` };
}

/** Refuses what Kontext cannot draw before anything is sent. */
export function checkKontextRequest(input: ImageInput): void {
  const { ratio } = ratioOf(input);
  if (ratio) {
    const [w, h] = ratio.split(':').map(Number) as [number, number];
    if (w / h < RATIO_RANGE[0] - 1e-9 || w / h > RATIO_RANGE[1] + 1e-9) throw new TaskRejectedError(`FLUX Kontext draws aspect ratios from 21:9 to 9:21, not ${ratio}`);
  }
  const tolerance = input.safety_tolerance;
  if (tolerance !== undefined && !(Number.isInteger(tolerance) && (tolerance as number) >= 0 && (tolerance as number) <= 6)) throw new TaskRejectedError('safety_tolerance is a whole number from 0 (strictest) to 6');
  if (input.prompt_upsampling !== undefined && typeof input.prompt_upsampling !== 'boolean') throw new TaskRejectedError('prompt_upsampling is true or false');
}

/**
 * The Kontext body: the prompt, the input images (`images`: each a URL or raw base64, the first
 * is the one edited) and the options the request sets; `warnings` says what was changed.
 */
export function kontextBody(input: ImageInput, images: string[]): { body: Record<string, unknown>; warnings: string[] } {
  const warnings: string[] = [];
  const body: Record<string, unknown> = { prompt: input.prompt };
  images.forEach((image, i) => {
    body[i === 0 ? 'input_image' : `input_image_${i + 1}`] = image;
  });
  if (input.seed !== undefined) body.seed = input.seed;
  const { ratio, warning } = ratioOf(input);
  if (ratio) body.aspect_ratio = ratio;
  if (warning) warnings.push(warning);
  if (input.output_format) body.output_format = input.output_format === 'jpg' ? 'jpeg' : input.output_format;
  for (const option of KONTEXT_OPTIONS) if (input[option] !== undefined) body[option] = input[option];
  return { body, warnings };
}

/** What the submit answered: the request id, where to poll it, and what it costs. */
export interface SubmittedRequest {
  id: string;
  polling_url: string;
  credits?: number;
}

export function submittedRequest(reply: unknown): SubmittedRequest {
  const r = readReply(BflSubmitted, reply, 'bfl');
  return { id: r.id, polling_url: r.polling_url, ...(r.cost != null ? { credits: r.cost } : {}) };
}

export type BflResultState =
  | { state: 'running'; progress?: number; message: string }
  | { state: 'failed'; message: string; original: string; fault?: 'upstream' }
  | { state: 'succeeded'; sampleUrl: string; seed?: number };

/** Moderation statuses: the request, or the image made for it, was blocked. */
const MODERATED: Record<string, string> = {
  'Request Moderated': 'the request was blocked by FLUX moderation',
  'Content Moderated': 'the generated image was blocked by FLUX moderation',
};

/** A GET <polling_url> reply (`ResultResponse`). */
export function resultState(reply: unknown): BflResultState {
  const r = readReply(BflResult, reply, 'bfl');
  const status = r.status;
  const details = r.details ? ` ${JSON.stringify(r.details)}` : '';
  switch (status) {
    case 'Pending':
      return { state: 'running', ...(r.progress != null ? { progress: Math.round(r.progress * 100) } : {}), message: 'generating' };
    case 'Ready': {
      const sample = r.result?.sample;
      if (!sample) throw new TaskFailedError('bfl reported Ready without result.sample', JSON.stringify(reply).slice(0, 2000));
      return { state: 'succeeded', sampleUrl: sample, ...(r.result?.seed != null ? { seed: r.result.seed } : {}) };
    }
    case 'Request Moderated':
    case 'Content Moderated':
      return { state: 'failed', message: MODERATED[status]!, original: `${status}${details}` };
    case 'Error':
      return { state: 'failed', message: 'bfl could not generate the image', original: `Error${details}`, fault: 'upstream' };
    case 'Task not found':
      return { state: 'failed', message: 'bfl no longer knows the request', original: status };
    default:
      throw new TaskFailedError('bfl answered the result query with an unknown status', JSON.stringify(reply).slice(0, 2000));
  }
}

/** BFL's own words in an error reply: the FastAPI `detail` (each `loc: msg`), else the text. */
export function errorText(text: string): string {
  try {
    const body: unknown = JSON.parse(text);
    if (BflErrorText.Check(body)) return body.detail;
    if (BflValidationError.Check(body)) return body.detail.map((d) => `${(d.loc ?? []).join('.')}: ${String(d.msg)}`).join('; ');
  } catch {
    // Not JSON: the text as it came.
  }
  return text;
}
