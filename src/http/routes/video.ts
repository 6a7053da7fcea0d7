import { Type, type Static } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { CapabilityName } from '../../catalog/schema.ts';
import { ApiError } from '../../core/errors.ts';
import { asyncHeaders, generateFor, sendOutcome } from '../generation-reply.ts';
import type { AppServices } from '../services.ts';

const security = [{ bearer: [] }];

/** A media reference in a request: what RunContext.readInput can read. */
export function mediaReference(description = 'http(s) URL (e.g. from /v1/files/upload), data URI, or asset hash blake3:<hex>') {
  return Type.String({ minLength: 1, pattern: '^(https?://|data:|blake3:)', description });
}
const MediaReference = mediaReference();

const CONTENT_TYPES = ['text', 'image_url', 'audio_url', 'video_url', 'element'] as const;
type ContentType = (typeof CONTENT_TYPES)[number];

/** Which item type each role applies to. */
const ROLE_TYPES = {
  first_frame: 'image_url',
  last_frame: 'image_url',
  digital_human_frame: 'image_url',
  reference: 'image_url',
  video_feature: 'video_url',
  video_base: 'video_url',
  shot_prompt: 'text',
  element: 'element',
} as const satisfies Record<string, ContentType>;
type Role = keyof typeof ROLE_TYPES;

/** Roles that may appear once per request. */
const SINGLE_ROLES: readonly Role[] = ['first_frame', 'last_frame'];

const REFER_TYPE_ROLES = { feature: 'video_feature', base: 'video_base' } as const;

const ContentItem = Type.Object({
  type: Type.Enum(CONTENT_TYPES),
  text: Type.Optional(Type.String({ minLength: 1, maxLength: 10_000, description: 'required when type is text' })),
  image_url: Type.Optional(Type.Object({ url: MediaReference }, { additionalProperties: false, description: 'required when type is image_url' })),
  audio_url: Type.Optional(Type.Object({ url: MediaReference }, { additionalProperties: false, description: 'required when type is audio_url' })),
  video_url: Type.Optional(Type.Object({
    url: MediaReference,
    refer_type: Type.Optional(Type.Enum(['feature', 'base'], { description: 'feature: style or motion reference; base: the video to edit' })),
    keep_original_sound: Type.Optional(Type.Enum(['yes', 'no'])),
  }, { additionalProperties: false, description: 'required when type is video_url' })),
  element: Type.Optional(Type.Object({
    system_element_id: Type.Optional(Type.String({ minLength: 1, description: 'id from the system subject library' })),
    inline_element: Type.Optional(Type.Object({
      name: Type.String({ minLength: 1, maxLength: 200 }),
      description: Type.Optional(Type.String({ maxLength: 2500 })),
      frontal_image_url: MediaReference,
      refer_images: Type.Optional(Type.Array(MediaReference, { maxItems: 10 })),
    }, { additionalProperties: false })),
  }, { additionalProperties: false, description: 'subject reference: system_element_id or inline_element; required when type is element' })),
  role: Type.Optional(Type.Enum(Object.keys(ROLE_TYPES) as Role[])),
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'placeholder name' })),
  shot_index: Type.Optional(Type.Integer({ minimum: 0, maximum: 100, description: 'shot index in multi-shot mode' })),
  duration: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 60, description: 'seconds of this shot in multi-shot mode' })),
}, { additionalProperties: false });

const VideoGenerationBody = Type.Object({
  model: Type.String({ minLength: 1, description: 'catalog alias or workflow name' }),
  content: Type.Array(ContentItem, { minItems: 1, maxItems: 32 }),
  aspect_ratio: Type.Enum(['16:9', '9:16', '4:3', '3:4', '1:1', '21:9', '9:21', 'adaptive', 'keep_ratio'], { default: 'adaptive' }),
  resolution: Type.Enum(['480p', '720p', '1080p', '1440p', '2160p'], { default: '720p' }),
  duration: Type.Number({ minimum: 1, maximum: 60, default: 5, description: 'seconds' }),
  audio: Type.Optional(Type.Boolean({ description: 'generate (or keep) an audio track' })),
  framespersecond: Type.Optional(Type.Number({ minimum: 1, maximum: 60, description: 'frame rate' })),
  watermark: Type.Boolean({ default: false }),
  seed: Type.Integer({ minimum: -1, maximum: 4_294_967_295, default: -1, description: '-1: any' }),
  camerafixed: Type.Boolean({ default: false }),
  camera_control: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'camera control type' })),
  negative_prompt: Type.Optional(Type.String({ maxLength: 2500 })),
  cfg_scale: Type.Optional(Type.Number({ minimum: 0, maximum: 20 })),
}, { additionalProperties: false });

type VideoContentItem = Static<typeof ContentItem>;

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
  const seen = new Set<Role>();
  content.forEach((item, i) => {
    checkContentItem(item, i);
    if (item.role && SINGLE_ROLES.includes(item.role)) {
      if (seen.has(item.role)) throw new ApiError('invalid_parameter', `only one item may have role ${item.role}`, `content[${i}].role`);
      seen.add(item.role);
    }
  });
  // Video references, edits and subjects are omni-model work; pictures need image-to-video.
  if (content.some((c) => c.type === 'video_url' || c.type === 'element')) return ['omni_video'];
  if (content.some((c) => c.type === 'image_url')) return ['image_to_video', 'omni_video'];
  return ['video_generate', 'omni_video'];
}

/** Video generation: text-to-video, image-to-video, video reference and edit, subjects. */
export const videoRoutes = (services: AppServices): FastifyPluginAsyncTypebox => async (app) => {
  app.post('/v1/video/generations', {
    schema: {
      tags: ['generation'],
      summary: 'Generate a video; waits for the result unless x-async is set',
      description: 'Sync: the task result fields (type video). Async: `{task_id, request_id, status}`. Defaults (aspect_ratio adaptive, resolution 720p, duration 5, seed -1, watermark and camerafixed false) are stored with the task input.',
      security,
      headers: asyncHeaders,
      body: VideoGenerationBody,
    },
  }, async (request, reply) => {
    const { model, ...input } = request.body;
    const capabilities = checkContent(input.content);
    const outcome = await generateFor(services.generations, request, {
      endpoint: 'video.generations',
      capabilities,
      outputType: 'video',
      model,
      input,
    });
    return sendOutcome(reply, outcome);
  });
};
