/**
 * The catalog file format as one TypeBox schema: it is the JSON Schema
 * (draft 2020-12) ajv checks a catalog against, and through `Static<>` the TypeScript types of
 * the catalog, its models and their capability values. `validateCatalog` turns ajv's errors
 * into one readable line per problem, each starting with the JSON path of the offending value.
 *
 * Objects whose fields the format names are closed (additionalProperties false). The schema
 * carries one annotation keyword of ours, `x-messages` (ajv keyword -> message), used to
 * word the error of a node better than ajv can (e.g. "must be an array of exactly 2 numbers").
 * Rules TypeBox has no builder for (`const`, if/then/else on the JSON type) are written as
 * plain JSON Schema in `Type.Unsafe` with the type they accept, so the schema ajv sees is
 * exactly the format's and the static type still follows it.
 */
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import { Type, type Static, type TObject, type TProperties, type TSchema, type TUnsafe } from 'typebox';

/** Every capability name of the catalog format, in its documented order. */
export const CAPABILITY_NAMES = [
  'audio_generate',
  'audio_understanding',
  'digital_human_generate',
  'image_analysis',
  'image_edit',
  'image_generate',
  'image_to_model',
  'image_to_video',
  'image_vectorize',
  'mesh_edit',
  'multiview_to_model',
  'omni',
  'omni_video',
  'speech_to_text',
  'text_embedding',
  'text_generate',
  'text_rerank',
  'text_to_model',
  'text_to_speech',
  'tools_call',
  'video_enhance',
  'video_generate',
  'video_understanding',
  'voice_clone',
] as const;

export type CapabilityName = (typeof CAPABILITY_NAMES)[number];

export const MODEL_STATUSES = ['active', 'deprecated', 'offline'] as const;
export type ModelStatus = (typeof MODEL_STATUSES)[number];

// ---- building blocks -------------------------------------------------------------------

/** A node annotation: a better message for some of ajv's keywords (see describe). */
type Messages = { 'x-messages'?: Record<string, string> };

const bool = Type.Boolean();
const str = Type.String();
const nonEmptyString = Type.String({ minLength: 1 });
/** NNI: a non-negative integer. */
const nni = Type.Integer({ minimum: 0 });
/** PI: a positive integer. */
const pi = Type.Integer({ minimum: 1 });
const nonNegativeNumber = Type.Number({ minimum: 0 });
const numberRange = Type.Unsafe<[number, number]>(
  Type.Array(Type.Number(), {
    minItems: 2,
    maxItems: 2,
    'x-messages': {
      type: 'must be an array of exactly 2 numbers',
      minItems: 'must be an array of exactly 2 numbers',
      maxItems: 'must be an array of exactly 2 numbers',
    },
  }),
);
const stringList = Type.Array(nonEmptyString, { uniqueItems: true });
const uniqueIntegers = Type.Array(Type.Integer(), { uniqueItems: true });

/** `{const: value}` alone: TypeBox's Literal adds `type`, which would report a second error for a value of another type. */
function constant<const T>(value: T, messages: Messages = {}): TUnsafe<T> {
  return Type.Unsafe<T>({ const: value, ...messages });
}

function closedObject<P extends TProperties>(properties: P, extra: Record<string, unknown> = {}): TObject<P> {
  return Type.Object(properties, { additionalProperties: false, ...extra });
}

/** The same optional field schema under several names. */
function fieldsOf<const N extends string, T extends TSchema>(schema: T, ...names: N[]): { [K in N]: ReturnType<typeof Type.Optional<T>> } {
  return Object.fromEntries(names.map((n) => [n, Type.Optional(schema)])) as { [K in N]: ReturnType<typeof Type.Optional<T>> };
}

function booleans<const N extends string>(...names: N[]) {
  return fieldsOf(bool, ...names);
}

/** An object of any keys whose values all follow `value`. */
function recordOf<T extends TSchema>(value: T, extra: Record<string, unknown> = {}): TUnsafe<Record<string, Static<T>>> {
  return Type.Unsafe<Record<string, Static<T>>>({ type: 'object', ...extra, additionalProperties: value });
}

/**
 * mapOrList: a list, or an object (at least 1 key) whose values are lists. Written as
 * if/then/else on the JSON type rather than anyOf so that a bad value yields the errors of
 * the branch it was meant to be, not of both.
 */
function mapOrList<T extends TSchema>(item: T, itemWord: string): TUnsafe<Static<T>[] | Record<string, Static<T>[]>> {
  const list = Type.Array(item);
  return Type.Unsafe<Static<T>[] | Record<string, Static<T>[]>>({
    if: { type: 'array' },
    then: list,
    else: {
      type: 'object',
      minProperties: 1,
      additionalProperties: list,
      'x-messages': { type: `must be a list of ${itemWord} or an object of such lists` },
    },
  });
}

const opt = Type.Optional;

// ---- capability field sets ---------------------------------------------------------------

const languageFields = {
  ...fieldsOf(nni, 'max_context_tokens', 'max_input_tokens', 'max_output_tokens', 'max_thinking_tokens'),
  outputTokenLimitScope: opt(Type.Enum(['total', 'answer_only'])),
  outputTokenParameter: opt(Type.Enum(['max_tokens', 'max_completion_tokens'])),
  defaultOutputTokenBudget: opt(constant('candidate_max')),
  ...booleans('supportThinking', 'supportThinkingModeSwitch', 'supportStructuredOutput', 'supportTool', 'supportWebSearch'),
  thinkingBudgetTokensRange: opt(numberRange),
  ...fieldsOf(stringList, 'thinkingEffortLevels', 'supportedApiProtocols'),
};

const embeddingFields = {
  dimensions: opt(Type.Array(pi, { uniqueItems: true })),
};

const rerankFields = {
  ...fieldsOf(pi, 'maxDocuments', 'maxRequestTokens', 'maxTokensPerDocument'),
  ...booleans('supportInstruct', 'supportTopN'),
};

const imageFields = {
  allow_custom_width_height_size: opt(bool),
  aspect_ratio_allowed: opt(stringList),
  aspect_ratio_range: opt(numberRange),
  input_format_allowed: opt(stringList),
  ...fieldsOf(
    nni,
    'input_max_file_size_bytes',
    'input_max_images_count',
    'input_output_max_images_count',
    'output_max_images_count',
    'output_max_size',
  ),
  ...booleans('input_multiple_images', 'output_multiple_images', 'support_quality_control'),
  input_parameters: opt(Type.Array(closedObject({ type: str, parameter: str }))),
  input_size_range: opt(stringList),
  output_resolutions: opt(stringList),
  output_size_range: opt(numberRange),
  quality_options: opt(stringList),
  size_param_format: opt(str),
  width_height_multiple: opt(pi),
  width_height_range: opt(numberRange),
};

const mediaConstraint = closedObject({
  ...fieldsOf(stringList, 'formats', 'codecs'),
  ...fieldsOf(nonNegativeNumber, 'max_size_mb', 'max_total_duration_seconds'),
  ...fieldsOf(nni, 'max_count', 'min_dimension', 'max_dimension'),
  ...fieldsOf(numberRange, 'aspect_ratio_range', 'duration_range', 'fps_range'),
  requires_visual_reference: opt(bool),
});

/**
 * Draft object. Contract 1 pins validity 7 days, 480p draft, 1080p final; contract 2 pins
 * 720p draft, 1440p final and needs a finalization protocol. One if/then per version so
 * a missing or unknown contract_version yields only its own error.
 */
const draftMode = closedObject(
  {
    enabled: bool,
    contract_version: Type.Enum([1, 2]),
    draft_resolution: Type.Enum(['480p', '720p']),
    final_resolutions: Type.Array(Type.Enum(['1080p', '1440p']), {
      minItems: 1,
      maxItems: 1,
      'x-messages': {
        minItems: 'must hold exactly 1 value',
        maxItems: 'must hold exactly 1 value',
      },
    }),
    validity_seconds: nni,
    input_modes: stringList,
    finalization_protocol: opt(Type.Enum(['vendor_h3_media_context', 'platform_result_reference'])),
  },
  {
    allOf: [
      {
        if: { required: ['contract_version'], properties: { contract_version: { const: 1 } } },
        then: {
          properties: {
            validity_seconds: { const: 604800, 'x-messages': { const: 'must be 604800 when contract_version is 1' } },
            draft_resolution: { const: '480p', 'x-messages': { const: 'must be "480p" when contract_version is 1' } },
            final_resolutions: {
              const: ['1080p'],
              'x-messages': { const: 'must be ["1080p"] when contract_version is 1' },
            },
          },
        },
      },
      {
        if: { required: ['contract_version'], properties: { contract_version: { const: 2 } } },
        then: {
          required: ['finalization_protocol'],
          properties: {
            draft_resolution: { const: '720p', 'x-messages': { const: 'must be "720p" when contract_version is 2' } },
            final_resolutions: {
              const: ['1440p'],
              'x-messages': { const: 'must be ["1440p"] when contract_version is 2' },
            },
          },
          'x-messages': { required: 'required when contract_version is 2' },
        },
      },
    ],
  },
);

const videoFields = {
  draft_mode: opt(draftMode),
  aspect_ratio_allowed: opt(mapOrList(str, 'strings')),
  output_resolutions: opt(mapOrList(str, 'strings')),
  size_allowed: opt(mapOrList(str, 'strings')),
  ...fieldsOf(numberRange, 'aspect_ratio_range', 'input_width_height_range', 'smart_multi_frame_range'),
  duration_options: opt(mapOrList(Type.Number(), 'numbers')),
  duration_range: opt(
    Type.Unsafe<[number, number] | Record<string, [number, number]>>({
      if: { type: 'array' },
      then: numberRange,
      else: {
        type: 'object',
        additionalProperties: numberRange,
        'x-messages': { type: 'must be an array of exactly 2 numbers or an object of such arrays' },
      },
    }),
  ),
  ...booleans(
    'input_audio',
    'input_first_frame',
    'input_first_last_frame',
    'input_last_frame',
    'input_reference_generate_multiple',
    'input_reference_generate_single',
    'input_smart_multi_frame',
    'output_audio',
    'output_bgm',
    'output_support_return_last_frame',
    'output_video_continuation',
    'support_instruction_edit',
    'support_video_effect_template',
    'supports_portrait_asset_reference',
    'supportWebSearch',
  ),
  input_media_constraints: opt(
    closedObject({ max_request_size_mb: nonNegativeNumber, image: opt(mediaConstraint), video: opt(mediaConstraint), audio: opt(mediaConstraint) }),
  ),
  ...fieldsOf(nonNegativeNumber, 'input_size_limit', 'max_file_size_mb'),
  limits_with_video: opt(
    closedObject({
      max_images_and_elements: opt(nni),
      duration_options: opt(Type.Array(Type.Number())),
    }),
  ),
  ...fieldsOf(nni, 'max_audios', 'max_elements', 'max_images', 'max_images_and_elements', 'max_images_for_last_frame', 'max_videos'),
  mode_constraints: opt(
    recordOf(closedObject({ aspect_ratio_allowed: opt(stringList), forced_aspect_ratio: opt(str), prompt_required: opt(bool) }), { minProperties: 1 }),
  ),
  ...fieldsOf(str, 'output_audio_mode', 'smart_multi_frame_mode'),
  prompt_length_limit: opt(closedObject({ max: pi, count_mode: opt(str), label: opt(str) })),
  provider_operations: opt(
    closedObject({
      context_ir: opt(bool),
      regeneration: opt(
        closedObject({ source_resolutions: stringList, target_resolutions: stringList, requires_audio: opt(bool), source_fps: opt(nonNegativeNumber) }),
      ),
    }),
  ),
  resolution_routes: opt(
    recordOf(
      closedObject({
        mode: str,
        generation_resolution: str,
        target_resolution: str,
        display_resolution: str,
        enhance_model: str,
        fallback_policy: str,
        billing_mode: str,
      }),
      { minProperties: 1 },
    ),
  ),
  ...fieldsOf(stringList, 'support_video_effect_template_list', 'supported_modes'),
};

const faceLimitRange = closedObject({ min: nni, max: nni });

const model3dFields = {
  cross_provider_edit: opt(closedObject({ vendor3d_import_supported: opt(bool) })),
  ...fieldsOf(str, 'default_geometry_instruct_mode', 'default_output_format'),
  /** Maximum face count per geometry quality (standard, detailed) and topology. */
  face_limit_by_geometry_quality: opt(recordOf(closedObject({ triangle: opt(nni), quad: opt(nni) }), { minProperties: 1 })),
  face_limit_range: opt(faceLimitRange),
  /** Range per topology (triangle, quad) at standard or unset geometry quality. */
  face_limit_range_by_topology: opt(recordOf(faceLimitRange)),
  ...fieldsOf(
    stringList,
    'geometry_instruct_modes',
    'geometry_quality_options',
    'multiview_required_slots',
    'output_formats',
    'texture_quality_options',
  ),
  ...fieldsOf(nni, 'max_face_limit', 'max_face_limit_quad', 'multiview_max_images', 'multiview_min_images'),
  multiview_input: opt(
    closedObject({
      min_images: nni,
      max_images: nni,
      views: Type.Array(closedObject({ type: str, order: nni, required: opt(bool) })),
      file_constraints: opt(
        closedObject({
          allowed_mime_types: opt(stringList),
          ...fieldsOf(nni, 'min_side', 'max_side', 'per_file_max_bytes', 'auxiliary_total_max_bytes'),
        }),
      ),
    }),
  ),
  ...booleans(
    'pbr_required_when_texture',
    'provider_generation_only',
    'support_export_uv',
    'support_image_autofix',
    'support_micro_detail',
    'support_part_generation',
    'support_pbr',
    'support_public_image_url_only',
    'support_quad',
    'support_smart_low_poly',
    'support_ta_pose',
    'support_texture',
    'support_texture_delight',
  ),
};

const meshEditOperation = closedObject({ supported: bool, supported_formats: opt(stringList), supported_texture_prompt_modes: opt(stringList) });

const meshEditFields = {
  /** Keys are operation names: segmentation, completion, smart_lowpoly, texture, convert, ... */
  supported_operations: opt(recordOf(meshEditOperation, { minProperties: 1 })),
};

const audioGenerationFields = {
  output_formats: opt(stringList),
  ...booleans('supports_instrumental', 'supports_lyrics', 'supports_lyrics_optimizer', 'supports_prompt'),
};

const speechToTextFields = {
  ...fieldsOf(str, 'endpoint_path', 'input_key', 'mode', 'query_url', 'resource_id', 'submit_url'),
  ...fieldsOf(nonNegativeNumber, 'max_duration_seconds', 'max_file_size_mb'),
  ...fieldsOf(nni, 'poll_interval_ms', 'poll_timeout_ms'),
  supported_formats: opt(stringList),
  ...booleans('supports_diarization', 'supports_emotion', 'supports_hotwords', 'supports_prompt_context', 'supports_timestamp'),
};

const voice = closedObject({
  id: nonEmptyString,
  name: nonEmptyString,
  ...fieldsOf(str, 'accent', 'age', 'audio', 'desc', 'gender', 'icon', 'lang'),
  provider: opt(nonEmptyString),
  tags: opt(stringList),
});

const ttsParams = closedObject({
  ...booleans(
    'output_audio',
    'voice_modify',
    'emotion',
    'pronunciation_dict',
    'language_boost',
    'language_controls',
    'text_filters',
    'voice_instruction',
  ),
  audio_formats: opt(stringList),
  ...fieldsOf(uniqueIntegers, 'sample_rates', 'opus_sample_rates', 'bit_rates'),
  volume_range: opt(closedObject({ min: nonNegativeNumber, max: nonNegativeNumber, step: Type.Number({ exclusiveMinimum: 0 }) })),
});

const speechSynthesisFields = {
  // "false, or an object": branch on the JSON type so an object gets the object's errors.
  tts_params: opt(
    Type.Unsafe<false | Static<typeof ttsParams>>({
      if: { type: 'boolean' },
      then: { const: false, 'x-messages': { const: 'must be false or an object' } },
      else: { ...ttsParams, 'x-messages': { type: 'must be false or an object' } },
    }),
  ),
  ...fieldsOf(str, 'voice_compatibility_group', 'default_voice_id', 'resource_id'),
  voices: opt(Type.Array(voice)),
};

const audioLimits = closedObject({
  formats: stringList,
  max_duration_seconds: nonNegativeNumber,
  max_size_mb: nonNegativeNumber,
  min_duration_seconds: opt(Type.Number()),
});

const voiceCloneFields = {
  preview_models: opt(stringList),
  prompt_audio: opt(audioLimits),
  source_audio: opt(audioLimits),
};

const vectorizeFields = {
  ...booleans('async_task', 'support_base64_input', 'support_url_input', 'supports_extra_format_download', 'supports_preview'),
  ...fieldsOf(stringList, 'cleanup_levels', 'input_format_allowed', 'output_format_allowed'),
  max_colors_options: opt(uniqueIntegers),
};

const videoEnhanceFields = {
  ...booleans('async_task', 'input_video_required', 'preserve_audio'),
  ...fieldsOf(stringList, 'input_resolutions', 'operations', 'output_resolutions'),
  max_file_size_mb: opt(nonNegativeNumber),
};

/** The field sets of each capability's schema, by schema kind. */
const FIELDS_BY_KIND = {
  language: languageFields,
  embedding: embeddingFields,
  rerank: rerankFields,
  image: imageFields,
  video: videoFields,
  model3d: model3dFields,
  mesh_edit: meshEditFields,
  audio_generation: audioGenerationFields,
  speech_to_text: speechToTextFields,
  speech_synthesis: speechSynthesisFields,
  voice_clone: voiceCloneFields,
  vectorize: vectorizeFields,
  video_enhance: videoEnhanceFields,
  type_only: {},
};

/** The schema kinds of the capabilities. */
export type CapabilitySchemaKind = keyof typeof FIELDS_BY_KIND;

export const CAPABILITY_SCHEMA_KIND = {
  text_generate: 'language',
  tools_call: 'language',
  omni: 'language',
  image_analysis: 'language',
  video_understanding: 'language',
  audio_understanding: 'language',
  text_embedding: 'embedding',
  text_rerank: 'rerank',
  image_generate: 'image',
  image_edit: 'image',
  video_generate: 'video',
  image_to_video: 'video',
  omni_video: 'video',
  text_to_model: 'model3d',
  image_to_model: 'model3d',
  multiview_to_model: 'model3d',
  mesh_edit: 'mesh_edit',
  audio_generate: 'audio_generation',
  speech_to_text: 'speech_to_text',
  text_to_speech: 'speech_synthesis',
  voice_clone: 'voice_clone',
  image_vectorize: 'vectorize',
  video_enhance: 'video_enhance',
  digital_human_generate: 'type_only',
} as const satisfies Record<CapabilityName, CapabilitySchemaKind>;

/** The schema of capability K: its kind's fields plus `type` equal to its own key. */
type CapabilitySchema<K extends CapabilityName> =
  { type: TUnsafe<K> } & (typeof FIELDS_BY_KIND)[(typeof CAPABILITY_SCHEMA_KIND)[K]] extends infer P extends TProperties ? TObject<P> : never;

function capabilitySchema(name: CapabilityName): TObject {
  return closedObject({
    type: constant(name, { 'x-messages': { const: `must be "${name}", the capability's own key` } }),
    ...FIELDS_BY_KIND[CAPABILITY_SCHEMA_KIND[name]],
  });
}

/** Every capability key, each optional, with the schema of its value (built from the table above, typed per key). */
const capabilityProperties = Object.fromEntries(CAPABILITY_NAMES.map((n) => [n, Type.Optional(capabilitySchema(n))])) as {
  [K in CapabilityName]: ReturnType<typeof Type.Optional<CapabilitySchema<K>>>;
};

const capabilityNameSchema = Type.Enum([...CAPABILITY_NAMES], { 'x-messages': { enum: 'is not a capability name' } });

const providerSchema = closedObject({ code: nonEmptyString, name: nonEmptyString, displayName: nonEmptyString, iconPath: opt(nonEmptyString) });

const baseModelSchema = closedObject({
  catalogKey: Type.String({
    pattern: '^base:(runtime|seed):.+$',
    'x-messages': { pattern: 'must look like base:runtime:<text> or base:seed:<text>' },
  }),
  seedKey: opt(nonEmptyString),
  providerCode: nonEmptyString,
  displayName: nonEmptyString,
  alias: nonEmptyString,
  /** The upstream model or version string; for 3D it selects the family rules. */
  defaultRealModelName: nonEmptyString,
  modelTypes: Type.Array(capabilityNameSchema, { minItems: 1, uniqueItems: true }),
  iconPath: opt(nonEmptyString),
  description: opt(nonEmptyString),
  capabilities: closedObject(capabilityProperties, {
    minProperties: 1,
    'x-messages': { additionalProperties: 'unknown key (not a capability name)' },
  }),
  status: Type.Enum([...MODEL_STATUSES]),
});

/** The whole catalog file ("Catalog file"). */
export const catalogSchema = closedObject(
  {
    schemaVersion: constant(1),
    providers: Type.Array(providerSchema, { minItems: 1 }),
    baseModels: Type.Array(baseModelSchema, { minItems: 1 }),
  },
  { $schema: 'https://json-schema.org/draft/2020-12/schema', title: 'Gengate model catalog' },
);

// ---- the types the schema gives ---------------------------------------------------------------

/** A catalog file that passed validateCatalog. */
export type CatalogDocument = Static<typeof catalogSchema>;
export type CatalogProvider = Static<typeof providerSchema>;
export type BaseModel = Static<typeof baseModelSchema>;
/** A model's `capabilities` object: at least one key in a valid catalog. */
export type Capabilities = BaseModel['capabilities'];
/** The value of capability K in a model's `capabilities`. */
export type CapabilityValue<K extends CapabilityName> = NonNullable<Capabilities[K]>;
/** The fields of each schema kind, without `type` (every one of them optional). */
export type LanguageCapabilityFields = Static<TObject<typeof languageFields>>;
export type ImageCapabilityFields = Static<TObject<typeof imageFields>>;
export type VideoCapabilityFields = Static<TObject<typeof videoFields>>;
export type Model3dCapabilityFields = Static<TObject<typeof model3dFields>>;
export type SpeechSynthesisCapabilityFields = Static<TObject<typeof speechSynthesisFields>>;
export type MeshEditOperation = Static<typeof meshEditOperation>;
export type Voice = Static<typeof voice>;

// ---- validation and error wording -----------------------------------------------------------

// The conditional draft rules name properties and `required` without restating the type, which
// the strictRequired/strictTypes checks would refuse; everything else stays strict.
const ajv = new Ajv2020({ allErrors: true, verbose: true, strict: true, strictRequired: false, strictTypes: false });
ajv.addKeyword({ keyword: 'x-messages', schemaType: 'object' });
/** Compiled at the first catalog checked: it is the largest schema here (a quarter of a second). */
let validateAgainstSchema: ValidateFunction | undefined;

const TYPE_WORDS: Record<string, string> = {
  integer: 'an integer',
  number: 'a number',
  string: 'a string',
  boolean: 'a boolean',
  object: 'an object',
  array: 'an array',
  null: 'null',
};

/** Renders a JSON path like `$.baseModels[0].capabilities["16:9"]`, using the data to tell indices from keys. */
function renderPath(data: unknown, segments: string[]): string {
  let out = '$';
  let node: unknown = data;
  for (const segment of segments) {
    if (Array.isArray(node) && /^\d+$/.test(segment)) {
      out += `[${segment}]`;
      node = node[Number(segment)];
      continue;
    }
    out += /^[A-Za-z_][A-Za-z0-9_]*$/.test(segment) ? `.${segment}` : `[${JSON.stringify(segment)}]`;
    node = node !== null && typeof node === 'object' ? (node as Record<string, unknown>)[segment] : undefined;
  }
  return out;
}

function pointerSegments(pointer: string): string[] {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'));
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function describe(err: ErrorObject): string {
  const custom = (err.parentSchema as Messages | undefined)?.['x-messages'];
  if (custom?.[err.keyword]) return custom[err.keyword];
  const p = err.params as Record<string, unknown>;
  switch (err.keyword) {
    case 'required':
      return 'required field is missing';
    case 'additionalProperties':
      return 'unknown key';
    case 'type':
      return `must be ${TYPE_WORDS[String(p.type)] ?? String(p.type)}`;
    case 'const':
      return `must be ${JSON.stringify(p.allowedValue)}`;
    case 'enum':
      return `must be one of ${(p.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    case 'minimum':
      return `must be ${p.comparison} ${p.limit}`;
    case 'exclusiveMinimum':
      return `must be > ${p.limit}`;
    case 'minLength':
      return p.limit === 1 ? 'must not be empty' : `must have at least ${p.limit} characters`;
    case 'minItems':
      return `must have at least ${plural(Number(p.limit), 'item')}`;
    case 'maxItems':
      return `must have at most ${plural(Number(p.limit), 'item')}`;
    case 'minProperties':
      return `must have at least ${plural(Number(p.limit), 'key')}`;
    case 'uniqueItems':
      return `duplicate of item [${Math.min(Number(p.i), Number(p.j))}]`;
    case 'pattern':
      return `must match ${p.pattern}`;
    default:
      return err.message ?? `fails ${err.keyword}`;
  }
}

/** Where the offending value sits: a missing or unknown key and a duplicate item get their own path. */
function offendingSegments(err: ErrorObject): string[] {
  const segments = pointerSegments(err.instancePath);
  const p = err.params as Record<string, unknown>;
  if (err.keyword === 'required') return [...segments, String(p.missingProperty)];
  if (err.keyword === 'additionalProperties') return [...segments, String(p.additionalProperty)];
  // The later of the two equal items is the one to blame.
  if (err.keyword === 'uniqueItems') return [...segments, String(Math.max(Number(p.i), Number(p.j)))];
  return segments;
}

/** Checks ajv cannot express: aliases are routing keys, so two models must not share one. */
function crossFieldErrors(data: unknown): string[] {
  if (data === null || typeof data !== 'object') return [];
  const models = (data as { baseModels?: unknown }).baseModels;
  if (!Array.isArray(models)) return [];
  const lines: string[] = [];
  const firstIndexOfAlias = new Map<string, number>();
  models.forEach((model, index) => {
    const alias = model !== null && typeof model === 'object' ? (model as { alias?: unknown }).alias : undefined;
    if (typeof alias !== 'string' || alias === '') return;
    const first = firstIndexOfAlias.get(alias);
    if (first === undefined) firstIndexOfAlias.set(alias, index);
    else lines.push(`$.baseModels[${index}].alias: duplicate alias ${JSON.stringify(alias)} (also $.baseModels[${first}].alias)`);
  });
  return lines;
}

/**
 * Validates a parsed catalog file. Returns one line per problem, `<JSON path>: <message>`;
 * an empty array means the catalog is valid.
 */
export function validateCatalog(data: unknown): string[] {
  const lines: string[] = [];
  validateAgainstSchema ??= ajv.compile(catalogSchema);
  if (!validateAgainstSchema(data)) {
    // "if" errors only say a "then" failed; the then's own errors follow them.
    const errors = (validateAgainstSchema.errors ?? []).filter((e) => e.keyword !== 'if');
    const found = errors.map((err) => ({ path: renderPath(data, offendingSegments(err)), err }));
    // A value of the wrong type also fails the conditional rules at the same place; the
    // type error is the one problem to report there.
    const pathsWithTypeError = new Set(found.filter((f) => f.err.keyword === 'type').map((f) => f.path));
    // Likewise a value already wrong on its own (or inside) needs no second line from a
    // conditional rule (the draft contract rules are the only allOf branches).
    const isConditional = (err: ErrorObject) => err.schemaPath.includes('/allOf/');
    const plainPaths = found.filter((f) => !isConditional(f.err)).map((f) => f.path);
    const hasPlainErrorAtOrBelow = (path: string) =>
      plainPaths.some((p) => p === path || p.startsWith(`${path}.`) || p.startsWith(`${path}[`));
    for (const { path, err } of found) {
      if (err.keyword !== 'type' && pathsWithTypeError.has(path)) continue;
      if (isConditional(err) && hasPlainErrorAtOrBelow(path)) continue;
      const line = `${path}: ${describe(err)}`;
      if (!lines.includes(line)) lines.push(line);
    }
  }
  for (const line of crossFieldErrors(data)) lines.push(line);
  return lines;
}
