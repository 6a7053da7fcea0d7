/**
 * Checks an edit request against its model, its source history and the 3D edit
 * tables. Answers the task input: the request without `model`, normalized (defaults, aliases
 * such as enable_texture folded into texture), plus `source` describing the history edited.
 */
import type { LiveModel, MeshEditOperation } from '../catalog/catalog.ts';
import { ApiError } from '../core/errors.ts';
import {
  CONVERT_FORMATS,
  EDIT_RULES,
  LOWPOLY_FACE_LEVELS,
  LOWPOLY_FACE_LIMITS,
  RIGGING_VERSIONS,
  UNRIGGED_FORMATS,
  convertTextureSize,
  type SourceFacts,
} from './mesh3d-edit-rules.ts';
import { FOUR_VIEWS, type Range } from './mesh3d-generation-rules.ts';
import { resolveImage, resolveViews, type FileSourceLookup, type ImageLimits } from './mesh3d-image-inputs.ts';
import type { EditOperation, EditTaskSource, FileObject, TexturePrompt } from './mesh3d.ts';

type Input = Record<string, unknown>;

/** The history an edit works on, as far as the rules need it. */
export interface EditSource extends SourceFacts {
  id: string;
  taskId: string;
  /** Alias of the model that made it (retargeting defaults to the rig's model). */
  model: string;
  /** `blake3:<hex>` of its model file. */
  modelRef: string;
  parts?: string[];
  upstream?: Record<string, unknown>;
  /** The task input of the source (a convert of a convert keeps the earlier options). */
  taskInput: Input;
}

export interface EditCheck {
  ownerId: string;
  files: FileSourceLookup;
}

interface OperationContext {
  model: LiveModel;
  source: EditSource;
  operation: MeshEditOperation;
  check: EditCheck;
}


/** The operation entry of the model's mesh_edit capability, or 400 model_capability_mismatch. */
export function editOperationOf(model: LiveModel, op: EditOperation): MeshEditOperation {
  const entry = model.capabilities.mesh_edit?.supported_operations?.[op];
  if (entry?.supported !== true) {
    throw new ApiError('model_capability_mismatch', `model ${model.alias} does not support the ${op} operation; choose a model whose mesh_edit capability declares it`, 'model');
  }
  return entry;
}

function checkFormat(value: unknown, param: string, supported: string[] | undefined): void {
  if (supported && !supported.some((f) => f.toLowerCase() === String(value).toLowerCase())) {
    throw new ApiError('invalid_parameter', `${param} must be one of ${supported.join(', ')} for this model`, param);
  }
}

/** topology wins over the legacy quad switch; both are passed on, agreeing. */
function foldTopology(input: Input): void {
  const topology = input.topology ?? (input.quad === true ? 'quad' : 'triangle');
  input.topology = topology;
  input.quad = topology === 'quad';
}

function smartLowpoly(input: Input, { model }: OperationContext): void {
  foldTopology(input);
  const value = input.face_limit;
  if (value === undefined || value === 'auto') {
    delete input.face_limit;
    return;
  }
  const familyA = model.providerCode === 'hunyuan';
  if (typeof value === 'string') {
    if (familyA && LOWPOLY_FACE_LEVELS.includes(value)) return;
    throw new ApiError('face_limit_out_of_range', `face_limit must be an integer or auto${familyA ? ', high, medium or low' : ''} for model ${model.alias}`, 'face_limit');
  }
  const [min, max]: Range = familyA ? [1, Number.MAX_SAFE_INTEGER] : LOWPOLY_FACE_LIMITS[input.topology as 'triangle' | 'quad'];
  if (typeof value !== 'number' || value < min || value > max) {
    throw new ApiError('face_limit_out_of_range', `face_limit must be between ${min} and ${max} for ${String(input.topology)} re-topology, or auto`, 'face_limit');
  }
}

/** The texture prompt modes (supported_texture_prompt_modes) a texture prompt uses: text, image, view_images. */
export function texturePromptModes(prompt: Pick<TexturePrompt, 'text' | 'image' | 'view_images' | 'images'>): string[] {
  return [
    prompt.text !== undefined ? 'text' : undefined,
    prompt.image !== undefined ? 'image' : undefined,
    prompt.view_images !== undefined || prompt.images ? 'view_images' : undefined,
  ].filter((m): m is string => m !== undefined);
}

const TEXTURE_IMAGE: ImageLimits = { sides: [20, 6000] };
const STYLE_IMAGE: ImageLimits = { mimeTypes: ['image/jpeg', 'image/png'] };

async function texture(input: Input, { model, operation, check }: OperationContext): Promise<void> {
  input.texture = input.texture ?? input.enable_texture ?? true;
  input.pbr = input.pbr ?? input.enable_pbr ?? true;
  delete input.enable_texture;
  delete input.enable_pbr;
  const quality = input.texture_quality ?? 'standard';
  if (input.texture === false && input.pbr === false) {
    if (quality === 'standard') throw new ApiError('invalid_parameter', 'with texture_quality standard, texture and pbr cannot both be false', 'texture');
    if (!model.defaultRealModelName.startsWith('v3.0')) {
      throw new ApiError('invalid_parameter', 'detailed quality with texture and pbr false (4K upscaling) needs the 3.0 texture model', 'texture_quality');
    }
  }
  const prompt = input.texture_prompt as TexturePrompt | undefined;
  if (!prompt) return;
  const modes = texturePromptModes(prompt);
  if (modes.length > 1) throw new ApiError('invalid_parameter', `texture_prompt takes one of text, image or view_images, not ${modes.join(' and ')}`, 'texture_prompt');
  const allowed = operation.supported_texture_prompt_modes;
  const mode = modes[0];
  if (mode && allowed && !allowed.includes(mode)) {
    throw new ApiError('unsupported_parameter', `model ${model.alias} does not take texture_prompt.${mode} (only ${allowed.join(', ')})`, `texture_prompt.${mode}`);
  }
  const resolve = (limits: ImageLimits) => (file: FileObject, param: string) => resolveImage(file, param, check.ownerId, check.files, limits);
  const { images: legacy, ...rest } = prompt;
  const normalized: Input = { ...rest };
  if (prompt.image) normalized.image = await resolve(TEXTURE_IMAGE)(prompt.image, 'texture_prompt.image');
  if (prompt.style_image) normalized.style_image = await resolve(STYLE_IMAGE)(prompt.style_image, 'texture_prompt.style_image');
  if (mode === 'view_images') {
    normalized.view_images = await resolveViews(prompt.view_images, { param: 'texture_prompt.images', slots: legacy }, 'texture_prompt.view_images', { min: 2, max: 4, types: FOUR_VIEWS }, resolve({}));
  }
  input.texture_prompt = normalized;
}

/** Fields of a convert request besides the ones that say what to convert. */
const CONVERT_CARRIED_EXCLUDED = new Set(['history_id', 'format', 'source', 'texture_format']);

function convert(input: Input, { source, operation }: OperationContext): EditTaskSource | void {
  let sourceOverride: EditTaskSource | undefined;
  if (source.operation === 'convert') {
    // Converting a converted result only changes the format: the earlier options and model stay.
    const extra = Object.keys(input).find((k) => k !== 'history_id' && k !== 'format');
    if (extra) throw new ApiError('unsupported_parameter', 'converting a converted result only changes format; omit the other options', extra);
    for (const [key, value] of Object.entries(source.taskInput)) if (!CONVERT_CARRIED_EXCLUDED.has(key)) input[key] = value;
    const earlier = source.taskInput.source as EditTaskSource;
    sourceOverride = { ...earlier, history_id: source.id, operation: source.operation };
  }
  const format = String(input.format).toUpperCase();
  if (!(CONVERT_FORMATS as readonly string[]).includes(format)) {
    throw new ApiError('invalid_parameter', `format must be one of ${CONVERT_FORMATS.join(', ')}`, 'format');
  }
  input.format = format;
  checkFormat(format, 'format', operation.supported_formats);
  if (UNRIGGED_FORMATS.includes(format) && source.rig) {
    throw new ApiError('invalid_parameter', `${format} cannot hold a rigged model; choose FBX, GLTF or USDZ`, 'format');
  }
  if (sourceOverride) {
    // Options that do not apply to the new format are dropped rather than refused: the caller did not send them.
    for (const mode of EDIT_RULES.convert.modeFields ?? []) if (!mode.when(input)) delete input[mode.field];
  }
  foldTopology(input);
  const faceLimit = input.face_limit;
  if (faceLimit !== undefined && (typeof faceLimit !== 'number' || faceLimit < 1)) {
    throw new ApiError('face_limit_out_of_range', 'face_limit must be a positive integer (default 10000)', 'face_limit');
  }
  const ceiling = convertTextureSize(source.base);
  if (typeof input.texture_size === 'number' && input.texture_size > ceiling) {
    throw new ApiError('invalid_parameter', `texture_size cannot exceed ${ceiling} for this model`, 'texture_size');
  }
  input.texture_size ??= ceiling;
  return sourceOverride;
}

function rig(input: Input, { model, operation }: OperationContext): void {
  checkFormat(input.out_format ?? 'glb', 'out_format', operation.supported_formats);
  const given = input.rigging_model_version as string | undefined;
  const version = given ?? model.defaultRealModelName;
  const param = given !== undefined ? 'rigging_model_version' : 'model';
  const known = RIGGING_VERSIONS[version];
  if (!known) {
    throw new ApiError('invalid_rigging_model_version', `${version} is not a rigging algorithm version (use one of ${Object.keys(RIGGING_VERSIONS).join(', ')}), not a generation model version`, param);
  }
  if (known.bipedOnly && (input.rig_type ?? 'biped') !== 'biped') {
    throw new ApiError('invalid_rigging_model_version', `${version} rigs bipeds only`, param);
  }
  input.rigging_model_version = version;
}

function retargetAnimation(input: Input, { operation }: OperationContext): void {
  checkFormat(input.out_format ?? 'glb', 'out_format', operation.supported_formats);
  const one = input.animation as string | undefined;
  const many = input.animations as string[] | undefined;
  if (one !== undefined && many !== undefined) throw new ApiError('invalid_parameter', 'send animation or animations, not both', 'animations');
  if (one === undefined && many === undefined) throw new ApiError('empty_animation', 'animation or animations needs at least one preset id', 'animation');
  if (one !== undefined && one.trim() === '') throw new ApiError('empty_animation', 'animation cannot be empty', 'animation');
  if (many !== undefined) {
    if (many.length === 0) throw new ApiError('empty_animation', 'animations needs 1 to 5 preset ids', 'animations');
    const blank = many.findIndex((a) => a.trim() === '');
    if (blank >= 0) throw new ApiError('empty_animation', 'animation preset ids cannot be empty', `animations[${blank}]`);
  }
  input.animations = (many ?? [one!]).map((a) => a.trim());
  delete input.animation;
}

/** Every text value in a saved upstream reference (ids may sit a level or two down). */
function textsOf(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  return value && typeof value === 'object' ? Object.values(value).flatMap(textsOf) : [];
}

function refine(input: Input, { source }: OperationContext): void {
  const given = input.draft_model_task_id as string | undefined;
  if (given === undefined) return;
  if (given !== source.taskId && !textsOf(source.upstream).includes(given)) {
    throw new ApiError('invalid_parameter', 'draft_model_task_id must be the draft task of history_id', 'draft_model_task_id');
  }
}

/** Operation-specific checks and normalization; a convert of a convert answers the source it really works on. */
const OPERATION_CHECKS: Partial<Record<EditOperation, (input: Input, ctx: OperationContext) => void | EditTaskSource | Promise<void>>> = {
  smart_lowpoly: smartLowpoly,
  texture,
  convert,
  rig,
  retarget_animation: retargetAnimation,
  refine,
};

/** `operation` is the model's entry for `op` (editOperationOf), checked before the source is looked up. */
export async function validateEdit(op: EditOperation, body: Input, model: LiveModel, operation: MeshEditOperation, source: EditSource, check: EditCheck): Promise<Input> {
  const rule = EDIT_RULES[op];
  if (!rule.sources.includes(source.operation)) {
    throw new ApiError('history_source_unsupported', `${op} cannot work on the result of ${source.operation} (it takes ${rule.sources.join(', ')})`, 'history_id');
  }
  const refusal = rule.refuseSource?.(source);
  if (refusal) throw new ApiError('history_source_unsupported', refusal, 'history_id');

  const { model: _alias, ...input } = body;
  const taskSource = (await OPERATION_CHECKS[op]?.(input, { model, source, operation, check })) ?? {
    history_id: source.id,
    operation: source.operation,
    model: source.modelRef,
    ...(source.parts ? { parts: source.parts } : {}),
    ...(source.rig ? { rig: source.rig } : {}),
    ...(source.upstream ? { upstream: source.upstream } : {}),
  };
  for (const mode of rule.modeFields ?? []) {
    if (input[mode.field] !== undefined && !mode.when(input)) {
      throw new ApiError('unsupported_parameter', `${mode.field} applies only with ${mode.mode}; omit it`, mode.field);
    }
  }
  const partNames = input.part_names as string[] | undefined;
  if (rule.partNames && partNames !== undefined) {
    if (!source.parts?.length) throw new ApiError('invalid_parameter', 'the source has no parts; segment it first', 'part_names');
    const unknown = partNames.filter((p) => !source.parts!.includes(p));
    if (unknown.length > 0) throw new ApiError('invalid_parameter', `unknown parts ${unknown.join(', ')} (the source has ${source.parts.join(', ')})`, 'part_names');
  }
  const defaults = typeof rule.defaults === 'function' ? rule.defaults(input) : (rule.defaults ?? {});
  for (const [field, value] of Object.entries(defaults)) input[field] ??= value;
  input.source = taskSource;
  return input;
}
