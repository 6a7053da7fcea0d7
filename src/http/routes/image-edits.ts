import path from 'node:path';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { MultipartFile } from '@fastify/multipart';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ApiError } from '../../core/errors.ts';
import { guessMimeType } from '../../core/mime-type.ts';
import type { FileService, PendingFile } from '../../files/file-service.ts';
import { callbackEventsOf } from '../../endpoints/submit-fields.ts';
import { ImagesEditFormFields, ImagesEditJsonBody, MAX_EDIT_IMAGES } from '../../endpoints/images.ts';
import type { CheckedImageEdit } from '../../images/service.ts';
import { asyncHeaders, callerOf, modeOf, sendOutcome } from '../generation-reply.ts';
import type { AppServices } from '../services.ts';
import { openAiImageFields } from './generations.ts';

/** Spec document 1: the edit images and mask are jpg/jpeg/png/webp. */
const ACCEPTED_EXTENSIONS = new Set(['.jpg', '.jpeg', '.png', '.webp']);
const ACCEPTED_TYPES: Readonly<Record<string, string>> = { 'image/png': 'png', 'image/jpeg': 'jpg', 'image/webp': 'webp' };
/** `image[]` as the API names it; `image` and `image[0]`… as clients also send it. */
const IMAGE_PART = /^image(\[\d*\])?$/;

/** An image or mask of the multipart form: bytes written but not yet registered, or a URL sent as text. */
type FormImage = { pending: PendingFile; fileName: string; mimeType: string } | { url: string };

interface EditForm {
  fields: Record<string, unknown>;
  /** The repeated callback_events field (endpoints/submit-fields.ts), kept apart from the edit's fields. */
  callbackEvents: unknown[];
  images: FormImage[];
  mask?: FormImage;
}

function fileTooLarge(param: string, maxBytes: number): ApiError {
  return new ApiError('file_too_large', `${param} is larger than the ${+(maxBytes / 1024 / 1024).toFixed(2)} MB limit`, param);
}

/**
 * Writes one file part, checking it is a jpg, png or webp image by its name (when it has an
 * extension) and by its content. `written` collects what was written, for the caller to discard.
 */
async function writeImagePart(files: FileService, part: MultipartFile, what: string, param: string, maxBytes: number, written: PendingFile[]): Promise<FormImage> {
  const extension = path.extname(part.filename ?? '').toLowerCase();
  if (extension && !ACCEPTED_EXTENSIONS.has(extension)) throw new ApiError('invalid_parameter', `${what} must be a jpg, jpeg, png or webp image, got a ${extension} file`, param);
  let pending: PendingFile;
  try {
    pending = await files.write(part.file);
  } catch (err) {
    throw (err as { code?: string }).code === 'FST_REQ_FILE_TOO_LARGE' ? fileTooLarge(param, maxBytes) : err;
  }
  written.push(pending);
  if (part.file.truncated) throw fileTooLarge(param, maxBytes);
  const mimeType = guessMimeType(undefined, await files.head(pending));
  const kind = ACCEPTED_TYPES[mimeType];
  if (!kind) throw new ApiError('invalid_parameter', `${what} must be a jpg, jpeg, png or webp image${pending.size === 0 ? ' (it is empty)' : ''}`, param);
  return { pending, mimeType, fileName: part.filename || `${what.replace(/\W/g, '')}.${kind}` };
}

/** Reads the multipart form: text fields as they are, `image[]` and `mask` parts written as pending files. */
async function readEditForm(request: FastifyRequest, files: FileService, maxBytes: number, written: PendingFile[]): Promise<EditForm> {
  const form: EditForm = { fields: {}, callbackEvents: [], images: [] };
  for await (const part of request.parts()) {
    const param = IMAGE_PART.test(part.fieldname) ? 'image' : part.fieldname === 'mask' ? 'mask' : undefined;
    if (!param) {
      if (part.type === 'field' && part.fieldname === 'callback_events') form.callbackEvents.push(part.value);
      else if (part.type === 'field') form.fields[part.fieldname] = part.value;
      else part.file.resume();
      continue;
    }
    if (param === 'image' && form.images.length === MAX_EDIT_IMAGES) throw new ApiError('invalid_parameter', `at most ${MAX_EDIT_IMAGES} images, got ${MAX_EDIT_IMAGES + 1}`, 'image');
    if (param === 'mask' && form.mask) throw new ApiError('invalid_parameter', 'send one mask', 'mask');
    const what = param === 'image' ? `image[${form.images.length}]` : 'mask';
    const image = part.type === 'field' ? { url: String(part.value) } : await writeImagePart(files, part, what, param, maxBytes, written);
    if (param === 'image') form.images.push(image);
    else form.mask = image;
  }
  return form;
}

/** An edit request read from either body: the checked fields and the image references. */
export interface EditRequest {
  checked: CheckedImageEdit;
  /** The submit fields of the request (endpoints/submit-fields.ts), for callerOf. */
  submitFields: { callback_events?: unknown };
  image: string[];
  mask?: string;
}

/**
 * Reads an edit from a multipart form (its files kept as the caller's once the service checked
 * the fields) or from a JSON body; nothing is kept on an error.
 */
export function imageEditReader(app: FastifyInstance, services: AppServices): (request: FastifyRequest) => Promise<EditRequest> {
  const { files, settings, images } = services;
  // Multipart text fields are text, like a query string: checked against the same field
  // schema as the JSON body, with the coercion the app applies to query strings.
  const validateFormFields = app.validatorCompiler!({ schema: ImagesEditFormFields, method: 'POST', url: '/v1/images/edits', httpPart: 'querystring' });

  function formFields(raw: Record<string, unknown>): ImagesEditFormFields {
    const fields = { ...raw };
    if (validateFormFields(fields) !== true) {
      throw Object.assign(new Error('invalid form fields'), { validation: (validateFormFields as { errors?: unknown[] }).errors, validationContext: 'body' });
    }
    return fields as ImagesEditFormFields;
  }

  async function editFromForm(request: FastifyRequest): Promise<EditRequest> {
    const written: PendingFile[] = [];
    try {
      const form = await readEditForm(request, files, settings.maxFileBytes, written);
      // A form names each status in a field of its own; none sent means the default, all of them.
      const submitFields = form.callbackEvents.length > 0 ? { callback_events: form.callbackEvents } : {};
      callbackEventsOf(submitFields.callback_events); // refused before the images are kept
      const checked = images.checkEdit(formFields(form.fields), form.images.length);
      const urlOf = async (image: FormImage): Promise<string> => ('url' in image ? image.url : (await files.register(request.ctx.principal.userId, image.pending, image.fileName, image.mimeType)).url);
      const image = [];
      for (const each of form.images) image.push(await urlOf(each));
      const mask = form.mask ? await urlOf(form.mask) : undefined;
      return { checked, submitFields, image, ...(mask ? { mask } : {}) };
    } catch (err) {
      await Promise.all(written.map((pending) => files.discard(pending)));
      throw (err as { code?: string }).code === 'FST_REQ_FILE_TOO_LARGE' ? fileTooLarge('image', settings.maxFileBytes) : err;
    }
  }

  function editFromJson(body: ImagesEditJsonBody): EditRequest {
    const { image, mask, callback_events, ...fields } = body;
    const list = Array.isArray(image) ? image : [image];
    return { checked: images.checkEdit(fields, list.length), submitFields: { callback_events }, image: list, ...(mask ? { mask } : {}) };
  }

  return async (request) => (request.isMultipart() ? editFromForm(request) : editFromJson(request.body as ImagesEditJsonBody));
}

/** POST /v1/images/edits: multipart with image files, or JSON with image URLs. */
export const imageEditRoutes = (services: AppServices): FastifyPluginAsyncTypebox => async (app) => {
  const readEdit = imageEditReader(app, services);
  app.post('/v1/images/edits', {
    schema: {
      tags: ['generation'],
      summary: 'Edit images; waits for the result unless x-async is set',
      description: 'multipart/form-data: file parts `image[]` (1 to 16; also `image`) and `mask`, jpg/jpeg/png/webp up to 20 MB each, text fields prompt, model, size, aspect_ratio, resolution, seed, n, output_format, _metadata (a JSON string). '
        + 'application/json: `image` a URL or a list of URLs, `mask` a URL. Answers like /v1/images/generations.',
      security: [{ bearer: [] }],
      headers: asyncHeaders,
      body: { content: { 'application/json': { schema: ImagesEditJsonBody } } },
    },
  }, async (request, reply) => {
    const { checked, submitFields, ...refs } = await readEdit(request);
    return sendOutcome(reply, await services.images.edit(callerOf(request, submitFields), checked, refs, modeOf(request)), openAiImageFields);
  });
};
