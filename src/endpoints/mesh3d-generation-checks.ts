/**
 * Checks a generation request against its model: the model's live capabilities where they
 * speak, the 3D family tables where they are silent. Answers the
 * task input: the request without `model`, files resolved, the family's defaults applied.
 */
import type { LiveModel, Model3dCapabilityFields } from '../catalog/catalog.ts';
import type { CapabilityName } from '../catalog/schema.ts';
import { ApiError } from '../core/errors.ts';
import {
  CAPABILITY_FLAGS,
  CAPABILITY_OPTIONS,
  FACE_LIMIT_CAPABILITIES,
  GENERATION_FIELDS,
  PROMPT_LIMITS,
  familyRulesOf,
  type FaceLimitTable,
  type FamilyRules,
  type GenerationField,
  type Range,
  type Topology,
  type ViewRule,
} from './mesh3d-generation-rules.ts';
import { resolveImage, resolveViews, type FileSourceLookup, type ImageLimits } from './mesh3d-image-inputs.ts';
import { familyOf } from './mesh3d-family.ts';
import type { GenerateImageBody, GenerateMultiviewBody, GenerateTextBody, GenerationBody, GenerationKind } from './mesh3d.ts';

/** The capability a generation kind needs. */
export const GENERATION_CAPABILITY = {
  text: 'text_to_model',
  image: 'image_to_model',
  multiview: 'multiview_to_model',
} as const satisfies Record<GenerationKind, CapabilityName>;

export interface GenerationCheck {
  ownerId: string;
  files: FileSourceLookup;
}

type Input = Record<string, unknown>;

/** Whether the model takes a field: its capability flag or option list when set, else the family table. */
export function supportsField(field: GenerationField, caps: Model3dCapabilityFields, rules: FamilyRules): boolean {
  if (field === 'face_limit' && FACE_LIMIT_CAPABILITIES.some((k) => caps[k] !== undefined)) return true;
  const flag = CAPABILITY_FLAGS[field];
  if (flag && caps[flag] !== undefined) return caps[flag] === true;
  const options = CAPABILITY_OPTIONS[field];
  const list = options ? caps[options.key] : undefined;
  if (options?.grantsSupport && Array.isArray(list)) return list.length > 0;
  if (rules.onlyWithCapability?.includes(field)) return false;
  return rules.fields.includes(field);
}

function characters(text: string): number {
  return [...text].length;
}

/**
 * The face-limit range for the request's topology, geometry quality and smart low-poly setting:
 * the documented smart-low-poly ranges first, then the capabilities (by topology, then general),
 * then the family table; the quality maximum replaces the maximum.
 */
export function faceLimitRange(caps: Model3dCapabilityFields, table: FaceLimitTable | undefined, topology: Topology, quality: string, smartLowPoly: boolean): Range | undefined {
  if (smartLowPoly && table?.smartLowPoly) return table.smartLowPoly[topology];
  const byTopology = caps.face_limit_range_by_topology?.[topology];
  const general = caps.face_limit_range;
  let range: Range | undefined = byTopology ? [byTopology.min, byTopology.max] : general ? [general.min, general.max] : table?.standard[topology];
  if (!range) return undefined;
  const qualityMax = caps.face_limit_by_geometry_quality?.[quality]?.[topology] ?? (quality === 'detailed' ? table?.detailedMax?.[topology] : undefined);
  if (qualityMax !== undefined) range = [range[0], qualityMax];
  const capMax = topology === 'quad' ? caps.max_face_limit_quad : caps.max_face_limit;
  if (capMax !== undefined && capMax < range[1]) range = [range[0], capMax];
  return range;
}

function checkFaceLimit(input: Input, caps: Model3dCapabilityFields, rules: FamilyRules): void {
  const value = input.face_limit;
  if (value === undefined) return;
  // A v3.0's low-poly mode ignores face_limit: it is not passed on.
  if (rules.lowPolyMode && input.smart_low_poly === true) {
    delete input.face_limit;
    return;
  }
  if (typeof value !== 'number') {
    throw new ApiError('face_limit_out_of_range', 'face_limit must be an integer; omit it to let the model choose (never 0 or auto)', 'face_limit');
  }
  const topology = (input.topology as Topology | undefined) ?? 'triangle';
  const quality = (input.geometry_quality as string | undefined) ?? 'standard';
  const lowPoly = input.smart_low_poly === true;
  const [min, max] = faceLimitRange(caps, rules.faceLimit, topology, quality, lowPoly) ?? [1, Number.MAX_SAFE_INTEGER];
  if (value < min || value > max) {
    const condition = lowPoly ? `${topology}, smart_low_poly` : `${topology}, geometry_quality ${quality}`;
    throw new ApiError('face_limit_out_of_range', `face_limit must be between ${min} and ${max} for this model (${condition}); omit it to let the model choose`, 'face_limit');
  }
}

/** Texture and PBR dependencies, generate_parts exclusions and the family's defaults. */
function checkTexture(input: Input, caps: Model3dCapabilityFields, rules: FamilyRules, supported: (f: GenerationField) => boolean): void {
  if (input.generate_parts === true) {
    if (input.enable_texture === true) throw new ApiError('invalid_parameter', 'generate_parts excludes texture: omit enable_texture or set it false', 'enable_texture');
    if (input.enable_pbr === true) throw new ApiError('invalid_parameter', 'generate_parts excludes PBR: omit enable_pbr or set it false', 'enable_pbr');
    if (input.topology === 'quad') throw new ApiError('invalid_parameter', 'generate_parts excludes quad topology', 'topology');
  }
  if (input.enable_pbr === true && input.enable_texture === false) {
    if (rules.pbrWithoutTexture === 'requires_texture') throw new ApiError('invalid_parameter', 'enable_pbr true requires texture: enable_texture cannot be false', 'enable_pbr');
    input.enable_texture = true;
  }
  if (caps.pbr_required_when_texture === true && input.enable_texture !== false && input.enable_pbr === false) {
    throw new ApiError('invalid_parameter', 'this model needs PBR while texture is on', 'enable_pbr');
  }
  if (input.texture_delight === true && input.enable_texture === false) {
    throw new ApiError('invalid_parameter', 'texture_delight needs texture enabled', 'texture_delight');
  }
  const defaults: Input = { ...rules.defaults, ...(input.generate_parts === true ? { enable_texture: false, enable_pbr: false } : {}) };
  for (const [field, value] of Object.entries(defaults)) {
    if (input[field] === undefined && supported(field as GenerationField)) input[field] = value;
  }
}

/** The views a model takes: its capabilities' multiview fields where set, else its family's. */
export function viewRuleOf(caps: Model3dCapabilityFields, family: ViewRule): ViewRule {
  const mv = caps.multiview_input;
  const capsRequired = [...(caps.multiview_required_slots ?? []), ...(mv?.views.filter((v) => v.required).map((v) => v.type) ?? [])];
  const speaksOfRequired = caps.multiview_required_slots !== undefined || mv?.views.some((v) => v.required !== undefined);
  return {
    min: mv?.min_images ?? caps.multiview_min_images ?? family.min,
    max: mv?.max_images ?? caps.multiview_max_images ?? family.max,
    types: mv?.views.map((v) => v.type) ?? family.types,
    required: speaksOfRequired ? capsRequired : (family.required ?? []),
  };
}

function imageLimitsOf(caps: Model3dCapabilityFields, rules: FamilyRules): ImageLimits {
  const constraints = caps.multiview_input?.file_constraints;
  const sides: Range | undefined = constraints?.min_side !== undefined || constraints?.max_side !== undefined
    ? [constraints.min_side ?? 1, constraints.max_side ?? Number.MAX_SAFE_INTEGER]
    : rules.imageSides;
  return {
    ...(constraints?.allowed_mime_types ?? rules.imageMimeTypes ? { mimeTypes: constraints?.allowed_mime_types ?? rules.imageMimeTypes } : {}),
    ...(sides ? { sides } : {}),
    publicUrlOnly: caps.support_public_image_url_only === true,
  };
}

export async function validateGeneration(kind: GenerationKind, body: GenerationBody, model: LiveModel, check: GenerationCheck): Promise<Input> {
  const caps: Model3dCapabilityFields = model.capabilities[GENERATION_CAPABILITY[kind]] ?? {};
  const rules = familyRulesOf(familyOf(model));
  const supported = (field: GenerationField) => supportsField(field, caps, rules);
  const { model: _alias, ...input } = body as Input;

  for (const field of GENERATION_FIELDS) {
    if (input[field] !== undefined && !supported(field)) {
      throw new ApiError('unsupported_parameter', `model ${model.alias} does not support ${field}; omit it`, field);
    }
  }
  for (const [field, options] of Object.entries(CAPABILITY_OPTIONS)) {
    const value = input[field];
    if (value === undefined) continue;
    const allowed = (caps[options.key] as string[] | undefined) ?? (field === 'geometry_instruct_mode' ? rules.geometryInstructModes : undefined);
    if (allowed && !allowed.includes(value as string)) {
      throw new ApiError('invalid_parameter', `${field} must be one of ${allowed.join(', ')} for model ${model.alias}`, field);
    }
  }
  if (rules.lowPolyMode && input.topology !== undefined && input.smart_low_poly !== true) {
    throw new ApiError('unsupported_parameter', `model ${model.alias} takes topology only together with smart_low_poly`, 'topology');
  }
  if (kind === 'text') {
    const text = body as GenerateTextBody;
    for (const field of ['prompt', 'negative_prompt'] as const) {
      const value = text[field];
      if (value !== undefined && characters(value) > PROMPT_LIMITS[field]) {
        throw new ApiError('prompt_too_long', `${field} is limited to ${PROMPT_LIMITS[field]} characters`, field);
      }
    }
  }
  checkTexture(input, caps, rules, supported);
  checkFaceLimit(input, caps, rules);

  const limits = imageLimitsOf(caps, rules);
  const resolve = (file: Parameters<typeof resolveImage>[0], param: string) => resolveImage(file, param, check.ownerId, check.files, limits);
  if (kind === 'image') input.file = await resolve((body as GenerateImageBody).file, 'file');
  if (kind === 'multiview') {
    const mv = body as GenerateMultiviewBody;
    input.view_images = await resolveViews(mv.view_images, { param: 'files', slots: mv.files }, 'view_images', viewRuleOf(caps, rules.views), resolve);
    delete input.files;
  }
  return input;
}
