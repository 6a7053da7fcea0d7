/**
 * The request body of POST /v1/video/generations (docs/api/video.md) and the task input it becomes.
 */
import { Type, type Static } from 'typebox';
import { SubmitFields } from './submit-fields.ts';

/** A media reference in a request: what RunContext.readInput can read. */
export function mediaReference(description = 'http(s) URL (e.g. from /v1/files/upload), data URI, or asset hash blake3:<hex>') {
  // Any scheme passes the schema: which ones the gateway fetches is the outbound URL policy's answer (url_not_allowed).
  return Type.String({ minLength: 1, pattern: '^[A-Za-z][A-Za-z0-9+.-]*:', description });
}
const MediaReference = mediaReference();

export const CONTENT_TYPES = ['text', 'image_url', 'audio_url', 'video_url', 'element'] as const;
export type ContentType = (typeof CONTENT_TYPES)[number];

/** Which item type each role applies to. */
export const ROLE_TYPES = {
  first_frame: 'image_url',
  last_frame: 'image_url',
  digital_human_frame: 'image_url',
  reference: 'image_url',
  video_feature: 'video_url',
  video_base: 'video_url',
  shot_prompt: 'text',
  element: 'element',
} as const satisfies Record<string, ContentType>;
export type ContentRole = keyof typeof ROLE_TYPES;

export const ContentItem = Type.Object({
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
  role: Type.Optional(Type.Enum(Object.keys(ROLE_TYPES) as ContentRole[])),
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'placeholder name' })),
  shot_index: Type.Optional(Type.Integer({ minimum: 0, maximum: 100, description: 'shot index in multi-shot mode' })),
  duration: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 60, description: 'seconds of this shot in multi-shot mode' })),
}, { additionalProperties: false });
export type VideoContentItem = Static<typeof ContentItem>;

export const VideoGenerationBody = Type.Object({
  ...SubmitFields,
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
export type VideoGenerationBody = Static<typeof VideoGenerationBody>;

/** Task input of `video.generations`: the body without `model`, its defaults filled in. */
export const VideoGenerationInput = Type.Omit(VideoGenerationBody, ['model']);
export type VideoGenerationInput = Static<typeof VideoGenerationInput>;
