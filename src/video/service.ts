/**
 * Video generation (docs/api/video.md): text-to-video, image-to-video, video reference and edit,
 * subjects. The content's rules beyond its schema are checked, the model chosen by what the
 * content needs, and the task submitted through the generation pipeline.
 */
import type { CapabilityName } from '../catalog/schema.ts';
import { ApiError } from '../core/errors.ts';
import type { GenerationCaller, GenerationOutcome, GenerationService } from '../tasks/generation-service.ts';
import { capabilitiesForContent } from '../endpoints/video-content-capabilities.ts';
import { CONTENT_TYPES, ROLE_TYPES, type ContentRole, type VideoContentItem, type VideoGenerationBody } from '../endpoints/video.ts';

/** Roles that may appear once per request. */
const SINGLE_ROLES: readonly ContentRole[] = ['first_frame', 'last_frame'];

const REFER_TYPE_ROLES = { feature: 'video_feature', base: 'video_base' } as const;

/** The rules between an item's fields that the schema cannot say; throws 400 naming the field. */
function checkContentItem(item: VideoContentItem, i: number): void {
  const at = `content[${i}]`;
  if (item[item.type] === undefined) throw new ApiError('missing_parameter', `${at}.${item.type} is required when type is ${item.type}`, `${at}.${item.type}`);
  for (const other of CONTENT_TYPES) {
    if (other !== item.type && item[other] !== undefined) throw new ApiError('unsupported_parameter', `${at}.${other} does not belong in a ${item.type} item`, `${at}.${other}`);
  }
  if (item.role !== undefined && ROLE_TYPES[item.role] !== item.type) {
    throw new ApiError('invalid_parameter', `${at}.role ${item.role} needs a ${ROLE_TYPES[item.role]} item, not ${item.type}`, `${at}.role`);
  }
  const referType = item.video_url?.refer_type;
  if (referType !== undefined && item.role !== undefined && REFER_TYPE_ROLES[referType] !== item.role) {
    throw new ApiError('invalid_parameter', `${at}.video_url.refer_type ${referType} contradicts role ${item.role}`, `${at}.video_url.refer_type`);
  }
  if (item.element) {
    const { system_element_id: systemId, inline_element: inline } = item.element;
    if (systemId === undefined && inline === undefined) throw new ApiError('missing_parameter', `${at}.element needs system_element_id or inline_element`, `${at}.element`);
    if (systemId !== undefined && inline !== undefined) throw new ApiError('invalid_parameter', `${at}.element takes system_element_id or inline_element, not both`, `${at}.element.inline_element`);
  }
}

/** Checks every item and the request as a whole; answers the capability types a model needs for it. */
function checkContent(content: VideoContentItem[]): readonly CapabilityName[] {
  const seen = new Set<ContentRole>();
  content.forEach((item, i) => {
    checkContentItem(item, i);
    if (item.role && SINGLE_ROLES.includes(item.role)) {
      if (seen.has(item.role)) throw new ApiError('invalid_parameter', `only one item may have role ${item.role}`, `content[${i}].role`);
      seen.add(item.role);
    }
  });
  return capabilitiesForContent(content);
}

/** An item's media references, with their field paths. */
function* mediaReferencesOf(item: VideoContentItem, at: string): Generator<[ref: string, param: string]> {
  for (const kind of ['image_url', 'audio_url', 'video_url'] as const) {
    const ref = item[kind]?.url;
    if (ref !== undefined) yield [ref, `${at}.${kind}.url`];
  }
  const inline = item.element?.inline_element;
  if (inline) {
    yield [inline.frontal_image_url, `${at}.element.inline_element.frontal_image_url`];
    for (const [k, ref] of (inline.refer_images ?? []).entries()) yield [ref, `${at}.element.inline_element.refer_images[${k}]`];
  }
}

export class VideoService {
  private readonly generations: GenerationService;

  constructor(generations: GenerationService) {
    this.generations = generations;
  }

  /** POST /v1/video/generations; `model` undefined: the catalog's default for what the content needs. */
  generate(caller: GenerationCaller, body: Omit<VideoGenerationBody, 'model'> & { model?: string }, mode: 'sync' | 'async'): Promise<GenerationOutcome> {
    const { model: alias, ...input } = body;
    input.content.forEach((item, i) => {
      for (const [ref, param] of mediaReferencesOf(item, `content[${i}]`)) this.generations.checkCallerUrl(ref, param);
    });
    const model = this.generations.resolveModel(alias, checkContent(input.content));
    return this.generations.generate({ ...caller, endpoint: 'video.generations', model, input }, mode);
  }
}
