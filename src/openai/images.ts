/**
 * OpenAI's images API over the image service: the request's OpenAI fields translated, the task
 * run synchronously, and the answer `{created, data: [{url} | {b64_json}]}`. GPT image models
 * answer base64 whatever response_format says, as OpenAI's do.
 */
import { Type, type Static } from 'typebox';
import type { CatalogView } from '../catalog/catalog.ts';
import { ApiError } from '../core/errors.ts';
import type { FileService } from '../files/file-service.ts';
import { endedResult, ownFileBytes } from '../tasks/ended-result.ts';
import type { GenerationOutcome } from '../tasks/generation-service.ts';
import { SubmitFields } from '../endpoints/submit-fields.ts';

export const OpenAiImagesBody = Type.Object({
  ...SubmitFields,
  prompt: Type.String({ minLength: 1 }),
  model: Type.Optional(Type.String({ minLength: 1, description: 'catalog alias with image_generate; default the catalog\'s default image model' })),
  n: Type.Optional(Type.Integer({ minimum: 1, maximum: 10 })),
  size: Type.Optional(Type.String({ pattern: '^([1-9][0-9]*x[1-9][0-9]*|auto)$' })),
  quality: Type.Optional(Type.String()),
  response_format: Type.Optional(Type.Union([Type.Literal('url'), Type.Literal('b64_json')], { description: 'url (default) or b64_json; GPT image models always answer b64_json' })),
  output_format: Type.Optional(Type.Union([Type.Literal('png'), Type.Literal('jpeg'), Type.Literal('webp')])),
  output_compression: Type.Optional(Type.Integer({ minimum: 0, maximum: 100 })),
  background: Type.Optional(Type.String()),
  moderation: Type.Optional(Type.String()),
  style: Type.Optional(Type.String()),
  stream: Type.Optional(Type.Boolean({ description: 'false only' })),
  partial_images: Type.Optional(Type.Integer()),
  user: Type.Optional(Type.String()),
}, { additionalProperties: true });
export type OpenAiImagesBody = Static<typeof OpenAiImagesBody>;

/** The OpenAI-only fields of a body, taken out before the rest goes to the image service. */
export interface ImagesAnswerOptions {
  response_format?: 'url' | 'b64_json';
  /** The alias the request named, to tell GPT image models apart; undefined: the default model. */
  model?: string;
}

/** The image service's input of an OpenAI images request (generation), and the answer options. */
export function imageRequest(body: OpenAiImagesBody): { input: Record<string, unknown> & { prompt: string; model?: string }; options: ImagesAnswerOptions } {
  if (body.stream) throw new ApiError('unsupported_parameter', 'streamed images are not supported', 'stream');
  const { response_format: format, user: _user, stream: _stream, partial_images: _partial, size, ...rest } = body;
  // quality, background, style and the like travel to the engine as model parameters.
  const input = { ...rest, ...(size && size !== 'auto' ? { size } : {}) };
  return { input, options: { ...(format ? { response_format: format } : {}), ...(body.model ? { model: body.model } : {}) } };
}

/** Takes the OpenAI-only fields out of an edit's fields (they are not model parameters). */
export function answerOptionsOf(fields: Record<string, unknown>, model: string): ImagesAnswerOptions {
  const format = fields.response_format;
  delete fields.response_format;
  delete fields.user;
  if (format !== undefined && format !== 'url' && format !== 'b64_json') throw new ApiError('invalid_parameter', 'response_format must be url or b64_json', 'response_format');
  return { ...(format ? { response_format: format } : {}), model };
}

export class OpenAiImageAnswers {
  private readonly deps: { catalog: CatalogView; files: FileService };

  constructor(deps: { catalog: CatalogView; files: FileService }) {
    this.deps = deps;
  }

  /** GPT image models (by their upstream name) answer base64, as OpenAI's do. */
  private base64For(options: ImagesAnswerOptions): boolean {
    if (options.response_format === 'b64_json') return true;
    const model = options.model === undefined ? undefined : this.deps.catalog.find(options.model);
    return model?.defaultRealModelName.startsWith('gpt-image') ?? false;
  }

  async answer(outcome: GenerationOutcome, options: ImagesAnswerOptions): Promise<{ created: number; data: ({ url: string } | { b64_json: string })[] }> {
    const draw = endedResult(outcome);
    const created = Math.floor((draw.finished_at ?? Date.now()) / 1000);
    if (!this.base64For(options)) return { created, data: draw.output.map((url) => ({ url })) };
    const data = await Promise.all(draw.output.map(async (url) => ({ b64_json: (await ownFileBytes(this.deps.files, url)).toString('base64') })));
    return { created, data };
  }
}
