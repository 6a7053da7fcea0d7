/**
 * Request bodies of the image endpoints (docs/api/images.md) and the task inputs they
 * become: the route validates the body with these schemas, the service turns it into the input,
 * and the engine receives that input typed.
 */
import { Type, type Static } from 'typebox';
import { SubmitFields } from './submit-fields.ts';

/** Spec document 1 limit of an edit: up to 16 images (and one mask). */
export const MAX_EDIT_IMAGES = 16;

/** The output parameters the image endpoints share (generations and edits). */
export const ImageOutputFields = {
  size: Type.Optional(Type.String({ pattern: '^([1-9][0-9]*x[1-9][0-9]*|auto)$', description: '<width>x<height>, each side at most what the model\'s provider draws (8192 on the built-in engine); wins over aspect_ratio and resolution' })),
  n: Type.Optional(Type.Integer({ minimum: 1, maximum: 10, description: 'number of images' })),
  aspect_ratio: Type.Optional(Type.String({ pattern: '^[1-9][0-9]*:[1-9][0-9]*$', description: 'W:H, e.g. 16:9 (default 1:1; for edits, the first image\'s)' })),
  resolution: Type.Optional(Type.Union([Type.Literal('1K'), Type.Literal('2K'), Type.Literal('4K'), Type.Literal('8K')], { description: 'long side 1024, 2048, 4096 or 8192; sides rounded to multiples of 16' })),
  seed: Type.Optional(Type.Integer({ description: 'the same seed, prompt and model give the same images' })),
  output_format: Type.Optional(Type.Union([Type.Literal('png'), Type.Literal('jpeg'), Type.Literal('jpg'), Type.Literal('webp')], { description: 'default png' })),
};

export const ImagesGenerationBody = Type.Object({
  ...SubmitFields,
  prompt: Type.String({ minLength: 1, description: 'prompt text' }),
  model: Type.String({ minLength: 1, description: 'catalog alias or workflow name' }),
  ...ImageOutputFields,
  // Further parameters of the workflow behind the model are accepted as they are.
}, { additionalProperties: true });
export type ImagesGenerationBody = Static<typeof ImagesGenerationBody>;

export const LegacyGenerationBody = Type.Object({
  ...SubmitFields,
  params: Type.Object({
    prompt: Type.Optional(Type.String()),
    width: Type.Optional(Type.Integer({ minimum: 1 })),
    height: Type.Optional(Type.Integer({ minimum: 1 })),
    seed: Type.Optional(Type.Integer()),
  }, { additionalProperties: true, description: 'workflow-engine parameters; other keys accepted' }),
  options: Type.Optional(Type.Object({ result_retrieval: Type.Optional(Type.String({ default: 'websocket' })) }, { additionalProperties: false })),
  model: Type.Optional(Type.String({ minLength: 1, description: 'default: GENGATE_CONFIG default_models.image_generate, else the first enabled catalog model with image_generate' })),
}, { additionalProperties: false });
export type LegacyGenerationBody = Static<typeof LegacyGenerationBody>;

const ImageRef = Type.String({ minLength: 1, description: 'a URL (from /v1/files/upload, or http(s)), a data URI or an asset hash blake3:<hex>' });

const EditFields = {
  prompt: Type.String({ minLength: 1, description: 'edit prompt' }),
  model: Type.String({ minLength: 1, description: 'catalog alias or workflow name with the image_edit capability' }),
  ...ImageOutputFields,
};

export const ImagesEditJsonBody = Type.Object({
  ...SubmitFields,
  ...EditFields,
  image: Type.Union([ImageRef, Type.Array(ImageRef)], { description: `one image or a list of 1 to ${MAX_EDIT_IMAGES}; the first is the base` }),
  mask: Type.Optional(Type.String({ minLength: 1, description: 'mask URL: the edit applies where it is transparent (OpenAI convention)' })),
  _metadata: Type.Optional(Type.Union([Type.String(), Type.Object({}, { additionalProperties: true })], { description: 'metadata, a JSON string' })),
  // Further parameters of the workflow behind the model are accepted as they are.
}, { additionalProperties: true });
export type ImagesEditJsonBody = Static<typeof ImagesEditJsonBody>;

/** The text fields of the multipart edit form; its images and mask come as file parts. */
export const ImagesEditFormFields = Type.Object({
  ...SubmitFields,
  ...EditFields,
  _metadata: Type.Optional(Type.String({ description: 'metadata, a JSON string' })),
}, { additionalProperties: true });
export type ImagesEditFormFields = Static<typeof ImagesEditFormFields>;

/** Workflow parameters beyond the documented fields travel with the input as they were sent. */
const WorkflowParams = Type.Record(Type.String(), Type.Unknown());

/** Task input of `images.generations`: the body without `model`. */
export const ImageGenerationInput = Type.Intersect([Type.Omit(ImagesGenerationBody, ['model']), WorkflowParams]);
export type ImageGenerationInput = Static<typeof ImageGenerationInput>;

/** Task input of the deprecated `ai.generations`: the workflow parameters and the retrieval options. */
export const LegacyGenerationInput = Type.Intersect([
  LegacyGenerationBody.properties.params,
  Type.Object({ options: LegacyGenerationBody.properties.options }),
  WorkflowParams,
]);
export type LegacyGenerationInput = Static<typeof LegacyGenerationInput>;

/** The fields of an edit besides its images: the body without `model`, `_metadata` parsed. */
export const ImageEditFields = Type.Intersect([
  Type.Omit(ImagesEditJsonBody, ['model', 'image', 'mask', '_metadata']),
  Type.Object({ _metadata: Type.Optional(Type.Unknown()) }),
  WorkflowParams,
]);
export type ImageEditFields = Static<typeof ImageEditFields>;

/** Task input of `images.edits`: the images (the first is the base) and mask as references readable by RunContext.readInput. */
export const ImageEditInput = Type.Intersect([ImageEditFields, Type.Object({ image: Type.Array(Type.String()), mask: Type.Optional(Type.String()) })]);
export type ImageEditInput = Static<typeof ImageEditInput>;
