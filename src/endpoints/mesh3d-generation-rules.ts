/**
 * Spec document 2's generation tables as data: which fields each family accepts, its face-limit
 * ranges, view sets, texture rules and defaults. validate-generation.ts reads them, after the
 * model's capabilities, which win wherever they speak.
 */
import type { Model3dCapabilityFields } from '../catalog/schema.ts';
import type { FamilyKey, Mesh3dFamily, RodinTier } from './mesh3d-family.ts';

/** Optional generation fields of the three generation bodies, checked against the model. */
export const GENERATION_FIELDS = [
  'enable_texture', 'enable_pbr', 'geometry_quality', 'texture_quality', 'topology', 'smart_low_poly', 'generate_parts',
  'seed', 'texture_seed', 'auto_size', 'export_uv', 'negative_prompt', 'image_seed', 'geometry_file_format', 't_pose',
  'texture_delight', 'geometry_instruct_mode', 'is_micro', 'face_limit', 'enable_image_autofix', 'texture_alignment', 'orientation',
] as const;
export type GenerationField = (typeof GENERATION_FIELDS)[number];

export type Topology = 'triangle' | 'quad';
export type Range = readonly [min: number, max: number];

export interface FaceLimitTable {
  /** Range per topology at standard (or unset) geometry quality; a missing topology has no range here. */
  standard: Partial<Record<Topology, Range>>;
  /** Maximum per topology at detailed geometry quality (the minimum stays the topology's). */
  detailedMax?: Partial<Record<Topology, number>>;
  /** Ranges with smart_low_poly on; they win over the quality ranges. */
  smartLowPoly?: Record<Topology, Range>;
}

export const VIEW_TYPES = ['front', 'left_front', 'right_front', 'left', 'right', 'back', 'top', 'bottom'] as const;
/** Family C's four-view semantics, also the order of the legacy four-slot `files` array. */
export const FOUR_VIEWS = ['front', 'left', 'back', 'right'] as const;

export interface ViewRule {
  min: number;
  max: number;
  types: readonly string[];
  /** Views that must be present besides front (which always must). */
  required?: readonly string[];
}

export interface FamilyRules {
  /** Fields the family accepts (before capability flags). */
  fields: readonly GenerationField[];
  /** Fields accepted only when the model's capability flag says true (e.g. legacy C "with quad"). */
  onlyWithCapability?: readonly GenerationField[];
  faceLimit?: FaceLimitTable;
  views: ViewRule;
  /**
   * What enable_pbr true with enable_texture false means: refused (`requires_texture`), or PBR
   * turns colour texture on (family C).
   */
  pbrWithoutTexture: 'requires_texture' | 'enables_texture';
  defaults?: Partial<Record<GenerationField, unknown>>;
  /** A v3.0: topology only together with smart_low_poly, which also makes face_limit ignored. */
  lowPolyMode?: boolean;
  geometryInstructModes?: readonly string[];
  /** Mime types allowed for input images when the capabilities name none. */
  imageMimeTypes?: readonly string[];
  imageSides?: Range;
}

const TEXTURE: readonly GenerationField[] = ['enable_texture', 'enable_pbr'];
const C_COMMON: readonly GenerationField[] = [
  ...TEXTURE, 'texture_quality', 'seed', 'texture_seed', 'auto_size', 'export_uv', 'negative_prompt', 'image_seed', 'face_limit',
  'enable_image_autofix', 'texture_alignment', 'orientation',
];
const B_FIELDS: readonly GenerationField[] = [...TEXTURE, 'texture_quality', 'topology', 'seed', 'geometry_file_format', 't_pose', 'face_limit'];

const ALL_VIEWS: ViewRule = { min: 2, max: 8, types: VIEW_TYPES };
const C_VIEWS: ViewRule = { min: 2, max: 4, types: FOUR_VIEWS };
const D_VIEWS: ViewRule = { min: 4, max: 4, types: FOUR_VIEWS, required: FOUR_VIEWS };

const A_PRO_FACES: FaceLimitTable = { standard: { triangle: [3000, 1_500_000], quad: [3000, 1_500_000] } };
const C_H_FACES: FaceLimitTable = {
  standard: { triangle: [1000, 1_000_000], quad: [1000, 500_000] },
  detailedMax: { triangle: 2_000_000, quad: 1_000_000 },
  smartLowPoly: { triangle: [1000, 20_000], quad: [500, 10_000] },
};
const C_LEGACY_FACES: FaceLimitTable = { standard: { triangle: [1000, 1_000_000], quad: [1000, 500_000] } };
const C_P1_FACES: FaceLimitTable = { standard: { triangle: [48, 20_000] } };
const B_LOW_FACES: FaceLimitTable = { standard: { triangle: [500, 1_000_000], quad: [1000, 200_000] } };
const B_HIGH_FACES: FaceLimitTable = { standard: { triangle: [20_000, 2_000_000], quad: [1000, 200_000] } };

/** Input images of family C: JPEG or PNG, 20 to 6000 pixels a side (upstream limits). */
const C_IMAGES = { imageMimeTypes: ['image/jpeg', 'image/png'], imageSides: [20, 6000] as Range };

const FAMILY_RULES: Record<FamilyKey, FamilyRules> = {
  'A-pro-3.0': { fields: [...TEXTURE, 'topology', 'smart_low_poly', 'face_limit'], faceLimit: A_PRO_FACES, views: C_VIEWS, pbrWithoutTexture: 'requires_texture', lowPolyMode: true },
  'A-pro-3.1': { fields: [...TEXTURE, 'face_limit'], faceLimit: A_PRO_FACES, views: ALL_VIEWS, pbrWithoutTexture: 'requires_texture' },
  'A-fast': { fields: TEXTURE, views: C_VIEWS, pbrWithoutTexture: 'requires_texture' },
  'B-2': { fields: B_FIELDS, views: { min: 2, max: 5, types: VIEW_TYPES }, pbrWithoutTexture: 'requires_texture', defaults: { geometry_file_format: 'glb' } },
  'B-2.5': {
    fields: [...B_FIELDS, 'texture_delight', 'geometry_instruct_mode', 'is_micro'],
    views: { min: 2, max: 5, types: VIEW_TYPES },
    pbrWithoutTexture: 'requires_texture',
    defaults: { geometry_file_format: 'glb' },
  },
  'C-H': {
    fields: [...C_COMMON, 'geometry_quality', 'topology', 'smart_low_poly', 'generate_parts'],
    faceLimit: C_H_FACES,
    views: C_VIEWS,
    pbrWithoutTexture: 'enables_texture',
    defaults: { enable_texture: true, enable_pbr: false },
    ...C_IMAGES,
  },
  'C-P1': { fields: C_COMMON, faceLimit: C_P1_FACES, views: C_VIEWS, pbrWithoutTexture: 'enables_texture', defaults: { enable_texture: true, enable_pbr: false }, ...C_IMAGES },
  'C-legacy': {
    fields: [...C_COMMON, 'topology', 'generate_parts'],
    onlyWithCapability: ['topology', 'generate_parts'],
    faceLimit: C_LEGACY_FACES,
    views: C_VIEWS,
    pbrWithoutTexture: 'enables_texture',
    defaults: { enable_texture: true, enable_pbr: false },
    ...C_IMAGES,
  },
  'D-3.1': { fields: [...TEXTURE, 'geometry_quality', 'texture_quality'], views: D_VIEWS, pbrWithoutTexture: 'requires_texture' },
  'D-P1': { fields: [...TEXTURE, 'texture_quality'], views: D_VIEWS, pbrWithoutTexture: 'requires_texture' },
  generic: { fields: GENERATION_FIELDS, views: ALL_VIEWS, pbrWithoutTexture: 'requires_texture' },
};

/** B by tier: face ranges, instruct modes (generation 2.5) and micro detail (2.5 Extra-High only). */
const RODIN_TIERS: Record<RodinTier, { faceLimit: FaceLimitTable; instructModes: readonly string[]; micro: boolean }> = {
  'extra-low': { faceLimit: B_LOW_FACES, instructModes: ['faithful'], micro: false },
  low: { faceLimit: B_LOW_FACES, instructModes: ['faithful'], micro: false },
  medium: { faceLimit: B_LOW_FACES, instructModes: ['faithful', 'creative'], micro: false },
  high: { faceLimit: B_HIGH_FACES, instructModes: ['faithful', 'creative'], micro: false },
  'extra-high': { faceLimit: B_HIGH_FACES, instructModes: ['faithful', 'creative'], micro: true },
};

/** The rules of a family, with B's tier folded in. */
export function familyRulesOf(family: Mesh3dFamily): FamilyRules {
  const rules = FAMILY_RULES[family.key];
  if (family.letter !== 'B' || !family.tier) return rules;
  const tier = RODIN_TIERS[family.tier];
  return {
    ...rules,
    fields: rules.fields.filter((f) => f !== 'is_micro' || tier.micro),
    faceLimit: tier.faceLimit,
    ...(family.key === 'B-2.5' ? { geometryInstructModes: tier.instructModes } : {}),
  };
}

/** Capability flags that say whether a field is supported; when set they win over the family table. */
export const CAPABILITY_FLAGS: Partial<Record<GenerationField, keyof Model3dCapabilityFields>> = {
  enable_texture: 'support_texture',
  enable_pbr: 'support_pbr',
  topology: 'support_quad',
  smart_low_poly: 'support_smart_low_poly',
  generate_parts: 'support_part_generation',
  export_uv: 'support_export_uv',
  t_pose: 'support_ta_pose',
  texture_delight: 'support_texture_delight',
  is_micro: 'support_micro_detail',
  enable_image_autofix: 'support_image_autofix',
};

/**
 * Capability lists of a field's allowed values; `grantsSupport` when a list also says the model
 * takes the field (output_formats describes every model's output, not this B-only field).
 */
export const CAPABILITY_OPTIONS: Partial<Record<GenerationField, { key: keyof Model3dCapabilityFields; grantsSupport: boolean }>> = {
  geometry_quality: { key: 'geometry_quality_options', grantsSupport: true },
  texture_quality: { key: 'texture_quality_options', grantsSupport: true },
  geometry_instruct_mode: { key: 'geometry_instruct_modes', grantsSupport: true },
  geometry_file_format: { key: 'output_formats', grantsSupport: false },
};

/** Capability fields that describe face limits: any of them means the model takes face_limit. */
export const FACE_LIMIT_CAPABILITIES: readonly (keyof Model3dCapabilityFields)[] = [
  'face_limit_range', 'face_limit_range_by_topology', 'face_limit_by_geometry_quality', 'max_face_limit', 'max_face_limit_quad',
];

/** Prompt limits of the text endpoint, in characters. */
export const PROMPT_LIMITS = { prompt: 1024, negative_prompt: 255 } as const;
