/**
 * Image generation and editing (docs/api/images.md): the catalog and the adapter's
 * limits checked, the request turned into its task input and submitted through the generation
 * pipeline. The routes and the agent's tools call it.
 */
import type { LiveModel } from '../catalog/catalog.ts';
import { ApiError } from '../core/errors.ts';
import type { EndpointLimits } from '../providers/spec.ts';
import type { GenerationCaller, GenerationOutcome, GenerationService } from '../tasks/generation-service.ts';
import { MAX_EDIT_IMAGES, type ImageEditFields, type ImageEditInput, type ImagesEditJsonBody, type ImagesGenerationBody, type LegacyGenerationBody } from '../endpoints/images.ts';

type Mode = 'sync' | 'async';

/** An edit whose fields were checked before its uploaded files are kept: the model and the input without its images. */
export interface CheckedImageEdit {
  model: LiveModel;
  input: ImageEditFields;
}

function parseMetadata(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  try {
    return JSON.parse(value);
  } catch {
    throw new ApiError('invalid_parameter', '_metadata must be a JSON string', '_metadata');
  }
}

/** A size the model's provider cannot draw is a plain 400 on `size`, not a task that is then rejected. */
function checkSize(size: string | undefined, limits: EndpointLimits | undefined): void {
  const max = limits?.maxImageSide;
  const sides = size?.split('x').map(Number);
  if (max !== undefined && sides?.some((side) => side > max)) throw new ApiError('invalid_parameter', `size ${size} is too large: each side is at most ${max}`, 'size');
}

function checkOutputs(n: number | undefined, limits: EndpointLimits | undefined): void {
  const max = limits?.maxOutputs;
  if (max !== undefined && n !== undefined && n > max) throw new ApiError('invalid_parameter', `n is at most ${max} for this model's provider`, 'n');
}

export class ImageService {
  private readonly generations: GenerationService;

  constructor(generations: GenerationService) {
    this.generations = generations;
  }

  /** POST /v1/images/generations; `model` undefined: the catalog's default. */
  generate(caller: GenerationCaller, body: Omit<ImagesGenerationBody, 'model'> & { model?: string }, mode: Mode): Promise<GenerationOutcome> {
    const { model: alias, ...input } = body;
    const model = this.generations.resolveModel(alias, ['image_generate']);
    const limits = this.generations.declarationFor(model, 'images.generations')?.limits;
    checkSize(input.size, limits);
    checkOutputs(input.n, limits);
    return this.generations.generate({ ...caller, endpoint: 'images.generations', model, input }, mode);
  }

  /** The deprecated POST /v1/ai/generations: a workflow task, always asynchronous. */
  generateLegacy(caller: GenerationCaller, body: LegacyGenerationBody): Promise<GenerationOutcome> {
    const model = this.generations.resolveModel(body.model, ['image_generate']);
    const input = { ...body.params, ...(body.options ? { options: body.options } : {}) };
    return this.generations.generate({ ...caller, endpoint: 'ai.generations', model, input }, 'async');
  }

  /**
   * Checks an edit's fields and its image count against the catalog and the provider's limits,
   * before its uploaded files are kept (a refused edit leaves no files behind).
   */
  checkEdit(fields: Omit<ImagesEditJsonBody, 'image' | 'mask'>, imageCount: number): CheckedImageEdit {
    const { model: alias, _metadata, ...rest } = fields;
    const model = this.generations.resolveModel(alias, ['image_edit']);
    const limits = this.generations.declarationFor(model, 'images.edits')?.limits;
    checkSize(rest.size, limits);
    checkOutputs(rest.n, limits);
    const metadata = parseMetadata(_metadata);
    const maxImages = Math.min(MAX_EDIT_IMAGES, limits?.maxInputImages ?? MAX_EDIT_IMAGES);
    if (imageCount === 0) throw new ApiError('missing_parameter', 'image is required', 'image');
    if (imageCount > maxImages) throw new ApiError('invalid_parameter', `at most ${maxImages} images, got ${imageCount}`, 'image');
    return { model, input: { ...rest, ...(metadata !== undefined ? { _metadata: metadata } : {}) } };
  }

  /** POST /v1/images/edits of a checked edit; `image` and `mask` are references readable by the engine. */
  edit(caller: GenerationCaller, checked: CheckedImageEdit, images: { image: string[]; mask?: string }, mode: Mode): Promise<GenerationOutcome> {
    images.image.forEach((ref, i) => this.generations.checkCallerUrl(ref, images.image.length === 1 ? 'image' : `image[${i}]`));
    if (images.mask) this.generations.checkCallerUrl(images.mask, 'mask');
    const input: ImageEditInput = { ...checked.input, image: images.image, ...(images.mask ? { mask: images.mask } : {}) };
    return this.generations.generate({ ...caller, endpoint: 'images.edits', model: checked.model, input }, mode);
  }
}
