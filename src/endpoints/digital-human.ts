/**
 * Request bodies of the digital-human endpoints (docs/api/digital-humans.md) and the task inputs they become.
 */
import { Type, type Static } from 'typebox';
import { mediaReference } from './video.ts';
import { SubmitFields } from './submit-fields.ts';

/** The source video of a digital human, as its frames are played back. */
export const DigitalHumanVideo = Type.Object({
  width: Type.Number(),
  height: Type.Number(),
  fps: Type.Number(),
  duration_seconds: Type.Number(),
  has_audio: Type.Boolean(),
});
export type DigitalHumanVideo = Static<typeof DigitalHumanVideo>;

export const DigitalHumanCreateBody = Type.Object({
  ...SubmitFields,
  model: Type.String({ minLength: 1, description: 'catalog alias or workflow name' }),
  video_id: mediaReference('the source video: a URL from /v1/files/upload, an asset hash blake3:<hex>, or an http(s) URL'),
  interaction_optimise: Type.Enum([0, 1], { default: 1, description: '1 on, 0 off: optimisation for live streaming' }),
}, { additionalProperties: false });
export type DigitalHumanCreateBody = Static<typeof DigitalHumanCreateBody>;

export const DigitalHumanGenerationBody = Type.Object({
  ...SubmitFields,
  model: Type.String({ minLength: 1, description: 'catalog alias or workflow name; its mode (Lite or Basic) decides which options apply' }),
  resource_id: Type.String({ minLength: 1, description: 'from POST /v1/digital-human/create; 404 resource_not_found when unknown or another user\'s' }),
  audio_url: mediaReference('the speech to lip-sync: MP3, WAV or M4A'),
  image_url: Type.Optional(mediaReference('a picture to animate instead of the resource video')),
  video_url: Type.Optional(mediaReference('a video to lip-sync instead of the resource video')),
  templ_start_strategy: Type.Optional(Type.Enum(['start_from_given_seconds'])),
  templ_start_seconds: Type.Optional(Type.Number({ minimum: 0, maximum: 86_400, description: 'Lite only; default 0; taken modulo the template length' })),
  separate_vocal: Type.Optional(Type.Boolean({ description: 'isolate the voice from background noise' })),
  open_scenedet: Type.Optional(Type.Boolean({ description: 'Basic only: scene split and speaker detection' })),
  align_audio: Type.Optional(Type.Boolean({ description: 'Lite only; default true: loop the video to the audio length' })),
  align_audio_reverse: Type.Optional(Type.Boolean({ description: 'Lite only; needs align_audio: loop forwards then backwards' })),
}, { additionalProperties: false });
export type DigitalHumanGenerationBody = Static<typeof DigitalHumanGenerationBody>;

/** What a digital-human.generations job carries in `input.resource`, added at submit. */
export const DigitalHumanJobResource = Type.Object({
  id: Type.String(),
  /** Input reference (`blake3:<hex>`) of the source video for RunContext.readInput; null when an upstream keeps it. */
  source: Type.Union([Type.String(), Type.Null()]),
  video: DigitalHumanVideo,
  upstream_resource_id: Type.Union([Type.String(), Type.Null()]),
});
export type DigitalHumanJobResource = Static<typeof DigitalHumanJobResource>;

/** Task input of `digital-human.create`: the body without `model`. */
export const DigitalHumanCreateInput = Type.Omit(DigitalHumanCreateBody, ['model']);
export type DigitalHumanCreateInput = Static<typeof DigitalHumanCreateInput>;

/**
 * Task input of `digital-human.generations`: the body without `model`, the mode's defaults
 * filled in; `resource` is the gateway's record of the resource, added at submit.
 */
export const DigitalHumanGenerationInput = Type.Intersect([Type.Omit(DigitalHumanGenerationBody, ['model']), Type.Object({ resource: DigitalHumanJobResource })]);
export type DigitalHumanGenerationInput = Static<typeof DigitalHumanGenerationInput>;
