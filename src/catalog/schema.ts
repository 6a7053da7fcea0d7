/**
 * The catalog file format of spec document 3 as one JSON Schema (draft 2020-12), and
 * `validateCatalog`, which turns ajv's errors into one readable line per problem, each
 * starting with the JSON path of the offending value.
 *
 * Objects whose fields the spec names are closed (additionalProperties false). The schema
 * carries one annotation keyword of ours, `x-messages` (ajv keyword -> message), used to
 * word the error of a node better than ajv can (e.g. "must be an array of exactly 2 numbers").
 */
import { Ajv2020, type ErrorObject } from 'ajv/dist/2020.js';

/** Every capability name of spec document 3, in the spec's order. */
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

/** The schema kinds of spec document 3's "Schema by capability" table. */
export type CapabilitySchemaKind =
  | 'language'
  | 'embedding'
  | 'rerank'
  | 'image'
  | 'video'
  | 'model3d'
  | 'mesh_edit'
  | 'audio_generation'
  | 'speech_to_text'
  | 'speech_synthesis'
  | 'voice_clone'
  | 'vectorize'
  | 'video_enhance'
  | 'type_only';

export const CAPABILITY_SCHEMA_KIND: Record<CapabilityName, CapabilitySchemaKind> = {
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
};

type Schema = Record<string, unknown>;

// ---- building blocks -------------------------------------------------------------------

const bool: Schema = { type: 'boolean' };
const str: Schema = { type: 'string' };
const nonEmptyString: Schema = { type: 'string', minLength: 1 };
/** NNI in the spec. */
const nni: Schema = { type: 'integer', minimum: 0 };
/** PI in the spec. */
const pi: Schema = { type: 'integer', minimum: 1 };
const nonNegativeNumber: Schema = { type: 'number', minimum: 0 };
const numberRange: Schema = {
  type: 'array',
  items: { type: 'number' },
  minItems: 2,
  maxItems: 2,
  'x-messages': {
    type: 'must be an array of exactly 2 numbers',
    minItems: 'must be an array of exactly 2 numbers',
    maxItems: 'must be an array of exactly 2 numbers',
  },
};
const stringList: Schema = { type: 'array', items: nonEmptyString, uniqueItems: true };
const uniqueIntegers: Schema = { type: 'array', items: { type: 'integer' }, uniqueItems: true };

function closedObject(properties: Record<string, Schema>, required: string[] = [], extra: Schema = {}): Schema {
  return { type: 'object', properties, ...(required.length > 0 ? { required } : {}), additionalProperties: false, ...extra };
}

function booleans(...names: string[]): Record<string, Schema> {
  return Object.fromEntries(names.map((n) => [n, bool]));
}

function fieldsOf(schema: Schema, ...names: string[]): Record<string, Schema> {
  return Object.fromEntries(names.map((n) => [n, schema]));
}

/**
 * mapOrList: a list, or an object (at least 1 key) whose values are lists. Written as
 * if/then/else on the JSON type rather than anyOf so that a bad value yields the errors of
 * the branch it was meant to be, not of both.
 */
function mapOrList(item: Schema, itemWord: string): Schema {
  const list = { type: 'array', items: item };
  return {
    if: { type: 'array' },
    then: list,
    else: {
      type: 'object',
      minProperties: 1,
      additionalProperties: list,
      'x-messages': { type: `must be a list of ${itemWord} or an object of such lists` },
    },
  };
}

// ---- capability field sets ---------------------------------------------------------------

const languageFields: Record<string, Schema> = {
  ...fieldsOf(nni, 'max_context_tokens', 'max_input_tokens', 'max_output_tokens', 'max_thinking_tokens'),
  outputTokenLimitScope: { enum: ['total', 'answer_only'] },
  outputTokenParameter: { enum: ['max_tokens', 'max_completion_tokens'] },
  defaultOutputTokenBudget: { const: 'candidate_max' },
  ...booleans('supportThinking', 'supportThinkingModeSwitch', 'supportStructuredOutput', 'supportTool', 'supportWebSearch'),
  thinkingBudgetTokensRange: numberRange,
  ...fieldsOf(stringList, 'thinkingEffortLevels', 'supportedApiProtocols'),
};

const embeddingFields: Record<string, Schema> = {
  dimensions: { type: 'array', items: pi, uniqueItems: true },
};

const rerankFields: Record<string, Schema> = {
  ...fieldsOf(pi, 'maxDocuments', 'maxRequestTokens', 'maxTokensPerDocument'),
  ...booleans('supportInstruct', 'supportTopN'),
};

const imageFields: Record<string, Schema> = {
  allow_custom_width_height_size: bool,
  aspect_ratio_allowed: stringList,
  aspect_ratio_range: numberRange,
  input_format_allowed: stringList,
  ...fieldsOf(
    nni,
    'input_max_file_size_bytes',
    'input_max_images_count',
    'input_output_max_images_count',
    'output_max_images_count',
    'output_max_size',
  ),
  ...booleans('input_multiple_images', 'output_multiple_images', 'support_quality_control'),
  input_parameters: {
    type: 'array',
    items: closedObject({ type: str, parameter: str }, ['type', 'parameter']),
  },
  input_size_range: stringList,
  output_resolutions: stringList,
  output_size_range: numberRange,
  quality_options: stringList,
  size_param_format: str,
  width_height_multiple: pi,
  width_height_range: numberRange,
};

const mediaConstraint: Schema = closedObject({
  ...fieldsOf(stringList, 'formats', 'codecs'),
  ...fieldsOf(nonNegativeNumber, 'max_size_mb', 'max_total_duration_seconds'),
  ...fieldsOf(nni, 'max_count', 'min_dimension', 'max_dimension'),
  ...fieldsOf(numberRange, 'aspect_ratio_range', 'duration_range', 'fps_range'),
  requires_visual_reference: bool,
});

/**
 * Draft object. Contract 1 pins validity 7 days, 480p draft, 1080p final; contract 2 pins
 * 720p draft, 1440p final and needs a finalization protocol. One if/then per version so
 * a missing or unknown contract_version yields only its own error.
 */
const draftMode: Schema = {
  ...closedObject(
    {
      enabled: bool,
      contract_version: { enum: [1, 2] },
      draft_resolution: { enum: ['480p', '720p'] },
      final_resolutions: {
        type: 'array',
        items: { enum: ['1080p', '1440p'] },
        minItems: 1,
        maxItems: 1,
        'x-messages': {
          minItems: 'must hold exactly 1 value',
          maxItems: 'must hold exactly 1 value',
        },
      },
      validity_seconds: nni,
      input_modes: stringList,
      finalization_protocol: { enum: ['vendor_h3_media_context', 'platform_result_reference'] },
    },
    ['enabled', 'contract_version', 'draft_resolution', 'final_resolutions', 'validity_seconds', 'input_modes'],
  ),
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
};

const videoFields: Record<string, Schema> = {
  draft_mode: draftMode,
  aspect_ratio_allowed: mapOrList(str, 'strings'),
  output_resolutions: mapOrList(str, 'strings'),
  size_allowed: mapOrList(str, 'strings'),
  ...fieldsOf(numberRange, 'aspect_ratio_range', 'input_width_height_range', 'smart_multi_frame_range'),
  duration_options: mapOrList({ type: 'number' }, 'numbers'),
  duration_range: {
    if: { type: 'array' },
    then: numberRange,
    else: {
      type: 'object',
      additionalProperties: numberRange,
      'x-messages': { type: 'must be an array of exactly 2 numbers or an object of such arrays' },
    },
  },
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
  input_media_constraints: closedObject(
    { max_request_size_mb: nonNegativeNumber, image: mediaConstraint, video: mediaConstraint, audio: mediaConstraint },
    ['max_request_size_mb'],
  ),
  ...fieldsOf(nonNegativeNumber, 'input_size_limit', 'max_file_size_mb'),
  limits_with_video: closedObject({
    max_images_and_elements: nni,
    duration_options: { type: 'array', items: { type: 'number' } },
  }),
  ...fieldsOf(nni, 'max_audios', 'max_elements', 'max_images', 'max_images_and_elements', 'max_images_for_last_frame', 'max_videos'),
  mode_constraints: {
    type: 'object',
    minProperties: 1,
    additionalProperties: closedObject({ aspect_ratio_allowed: stringList, forced_aspect_ratio: str, prompt_required: bool }),
  },
  ...fieldsOf(str, 'output_audio_mode', 'smart_multi_frame_mode'),
  prompt_length_limit: closedObject({ max: pi, count_mode: str, label: str }, ['max']),
  provider_operations: closedObject({
    context_ir: bool,
    regeneration: closedObject(
      { source_resolutions: stringList, target_resolutions: stringList, requires_audio: bool, source_fps: nonNegativeNumber },
      ['source_resolutions', 'target_resolutions'],
    ),
  }),
  resolution_routes: {
    type: 'object',
    minProperties: 1,
    additionalProperties: closedObject(
      fieldsOf(
        str,
        'mode',
        'generation_resolution',
        'target_resolution',
        'display_resolution',
        'enhance_model',
        'fallback_policy',
        'billing_mode',
      ),
      ['mode', 'generation_resolution', 'target_resolution', 'display_resolution', 'enhance_model', 'fallback_policy', 'billing_mode'],
    ),
  },
  ...fieldsOf(stringList, 'support_video_effect_template_list', 'supported_modes'),
};

const faceLimitRange: Schema = closedObject({ min: nni, max: nni }, ['min', 'max']);

const model3dFields: Record<string, Schema> = {
  cross_provider_edit: closedObject({ vendor3d_import_supported: bool }),
  ...fieldsOf(str, 'default_geometry_instruct_mode', 'default_output_format'),
  face_limit_by_geometry_quality: {
    type: 'object',
    minProperties: 1,
    additionalProperties: closedObject({ triangle: nni, quad: nni }),
  },
  face_limit_range: faceLimitRange,
  face_limit_range_by_topology: { type: 'object', additionalProperties: faceLimitRange },
  ...fieldsOf(
    stringList,
    'geometry_instruct_modes',
    'geometry_quality_options',
    'multiview_required_slots',
    'output_formats',
    'texture_quality_options',
  ),
  ...fieldsOf(nni, 'max_face_limit', 'max_face_limit_quad', 'multiview_max_images', 'multiview_min_images'),
  multiview_input: closedObject(
    {
      min_images: nni,
      max_images: nni,
      views: {
        type: 'array',
        items: closedObject({ type: str, order: nni, required: bool }, ['type', 'order']),
      },
      file_constraints: closedObject({
        allowed_mime_types: stringList,
        ...fieldsOf(nni, 'min_side', 'max_side', 'per_file_max_bytes', 'auxiliary_total_max_bytes'),
      }),
    },
    ['min_images', 'max_images', 'views'],
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

const meshEditFields: Record<string, Schema> = {
  supported_operations: {
    type: 'object',
    minProperties: 1,
    additionalProperties: closedObject(
      { supported: bool, supported_formats: stringList, supported_texture_prompt_modes: stringList },
      ['supported'],
    ),
  },
};

const audioGenerationFields: Record<string, Schema> = {
  output_formats: stringList,
  ...booleans('supports_instrumental', 'supports_lyrics', 'supports_lyrics_optimizer', 'supports_prompt'),
};

const speechToTextFields: Record<string, Schema> = {
  ...fieldsOf(str, 'endpoint_path', 'input_key', 'mode', 'query_url', 'resource_id', 'submit_url'),
  ...fieldsOf(nonNegativeNumber, 'max_duration_seconds', 'max_file_size_mb'),
  ...fieldsOf(nni, 'poll_interval_ms', 'poll_timeout_ms'),
  supported_formats: stringList,
  ...booleans('supports_diarization', 'supports_emotion', 'supports_hotwords', 'supports_prompt_context', 'supports_timestamp'),
};

const voice: Schema = closedObject(
  {
    id: nonEmptyString,
    name: nonEmptyString,
    ...fieldsOf(str, 'accent', 'age', 'audio', 'desc', 'gender', 'icon', 'lang'),
    provider: nonEmptyString,
    tags: stringList,
  },
  ['id', 'name'],
);

const ttsParams: Schema = closedObject({
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
  audio_formats: stringList,
  ...fieldsOf(uniqueIntegers, 'sample_rates', 'opus_sample_rates', 'bit_rates'),
  volume_range: closedObject(
    { min: nonNegativeNumber, max: nonNegativeNumber, step: { type: 'number', exclusiveMinimum: 0 } },
    ['min', 'max', 'step'],
  ),
});

const speechSynthesisFields: Record<string, Schema> = {
  // "false, or an object": branch on the JSON type so an object gets the object's errors.
  tts_params: {
    if: { type: 'boolean' },
    then: { const: false, 'x-messages': { const: 'must be false or an object' } },
    else: { ...ttsParams, 'x-messages': { type: 'must be false or an object' } },
  },
  ...fieldsOf(str, 'voice_compatibility_group', 'default_voice_id', 'resource_id'),
  voices: { type: 'array', items: voice },
};

const audioLimits: Schema = closedObject(
  {
    formats: stringList,
    max_duration_seconds: nonNegativeNumber,
    max_size_mb: nonNegativeNumber,
    min_duration_seconds: { type: 'number' },
  },
  ['formats', 'max_duration_seconds', 'max_size_mb'],
);

const voiceCloneFields: Record<string, Schema> = {
  preview_models: stringList,
  prompt_audio: audioLimits,
  source_audio: audioLimits,
};

const vectorizeFields: Record<string, Schema> = {
  ...booleans('async_task', 'support_base64_input', 'support_url_input', 'supports_extra_format_download', 'supports_preview'),
  ...fieldsOf(stringList, 'cleanup_levels', 'input_format_allowed', 'output_format_allowed'),
  max_colors_options: uniqueIntegers,
};

const videoEnhanceFields: Record<string, Schema> = {
  ...booleans('async_task', 'input_video_required', 'preserve_audio'),
  ...fieldsOf(stringList, 'input_resolutions', 'operations', 'output_resolutions'),
  max_file_size_mb: nonNegativeNumber,
};

const FIELDS_BY_KIND: Record<CapabilitySchemaKind, Record<string, Schema>> = {
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

/** The schema of one capability value: its kind's fields plus `type` equal to its own key. */
function capabilitySchema(name: CapabilityName): Schema {
  return closedObject(
    {
      type: { const: name, 'x-messages': { const: `must be "${name}", the capability's own key` } },
      ...FIELDS_BY_KIND[CAPABILITY_SCHEMA_KIND[name]],
    },
    ['type'],
  );
}

const capabilityNameSchema: Schema = {
  enum: [...CAPABILITY_NAMES],
  'x-messages': { enum: 'is not a capability name' },
};

/** The whole catalog file (spec document 3, "Catalog file"). */
export const catalogSchema: Schema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  title: 'Gengate model catalog',
  ...closedObject(
    {
      schemaVersion: { const: 1 },
      providers: {
        type: 'array',
        minItems: 1,
        items: closedObject(
          { code: nonEmptyString, name: nonEmptyString, displayName: nonEmptyString, iconPath: nonEmptyString },
          ['code', 'name', 'displayName'],
        ),
      },
      baseModels: {
        type: 'array',
        minItems: 1,
        items: closedObject(
          {
            catalogKey: {
              type: 'string',
              pattern: '^base:(runtime|seed):.+$',
              'x-messages': { pattern: 'must look like base:runtime:<text> or base:seed:<text>' },
            },
            seedKey: nonEmptyString,
            providerCode: nonEmptyString,
            displayName: nonEmptyString,
            alias: nonEmptyString,
            defaultRealModelName: nonEmptyString,
            modelTypes: { type: 'array', minItems: 1, uniqueItems: true, items: capabilityNameSchema },
            iconPath: nonEmptyString,
            description: nonEmptyString,
            capabilities: {
              type: 'object',
              minProperties: 1,
              properties: Object.fromEntries(CAPABILITY_NAMES.map((n) => [n, capabilitySchema(n)])),
              additionalProperties: false,
              'x-messages': { additionalProperties: 'unknown key (not a capability name)' },
            },
            status: { enum: [...MODEL_STATUSES] },
          },
          ['catalogKey', 'providerCode', 'displayName', 'alias', 'defaultRealModelName', 'modelTypes', 'capabilities', 'status'],
        ),
      },
    },
    ['schemaVersion', 'providers', 'baseModels'],
  ),
};

// ---- validation and error wording -----------------------------------------------------------

// The conditional draft rules name properties and `required` without restating the type, which
// the strictRequired/strictTypes checks would refuse; everything else stays strict.
const ajv = new Ajv2020({ allErrors: true, verbose: true, strict: true, strictRequired: false, strictTypes: false });
ajv.addKeyword({ keyword: 'x-messages', schemaType: 'object' });
const validateAgainstSchema = ajv.compile(catalogSchema);

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
  const custom = (err.parentSchema as Schema | undefined)?.['x-messages'] as Record<string, string> | undefined;
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
