/**
 * Spec document 2's edit tables as data: the sources each operation accepts, fields that only
 * apply in one mode, and defaults. validate-edit.ts reads them.
 */
import type { Mesh3dFamily } from './mesh3d-family.ts';
import type { EditOperation, RigSpec } from './mesh3d.ts';

type Input = Record<string, unknown>;

export const GENERATION_OPERATIONS = ['text', 'image', 'multiview'] as const;
/** Edits whose result is a plain model, usable wherever a generated model is. */
const MODEL_EDITS = ['segmentation', 'completion', 'smart_lowpoly', 'texture', 'refine'] as const;

/** The rig a history carries (spec_a rigs can be retargeted). */
export type { RigSpec };

/** What an edit rule may ask of its source. */
export interface SourceFacts {
  operation: string;
  rig?: RigSpec;
  /** Family of the generation at the root of the source's chain. */
  base: Mesh3dFamily;
}

export interface ModeField {
  field: string;
  when: (input: Input) => boolean;
  /** Says when the field applies, for the error message. */
  mode: string;
}

export interface EditRule {
  /** Operations whose histories this operation accepts as source. */
  sources: readonly string[];
  /** Why a source of an accepted kind is still refused, or undefined. */
  refuseSource?: (source: SourceFacts) => string | undefined;
  /** Fields that only apply in a mode: present outside it they are refused (unsupported_parameter). */
  modeFields?: readonly ModeField[];
  /** Defaults, each applied when absent and its mode (if any) holds. */
  defaults?: Input | ((input: Input) => Input);
  /** part_names must name parts of the source. */
  partNames?: boolean;
}

const isQuad = (input: Input) => input.topology === 'quad';

export const EDIT_RULES: Record<EditOperation, EditRule> = {
  segmentation: {
    sources: [...GENERATION_OPERATIONS, 'texture', 'refine', 'smart_lowpoly'],
    refuseSource: (s) => (s.base.letter === 'C' ? undefined : 'segmentation works on family C models only'),
  },
  completion: { sources: ['segmentation'], partNames: true },
  smart_lowpoly: { sources: [...GENERATION_OPERATIONS, ...MODEL_EDITS], partNames: true, defaults: { bake: true } },
  texture: {
    // Segmented results count too: their part names are meant for texturing.
    sources: [...GENERATION_OPERATIONS, 'texture', 'segmentation', 'completion', 'smart_lowpoly'],
    refuseSource: (s) =>
      (GENERATION_OPERATIONS as readonly string[]).includes(s.operation) && s.base.version !== undefined && s.base.version < 2
        ? 'generations of version 1.x do not support texture editing'
        : undefined,
    partNames: true,
    defaults: { texture_quality: 'standard', bake: true },
  },
  convert: {
    sources: [...GENERATION_OPERATIONS, ...MODEL_EDITS, 'rig', 'retarget_animation', 'convert'],
    partNames: true,
    modeFields: [
      { field: 'force_symmetry', when: isQuad, mode: 'quad topology' },
      { field: 'flatten_bottom_threshold', when: (i) => i.flatten_bottom === true, mode: 'flatten_bottom true' },
      { field: 'export_vertex_colors', when: (i) => i.format === 'OBJ' || i.format === 'GLTF', mode: 'format OBJ or GLTF' },
    ],
    defaults: (i) => ({
      face_limit: 10000,
      texture_format: i.format === 'FBX' ? 'PNG' : 'JPEG',
      pivot_to_center_bottom: false,
      scale_factor: 1,
      with_animation: true,
      pack_uv: false,
      bake: true,
      animate_in_place: false,
      export_orientation: '+x',
      ...(i.flatten_bottom === true ? { flatten_bottom_threshold: 0.01 } : {}),
      ...(i.format === 'OBJ' || i.format === 'GLTF' ? { export_vertex_colors: false } : {}),
      ...(i.format === 'FBX' ? { fbx_preset: 'preset_a' } : {}),
    }),
  },
  check_riggable: { sources: [...GENERATION_OPERATIONS, ...MODEL_EDITS] },
  rig: {
    sources: [...GENERATION_OPERATIONS, ...MODEL_EDITS, 'check_riggable'],
    defaults: { out_format: 'glb', rig_type: 'biped', spec: 'spec_a' },
  },
  retarget_animation: {
    sources: ['rig'],
    refuseSource: (s) => (s.rig?.spec === 'spec_a' ? undefined : 'retargeting needs a rig made with spec spec_a'),
    modeFields: [{ field: 'bake_animation', when: (i) => i.out_format === 'glb', mode: 'out_format glb' }],
    defaults: (i) => ({ out_format: 'glb', export_with_geometry: true, animate_in_place: false, ...(i.out_format === 'fbx' ? {} : { bake_animation: true }) }),
  },
  refine: {
    sources: GENERATION_OPERATIONS,
    refuseSource: (s) =>
      s.base.key === 'C-legacy' && s.base.version !== undefined && s.base.version < 2
        ? undefined
        : 'only drafts made before version 2.0-20240919 of family C can be refined',
  },
  stylize: {
    sources: [...GENERATION_OPERATIONS, 'texture', 'refine', 'rig', 'retarget_animation'],
    modeFields: [{ field: 'block_size', when: (i) => i.style === 'blockgame', mode: 'style blockgame' }],
    defaults: (i) => (i.style === 'blockgame' ? { block_size: 80 } : {}),
  },
};

export const CONVERT_FORMATS = ['GLTF', 'USDZ', 'FBX', 'OBJ', 'STL', '3MF'] as const;
/** Formats that cannot hold a skeleton. */
export const UNRIGGED_FORMATS: readonly string[] = ['OBJ', 'STL', '3MF'];

/** Rigging algorithm versions; v1.0 rigs bipeds only. */
export const RIGGING_VERSIONS: Record<string, { bipedOnly: boolean }> = {
  'v2.5-20260210': { bipedOnly: false },
  'v2.0-20250506': { bipedOnly: false },
  'v1.0-20240301': { bipedOnly: true },
};

/** Smart low-poly face limits when the model says nothing narrower. */
export const LOWPOLY_FACE_LIMITS = { triangle: [1000, 20_000], quad: [500, 10_000] } as const;
/** Family A's re-topology also takes these levels. */
export const LOWPOLY_FACE_LEVELS: readonly string[] = ['high', 'medium', 'low'];

/** convert's texture_size default and ceiling: 4096 from version 2.0 on, 2048 before. */
export function convertTextureSize(base: Mesh3dFamily): number {
  return base.version !== undefined && base.version < 2 ? 2048 : 4096;
}
