/**
 * OpenAI-compatible images: gateway image requests → the fields of POST /images/generations
 * and /images/edits, and their replies → generated files. Pure functions (sharp only reads
 * and converts bytes).
 */
import { loadSharp } from '../load-sharp.ts';
import type { ImageCapabilityFields } from '../../catalog/schema.ts';
import type { Usage } from '../spec.ts';
import { TaskFailedError, type EngineDeclaration, type GenerationJob, type InputFile, type JobOf } from '../spec.ts';
import type { ImageGenerationInput } from '../../endpoints/images.ts';
import { readReply } from '../upstream-reply.ts';
import { OpenAiError, OpenAiErrorText, OpenAiImages, OpenAiMessage } from './reply-schemas.ts';

/** The gateway endpoints this adapter runs, with the catalog capability each one needs. */
export const IMAGE_ENDPOINTS = {
  'images.generations': 'image_generate',
  'ai.generations': 'image_generate',
  'images.edits': 'image_edit',
} as const;
export type ImageEndpoint = keyof typeof IMAGE_ENDPOINTS;

/** Request fields sent to OpenAI as they are, per upstream call (openai-python image params). */
const PASSTHROUGH: Record<'generations' | 'edits', readonly string[]> = {
  generations: ['quality', 'background', 'output_format', 'output_compression', 'moderation', 'style', 'response_format', 'user'],
  edits: ['quality', 'background', 'output_format', 'output_compression', 'input_fidelity', 'response_format', 'user'],
};

/** Fields the mapping itself reads, and the gateway's own (never sent, never warned about). */
const CONSUMED = new Set(['prompt', 'n', 'size', 'aspect_ratio', 'resolution', 'width', 'height', 'image', 'mask', 'model', '_metadata', 'options']);

/** Sizes OpenAI image models take when the catalog lists none for the model (GPT Image). */
const DEFAULT_SIZES = ['1024x1024', '1536x1024', '1024x1536'];

/** Long side in pixels that a spec `resolution` asks for. */
const RESOLUTION_LONG_SIDE: Record<string, number> = { '1K': 1024, '2K': 2048, '4K': 4096, '8K': 8192 };

/** How far a size's ratio may be from the requested aspect ratio and still count as it. */
const RATIO_TOLERANCE = 0.03;

/** What the adapter serves: the image endpoints, each reading the fields the mapping consumes or passes on. */
export const IMAGE_SERVES: EngineDeclaration = Object.fromEntries(Object.keys(IMAGE_ENDPOINTS).map((endpoint) => [
  endpoint,
  { fields: [...CONSUMED, ...PASSTHROUGH[endpoint === 'images.edits' ? 'edits' : 'generations']] },
]));

/** A job of one of the image endpoints. */
export type ImageJob = JobOf<ImageEndpoint>;

export function isImageJob(job: GenerationJob): job is ImageJob {
  return job.endpoint in IMAGE_ENDPOINTS;
}

/** What sets the size of an image request: its size fields, or the deprecated endpoint's width and height. */
type SizeFields = Pick<ImageGenerationInput, 'size' | 'aspect_ratio' | 'resolution'> & { width?: number; height?: number };

/**
 * Free-form workflow parameters arrive untyped (`unknown`); a form or JSON field of OpenAI's
 * takes a string, number or boolean.
 */
function isFieldValue(value: unknown): value is string | number | boolean {
  return ['string', 'number', 'boolean'].includes(typeof value);
}

function parseSize(size: string): [number, number] | undefined {
  const match = /^(\d+)x(\d+)$/.exec(size);
  return match ? [Number(match[1]), Number(match[2])] : undefined;
}

/**
 * The `size` to send: the request's own, `width`×`height` of the deprecated endpoint, or the
 * model's size closest to `aspect_ratio` and `resolution` (dropped with a warning when the
 * model has no size of that ratio).
 */
export function sizeFor(input: SizeFields, capability: ImageCapabilityFields | undefined): { size?: string; warning?: string } {
  if (input.size !== undefined) return { size: input.size };
  if (input.width !== undefined && input.height !== undefined) return { size: `${input.width}x${input.height}` };
  const { aspect_ratio: aspect, resolution } = input;
  if (!aspect && !resolution) return {};
  const [rw, rh] = aspect ? aspect.split(':').map(Number) : [1, 1];
  const ratio = rw! / rh!;
  const sizes = (capability?.output_resolutions ?? DEFAULT_SIZES).flatMap((s) => {
    const parsed = parseSize(s);
    return parsed ? [{ text: s, w: parsed[0], h: parsed[1] }] : [];
  });
  const fitting = sizes.filter((s) => Math.abs(s.w / s.h - ratio) / ratio <= RATIO_TOLERANCE);
  const asked = `${aspect ? `aspect_ratio ${aspect}` : ''}${aspect && resolution ? ' and ' : ''}${resolution ? `resolution ${resolution}` : ''}`;
  if (fitting.length === 0) return { warning: `${asked} dropped: the model takes none of its sizes (${sizes.map((s) => s.text).join(', ')})` };
  const longSide = RESOLUTION_LONG_SIDE[resolution ?? '1K'] ?? 1024;
  const best = fitting.reduce((a, b) => (Math.abs(Math.max(b.w, b.h) - longSide) < Math.abs(Math.max(a.w, a.h) - longSide) ? b : a));
  return { size: best.text };
}

/**
 * The upstream fields of an image request: model, prompt, n, size and the OpenAI options the
 * request carries; `warnings` names what the run could not send (a size it found no match for).
 */
export function imageRequestFields(job: ImageJob): { fields: Record<string, string | number | boolean>; warnings: string[] } {
  const { endpoint, input, model } = job;
  const call = endpoint === 'images.edits' ? 'edits' : 'generations';
  const warnings: string[] = [];
  const fields: Record<string, string | number | boolean> = { model: model.defaultRealModelName };
  if (input.prompt !== undefined) fields.prompt = input.prompt;
  // The deprecated endpoint's parameters besides prompt, width and height are a workflow's.
  const request: SizeFields & { n?: number } = job.endpoint === 'ai.generations' ? { width: job.input.width, height: job.input.height } : job.input;
  if (request.n !== undefined) fields.n = request.n;
  const { size, warning } = sizeFor(request, model.capabilities[IMAGE_ENDPOINTS[endpoint]]);
  if (size) fields.size = size;
  if (warning) warnings.push(warning);
  // Fields outside IMAGE_SERVES were reported as the task's warnings at submit and are not sent.
  for (const [key, value] of Object.entries(input)) {
    if (!PASSTHROUGH[call].includes(key) || value === undefined) continue;
    if (isFieldValue(value)) fields[key] = value;
    else warnings.push(`${key} dropped: OpenAI images/${call} takes it as a string, number or boolean`);
  }
  return { fields, warnings };
}

const UPLOAD_TYPES: Record<string, { mime: string; ext: string }> = {
  png: { mime: 'image/png', ext: 'png' },
  jpeg: { mime: 'image/jpeg', ext: 'jpg' },
  webp: { mime: 'image/webp', ext: 'webp' },
};

/** An input image as OpenAI takes it: PNG, JPEG or WebP as it is, anything else sharp reads as PNG; a mask always as PNG (its alpha is the edit area). */
async function uploadable(file: InputFile, what: string, pngOnly: boolean): Promise<{ data: Buffer; mime: string; fileName: string }> {
  const sharp = await loadSharp();
  let format: string | undefined;
  try {
    format = (await sharp(file.data).metadata()).format;
  } catch {
    throw new TaskFailedError(`${what} is not an image`);
  }
  const kind = format && UPLOAD_TYPES[format];
  if (kind && (!pngOnly || format === 'png')) return { data: file.data, mime: kind.mime, fileName: `${what.replace(/\W+/g, '-').replace(/-$/, '')}.${kind.ext}` };
  return { data: await sharp(file.data).png().toBuffer(), mime: 'image/png', fileName: `${what.replace(/\W+/g, '-').replace(/-$/, '')}.png` };
}

/**
 * The multipart body of POST /images/edits. One image goes as `image`, several as repeated
 * `image[]` parts (the form the official SDKs send for a list; OpenAI's reference does not spell
 * the multi-image field name out).
 */
export async function editForm(fields: Record<string, string | number | boolean>, images: InputFile[], mask: InputFile | undefined): Promise<FormData> {
  const form = new FormData();
  for (const [key, value] of Object.entries(fields)) form.append(key, String(value));
  const imageField = images.length === 1 ? 'image' : 'image[]';
  for (const [i, file] of images.entries()) {
    const part = await uploadable(file, `image[${i}]`, false);
    form.append(imageField, new Blob([new Uint8Array(part.data)], { type: part.mime }), part.fileName);
  }
  if (mask) {
    const part = await uploadable(mask, 'mask', true);
    form.append('mask', new Blob([new Uint8Array(part.data)], { type: part.mime }), part.fileName);
  }
  return form;
}

/** One image of a reply: inline bytes or a URL to download. */
export type ReplyImage = { b64: string } | { url: string };

export interface ImagesReply {
  images: ReplyImage[];
  usage?: Usage;
  revisedPrompts: string[];
}

/** Reads the fields used from an images reply; a reply without them fails the task, naming what is missing. */
export function parseImagesReply(body: unknown): ImagesReply {
  const reply = readReply(OpenAiImages, body, 'openai');
  if (reply.data.length === 0) throw new TaskFailedError('OpenAI images reply has no data', JSON.stringify(body).slice(0, 2000));
  const images: ReplyImage[] = [];
  const revisedPrompts: string[] = [];
  for (const [i, item] of reply.data.entries()) {
    if (item.b64_json != null) images.push({ b64: item.b64_json });
    else if (item.url != null) images.push({ url: item.url });
    else throw new TaskFailedError(`OpenAI images reply: data[${i}] has neither b64_json nor url`);
    if (item.revised_prompt != null) revisedPrompts.push(item.revised_prompt);
  }
  const { usage } = reply;
  return {
    images,
    revisedPrompts,
    ...(usage ? { usage: { total_tokens: usage.total_tokens ?? 0, input_tokens: usage.input_tokens ?? 0, output_tokens: usage.output_tokens ?? 0 } } : {}),
  };
}

/** The message of an OpenAI-style error body (`{error: {message}}`), else the text itself. */
export function upstreamErrorText(text: string): string {
  try {
    const body: unknown = JSON.parse(text);
    if (OpenAiErrorText.Check(body)) return body.error;
    if (OpenAiError.Check(body)) return body.error.message;
    if (OpenAiMessage.Check(body)) return body.message;
  } catch {
    // not JSON: the text is the message
  }
  return text;
}
