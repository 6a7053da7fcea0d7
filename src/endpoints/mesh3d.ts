/**
 * Request bodies of the /v1/mesh3d endpoints, one schema per body. The
 * route checks types and enums with them (and documents them in OpenAPI); what depends on the
 * chosen model is checked by the family rules and capabilities afterwards.
 */
import { Type, type Static, type TObject, type TProperties, type TSchema } from 'typebox';
import { SubmitFields } from './submit-fields.ts';

const Quality = Type.Enum(['standard', 'detailed']);
const Topology = Type.Enum(['triangle', 'quad'], { description: 'triangle or quad' });
const PartNames = Type.Array(Type.String({ minLength: 1 }), { description: 'part names from the segmentation result' });
/** Integers, and strings such as `auto`, which the rules refuse or accept per model (face_limit_out_of_range). */
const FaceLimit = (description: string) => Type.Union([Type.Integer(), Type.String()], { description });

export const FileObject = Type.Object({
  url: Type.Optional(Type.String({ minLength: 1, description: 'http(s) URL of the image' })),
  path: Type.Optional(Type.String({ minLength: 1, description: 'a file of this gateway: /files/<id>/<name>, the path of the URL an upload returned' })),
  file_token: Type.Optional(Type.String({ minLength: 1, description: 'content hash blake3:<hex> of one of your assets' })),
  object: Type.Optional(Type.String({ minLength: 1, description: 'id of one of your assets in the asset registry' })),
  originalname: Type.Optional(Type.String()),
  mimetype: Type.Optional(Type.String({ description: 'e.g. image/png; checked against the model\'s allowed types' })),
  width: Type.Optional(Type.Integer({ minimum: 1, description: 'pixels, checked against the model\'s limits' })),
  height: Type.Optional(Type.Integer({ minimum: 1 })),
}, { additionalProperties: false, description: 'an image: at least one of url, path, file_token, object' });
export type FileObject = Static<typeof FileObject>;

export const ViewImage = Type.Object({
  view_type: Type.String({ description: 'front, left_front, right_front, left, right, back, top or bottom; the model decides which' }),
  file: FileObject,
}, { additionalProperties: false });
export type ViewImage = Static<typeof ViewImage>;

/** The discouraged four-slot form: front, left, back, right, null for a missing view. */
const LegacySlots = (description: string) => Type.Union([Type.Array(Type.Union([FileObject, Type.Null()])), Type.Null()], { description });

/** Fields of the common generation table; each is accepted only as far as the model supports it. */
const commonGenerationFields = {
  model: Type.String({ minLength: 1, description: 'platform model alias' }),
  enable_texture: Type.Optional(Type.Boolean()),
  enable_pbr: Type.Optional(Type.Boolean({ description: 'true requires texture' })),
  geometry_quality: Type.Optional(Quality),
  texture_quality: Type.Optional(Quality),
  topology: Type.Optional(Topology),
  smart_low_poly: Type.Optional(Type.Boolean()),
  generate_parts: Type.Optional(Type.Boolean({ description: 'true excludes texture, PBR and quad' })),
  seed: Type.Optional(Type.Integer()),
  texture_seed: Type.Optional(Type.Integer()),
  auto_size: Type.Optional(Type.Boolean()),
  export_uv: Type.Optional(Type.Boolean()),
  geometry_file_format: Type.Optional(Type.Enum(['glb', 'usdz', 'fbx', 'obj', 'stl'], { description: 'default glb' })),
  t_pose: Type.Optional(Type.Boolean()),
  geometry_instruct_mode: Type.Optional(Type.Enum(['faithful', 'creative'])),
  is_micro: Type.Optional(Type.Boolean()),
  face_limit: Type.Optional(FaceLimit('face count within the model\'s range; omit it for automatic (never 0 or auto)')),
};

export const GenerateTextBody = Type.Object({
  ...SubmitFields,
  ...commonGenerationFields,
  prompt: Type.String({ minLength: 1, description: 'up to 1024 characters' }),
  negative_prompt: Type.Optional(Type.String({ description: 'up to 255 characters' })),
  image_seed: Type.Optional(Type.Integer()),
}, { additionalProperties: false });
export type GenerateTextBody = Static<typeof GenerateTextBody>;

export const GenerateImageBody = Type.Object({
  ...SubmitFields,
  ...commonGenerationFields,
  file: FileObject,
  texture_delight: Type.Optional(Type.Boolean({ description: 'needs texture' })),
  enable_image_autofix: Type.Optional(Type.Boolean({ description: 'default false' })),
  texture_alignment: Type.Optional(Type.Enum(['original_image', 'geometry'])),
  orientation: Type.Optional(Type.Enum(['default', 'align_image'])),
}, { additionalProperties: false });
export type GenerateImageBody = Static<typeof GenerateImageBody>;

export const GenerateMultiviewBody = Type.Object({
  ...SubmitFields,
  ...commonGenerationFields,
  view_images: Type.Optional(Type.Array(ViewImage, { description: 'at least 2 images including front, one per view; wins over files' })),
  files: Type.Optional(LegacySlots('legacy: exactly four slots front, left, back, right (null for a missing view)')),
  texture_delight: Type.Optional(Type.Boolean({ description: 'needs texture' })),
}, { additionalProperties: false });
export type GenerateMultiviewBody = Static<typeof GenerateMultiviewBody>;

const historyId = Type.String({ minLength: 1, description: 'mesh3d_history_id or history_id of an earlier call' });
const editModel = Type.String({ minLength: 1, description: 'alias whose mesh_edit capability supports this operation' });
const SegmentationVersion = Type.Enum(['v1.0-20250506'], { description: 'normally omitted' });

export const SegmentationBody = Type.Object({
  ...SubmitFields,
  history_id: historyId,
  model: editModel,
  model_version_seg: Type.Optional(SegmentationVersion),
}, { additionalProperties: false });

export const CompletionBody = Type.Object({
  ...SubmitFields,
  history_id: historyId,
  model: editModel,
  part_names: Type.Array(Type.String({ minLength: 1 }), { minItems: 1, description: 'names from the segmentation result' }),
  model_version_seg: Type.Optional(SegmentationVersion),
}, { additionalProperties: false });

export const SmartLowpolyBody = Type.Object({
  ...SubmitFields,
  history_id: historyId,
  model: editModel,
  topology: Type.Optional(Topology),
  face_limit: Type.Optional(FaceLimit('auto or omitted: adaptive; triangle 1000 to 20000, quad 500 to 10000; family A also high, medium, low')),
  quad: Type.Optional(Type.Boolean({ description: 'legacy switch; topology wins' })),
  part_names: Type.Optional(PartNames),
  bake: Type.Optional(Type.Boolean({ description: 'default true' })),
}, { additionalProperties: false });

export const TexturePrompt = Type.Object({
  text: Type.Optional(Type.String({ minLength: 1 })),
  image: Type.Optional(FileObject),
  style_image: Type.Optional(FileObject),
  view_images: Type.Optional(Type.Array(ViewImage)),
  images: Type.Optional(LegacySlots('legacy form of view_images: four slots front, left, back, right')),
}, { additionalProperties: false, description: 'one of text, image or view_images; style_image may join any' });
export type TexturePrompt = Static<typeof TexturePrompt>;

export const TextureBody = Type.Object({
  ...SubmitFields,
  history_id: historyId,
  model: editModel,
  texture: Type.Optional(Type.Boolean({ description: 'default true; wins over enable_texture' })),
  enable_texture: Type.Optional(Type.Boolean()),
  pbr: Type.Optional(Type.Boolean({ description: 'default true; wins over enable_pbr' })),
  enable_pbr: Type.Optional(Type.Boolean()),
  texture_quality: Type.Optional(Type.Enum(['standard', 'detailed'], { description: 'default standard' })),
  texture_alignment: Type.Optional(Type.Enum(['original_image', 'geometry'])),
  texture_seed: Type.Optional(Type.Integer()),
  part_names: Type.Optional(PartNames),
  compress: Type.Optional(Type.Enum(['geometry'])),
  bake: Type.Optional(Type.Boolean({ description: 'default true' })),
  texture_prompt: Type.Optional(TexturePrompt),
}, { additionalProperties: false });

export const ConvertBody = Type.Object({
  ...SubmitFields,
  history_id: historyId,
  model: editModel,
  format: Type.String({ minLength: 1, description: 'GLTF, USDZ, FBX, OBJ, STL or 3MF' }),
  topology: Type.Optional(Topology),
  quad: Type.Optional(Type.Boolean()),
  force_symmetry: Type.Optional(Type.Boolean({ description: 'quad mode only' })),
  face_limit: Type.Optional(FaceLimit('default 10000; polygons in quad mode, else triangles')),
  flatten_bottom: Type.Optional(Type.Boolean()),
  flatten_bottom_threshold: Type.Optional(Type.Number({ minimum: 0, description: 'only with flatten_bottom; default 0.01' })),
  texture_size: Type.Optional(Type.Integer({ minimum: 1, description: 'pixels; at most the default (4096, or 2048 before version 2.0)' })),
  texture_format: Type.Optional(Type.Enum(['BMP', 'DPX', 'HDR', 'JPEG', 'OPEN_EXR', 'PNG', 'TARGA', 'TIFF', 'WEBP'], { description: 'default PNG for FBX, JPEG otherwise' })),
  pivot_to_center_bottom: Type.Optional(Type.Boolean()),
  scale_factor: Type.Optional(Type.Number({ exclusiveMinimum: 0, description: 'default 1' })),
  with_animation: Type.Optional(Type.Boolean({ description: 'default true' })),
  pack_uv: Type.Optional(Type.Boolean()),
  bake: Type.Optional(Type.Boolean({ description: 'default true' })),
  part_names: Type.Optional(PartNames),
  animate_in_place: Type.Optional(Type.Boolean()),
  export_vertex_colors: Type.Optional(Type.Boolean({ description: 'OBJ or GLTF only' })),
  export_orientation: Type.Optional(Type.Enum(['+x', '-x', '+y', '-y'], { description: 'default +x' })),
  fbx_preset: Type.Optional(Type.Enum(['preset_a', 'preset_b', 'preset_c'], { description: 'experimental; default preset_a' })),
}, { additionalProperties: false });

export const CheckRiggableBody = Type.Object({
  ...SubmitFields,
  history_id: historyId,
  model: editModel,
}, { additionalProperties: false });

export const RigBody = Type.Object({
  ...SubmitFields,
  history_id: historyId,
  model: editModel,
  out_format: Type.Optional(Type.Enum(['glb', 'fbx'], { description: 'default glb' })),
  rig_type: Type.Optional(Type.Enum(['biped', 'quadruped', 'hexapod', 'octopod', 'avian', 'serpentine', 'aquatic'], { description: 'default biped' })),
  spec: Type.Optional(Type.Enum(['spec_a', 'spec_b'], { description: 'default spec_a; retargeting needs spec_a' })),
  rigging_model_version: Type.Optional(Type.String({ description: 'v2.5-20260210 (recommended), v2.0-20250506, or v1.0-20240301 for bipeds; default from the model' })),
}, { additionalProperties: false });

export const RetargetAnimationBody = Type.Object({
  ...SubmitFields,
  history_id: historyId,
  model: Type.Optional(Type.String({ minLength: 1, description: 'default: the rig history\'s model' })),
  animation: Type.Optional(Type.String({ description: 'one preset id, e.g. preset:walk' })),
  animations: Type.Optional(Type.Array(Type.String(), { maxItems: 5, description: '1 to 5 preset ids' })),
  out_format: Type.Optional(Type.Enum(['glb', 'fbx'], { description: 'default glb' })),
  bake_animation: Type.Optional(Type.Boolean({ description: 'GLB output only; default true' })),
  export_with_geometry: Type.Optional(Type.Boolean({ description: 'default true' })),
  animate_in_place: Type.Optional(Type.Boolean()),
}, { additionalProperties: false });

export const RefineBody = Type.Object({
  ...SubmitFields,
  history_id: historyId,
  model: editModel,
  draft_model_task_id: Type.Optional(Type.String({ minLength: 1, description: 'upstream draft task id; default from the history' })),
}, { additionalProperties: false });

export const StylizeBody = Type.Object({
  ...SubmitFields,
  history_id: historyId,
  model: editModel,
  style: Type.Enum(['brick', 'voxel', 'voronoi', 'blockgame']),
  block_size: Type.Optional(Type.Integer({ minimum: 32, maximum: 128, description: 'blockgame only; default 80' })),
}, { additionalProperties: false });

/** Edit operations: the operation keys and their bodies (endpoint-table.ts has their routes). */
export const EDIT_OPERATIONS = {
  segmentation: SegmentationBody,
  completion: CompletionBody,
  smart_lowpoly: SmartLowpolyBody,
  texture: TextureBody,
  convert: ConvertBody,
  check_riggable: CheckRiggableBody,
  rig: RigBody,
  retarget_animation: RetargetAnimationBody,
  refine: RefineBody,
  stylize: StylizeBody,
} as const satisfies Record<string, TSchema>;

export type EditOperation = keyof typeof EDIT_OPERATIONS;

export const GENERATION_KINDS = {
  text: GenerateTextBody,
  image: GenerateImageBody,
  multiview: GenerateMultiviewBody,
} as const;
export type GenerationKind = keyof typeof GENERATION_KINDS;
export type GenerationBody = GenerateTextBody | GenerateImageBody | GenerateMultiviewBody;
/** A generation body whose model may be left to the catalog's default (the agent's calls). */
export type GenerationRequestBody = GenerationBody extends infer Body ? (Body extends unknown ? Omit<Body, 'model'> & { model?: string } : never) : never;

/** A rig as histories keep it and edits hand it on. */
export const RigSpec = Type.Object({
  rig_type: Type.String(),
  spec: Type.String(),
  bones: Type.Optional(Type.Array(Type.String())),
});
export type RigSpec = Static<typeof RigSpec>;

/** An image of a 3D request, its source resolved to a URL an engine can read. */
export const ResolvedFile = Type.Intersect([FileObject, Type.Object({ url: Type.String() })]);
export type ResolvedFile = Static<typeof ResolvedFile>;

export const ResolvedView = Type.Object({
  view_type: Type.String(),
  file: ResolvedFile,
});
export type ResolvedView = Static<typeof ResolvedView>;

/** The `source` of an edit task's input (the engine reads `model` with RunContext.readInput). */
export const EditTaskSource = Type.Object({
  history_id: Type.String(),
  operation: Type.String(),
  model: Type.String(),
  parts: Type.Optional(Type.Array(Type.String())),
  rig: Type.Optional(RigSpec),
  upstream: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
});
export type EditTaskSource = Static<typeof EditTaskSource>;

const GENERATION_BODY_ONLY = ['model', 'file', 'files', 'view_images'] as const;

/**
 * Task inputs of the 3D generations: the body without `model`, the family's defaults applied,
 * images resolved (`files` folded into `view_images`).
 */
export const MESH3D_GENERATION_INPUTS = {
  text: Type.Omit(GenerateTextBody, GENERATION_BODY_ONLY),
  image: Type.Intersect([Type.Omit(GenerateImageBody, GENERATION_BODY_ONLY), Type.Object({ file: ResolvedFile })]),
  multiview: Type.Intersect([Type.Omit(GenerateMultiviewBody, GENERATION_BODY_ONLY), Type.Object({ view_images: Type.Array(ResolvedView) })]),
} as const satisfies Record<GenerationKind, TSchema>;
export type Mesh3dGenerationInputs = { [K in GenerationKind]: Static<(typeof MESH3D_GENERATION_INPUTS)[K]> };

/** A texture prompt with its images resolved. */
export const ResolvedTexturePrompt = Type.Object({
  text: Type.Optional(Type.String()),
  image: Type.Optional(ResolvedFile),
  style_image: Type.Optional(ResolvedFile),
  view_images: Type.Optional(Type.Array(ResolvedView)),
});
export type ResolvedTexturePrompt = Static<typeof ResolvedTexturePrompt>;

/** An edit's task input: the body without `history_id` and `model`, `extra` over it, plus the `source` history. */
function editInput<Body extends TObject, Extra extends TProperties = {}>(body: Body, extra: Extra = {} as Extra) {
  return Type.Intersect([Type.Omit(body, ['history_id', 'model', 'texture_prompt']), Type.Object({ ...extra, source: EditTaskSource })]);
}

/**
 * Task inputs of the 3D edits: the body without `history_id` and `model`, normalized by the
 * edit rules (defaults, aliases folded), plus the `source` history.
 */
export const MESH3D_EDIT_INPUTS = {
  segmentation: editInput(SegmentationBody),
  completion: editInput(CompletionBody),
  smart_lowpoly: editInput(SmartLowpolyBody, { quad: Type.Boolean() }),
  texture: editInput(TextureBody, { texture_prompt: Type.Optional(ResolvedTexturePrompt), texture: Type.Boolean(), pbr: Type.Boolean() }),
  convert: editInput(ConvertBody),
  check_riggable: editInput(CheckRiggableBody),
  rig: editInput(RigBody),
  retarget_animation: editInput(RetargetAnimationBody, { animations: Type.Array(Type.String()) }),
  refine: editInput(RefineBody),
  stylize: editInput(StylizeBody),
} as const satisfies Record<EditOperation, TSchema>;
export type Mesh3dEditInputs = { [Op in EditOperation]: Static<(typeof MESH3D_EDIT_INPUTS)[Op]> };
