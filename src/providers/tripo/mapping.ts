/**
 * Tripo V2 OpenAPI (family C and the Tripo edit models): gateway 3D requests → POST /task bodies,
 * task replies → generated files. Pure functions (glTF-Transform only reads bytes).
 */
import { guessMimeType } from '../../core/mime-type.ts';
import { fieldsSet, mapFields, type FieldRule } from '../field-mapping.ts';
import type { UpstreamPoll } from '../upstream-task-engine.ts';
import type { EditTaskSource, ResolvedFile, ResolvedTexturePrompt, ResolvedView } from '../../endpoints/mesh3d.ts';
import { TaskFailedError, type GeneratedFile, type GenerationJob, type GenerationOutput } from '../spec.ts';
import { readReply } from '../upstream-reply.ts';
import { TripoCreated, TripoEnvelope, TripoError, TripoStsToken, TripoTaskReply, type StsToken, type TripoTaskData } from './reply-schemas.ts';

/** Gateway endpoints → Tripo task types (smart low-poly's wire name is highpoly_to_lowpoly). */
export const TASK_TYPES: Record<string, string> = {
  'mesh3d.generate.text': 'text_to_model',
  'mesh3d.generate.image': 'image_to_model',
  'mesh3d.generate.multiview': 'multiview_to_model',
  'mesh3d.edit.segmentation': 'mesh_segmentation',
  'mesh3d.edit.completion': 'mesh_completion',
  'mesh3d.edit.smart_lowpoly': 'highpoly_to_lowpoly',
  'mesh3d.edit.texture': 'texture_model',
  'mesh3d.edit.convert': 'convert_model',
  'mesh3d.edit.check_riggable': 'animate_prerigcheck',
  'mesh3d.edit.rig': 'animate_rig',
  'mesh3d.edit.retarget_animation': 'animate_retarget',
  'mesh3d.edit.refine': 'refine_model',
  'mesh3d.edit.stylize': 'stylize_model',
};

/** Edits that only work on a task of Tripo's own kind (a segmentation, a rig, a draft): an imported model cannot stand in. */
export const NEEDS_OWN_SOURCE: Record<string, string> = {
  'mesh3d.edit.completion': 'a segmentation made by this provider',
  'mesh3d.edit.retarget_animation': 'a rig made by this provider',
  'mesh3d.edit.refine': 'a draft made by this provider',
};

/** The four slots of Tripo's multiview `files` and of texture_prompt.images. */
const FOUR_SLOTS = ['front', 'left', 'back', 'right'] as const;

const quadOnly = (value: unknown) => (value === 'quad' || value === true ? true : undefined);

/** Rules for fields Tripo takes under the gateway's own names. */
const asIs = (...fields: string[]): FieldRule[] => fields.map((f) => ({ from: f, to: f }));

/** Generation fields under Tripo's names (family rules upstream of here refuse what a model lacks). */
const GENERATION_FIELDS: FieldRule[] = [
  ...asIs('prompt', 'negative_prompt', 'image_seed'),
  { from: 'seed', to: 'model_seed' },
  ...asIs('texture_seed', 'face_limit'),
  { from: 'enable_texture', to: 'texture' },
  { from: 'enable_pbr', to: 'pbr' },
  ...asIs('texture_quality', 'geometry_quality'),
  // Only an explicit quad goes: P1 and the international service refuse even `quad: false`.
  { from: 'topology', to: 'quad', convert: quadOnly },
  ...asIs('smart_low_poly', 'generate_parts', 'auto_size', 'export_uv', 'enable_image_autofix', 'texture_alignment', 'orientation'),
];

/** Gateway names of rig specs and stylize styles → Tripo's. */
const RIG_SPECS: Record<string, string> = { spec_a: 'tripo', spec_b: 'mixamo' };
const STYLES: Record<string, string> = { brick: 'lego', voxel: 'voxel', voronoi: 'voronoi', blockgame: 'minecraft' };
/** convert's presets are named after the tools Tripo names them by. */
const FBX_PRESETS: Record<string, string> = { preset_a: 'blender', preset_b: '3dsmax', preset_c: 'mixamo' };

const mapped = (table: Record<string, string>) => (value: unknown) => table[String(value)] ?? value;

/** Per edit: the fields sent and where the model_version comes from. */
interface EditMapping {
  fields: FieldRule[];
  /** `model`: the edit model's defaultRealModelName; a field name: that input field (falling back to the model). */
  version?: 'model' | string;
}

const EDITS: Record<string, EditMapping> = {
  'mesh3d.edit.segmentation': { fields: [], version: 'model_version_seg' },
  'mesh3d.edit.completion': { fields: asIs('part_names'), version: 'model_version_seg' },
  'mesh3d.edit.smart_lowpoly': {
    fields: [{ from: 'quad', to: 'quad', convert: quadOnly }, ...asIs('part_names', 'face_limit', 'bake')],
    version: 'model',
  },
  'mesh3d.edit.texture': {
    fields: asIs('texture', 'pbr', 'texture_seed', 'texture_alignment', 'texture_quality', 'part_names', 'compress', 'bake'),
    version: 'model',
  },
  'mesh3d.edit.convert': {
    fields: [
      ...asIs('format'),
      { from: 'quad', to: 'quad', convert: quadOnly },
      ...asIs('force_symmetry', 'face_limit', 'flatten_bottom', 'flatten_bottom_threshold', 'texture_size', 'texture_format', 'pivot_to_center_bottom', 'scale_factor',
        'with_animation', 'pack_uv', 'bake', 'part_names', 'animate_in_place', 'export_vertex_colors', 'export_orientation'),
      { from: 'fbx_preset', to: 'fbx_preset', convert: mapped(FBX_PRESETS) },
    ],
  },
  'mesh3d.edit.check_riggable': { fields: [] },
  'mesh3d.edit.rig': {
    fields: [...asIs('out_format', 'rig_type'), { from: 'spec', to: 'spec', convert: mapped(RIG_SPECS) }],
    version: 'rigging_model_version',
  },
  'mesh3d.edit.retarget_animation': { fields: asIs('out_format', 'bake_animation', 'export_with_geometry', 'animate_in_place') },
  'mesh3d.edit.refine': { fields: [] },
  'mesh3d.edit.stylize': { fields: [{ from: 'style', to: 'style', convert: mapped(STYLES) }, ...asIs('block_size')] },
};

/** Input fields the mapping reads without a rule, and the gateway's own. */
const CONSUMED = new Set(['file', 'view_images', 'source', 'texture_prompt', 'animations', 'draft_model_task_id', 'topology', 'history_id', 'model_version_seg', 'rigging_model_version']);

type Input = Record<string, unknown>;

/** An image input as the request carries it after validation: the reference in `url`. */
type ImageRef = ResolvedFile;

/** Every image reference of a request, so the adapter can turn each into a URL Tripo fetches. */
export function imageRefs(job: GenerationJob): string[] {
  if (job.endpoint === 'mesh3d.generate.image') return [job.input.file.url];
  if (job.endpoint === 'mesh3d.generate.multiview') return job.input.view_images.map((v) => v.file.url);
  if (job.endpoint !== 'mesh3d.edit.texture' || !job.input.texture_prompt) return [];
  const { image, style_image: style, view_images: views = [] } = job.input.texture_prompt;
  return [image, style, ...views.map((v) => v.file)].flatMap((file) => (file ? [file.url] : []));
}

const IMAGE_TYPES: Record<string, string> = { 'image/png': 'png', 'image/jpeg': 'jpg', 'image/jpg': 'jpg', 'image/webp': 'webp' };

/** Tripo's file object for an image: `type` from the stated mime type or the URL, then the URL. */
function tripoImage(ref: ImageRef, urls: ReadonlyMap<string, string>): { type: string; url: string } {
  const url = urls.get(ref.url) ?? ref.url;
  const byName = /\.(png|jpe?g|webp)(?:$|[?#])/i.exec(new URL(url).pathname)?.[1]?.toLowerCase();
  const type = (ref.mimetype && IMAGE_TYPES[ref.mimetype.toLowerCase()]) ?? (byName === 'jpeg' ? 'jpg' : byName) ?? 'png';
  return { type, url };
}

/** Views in Tripo's four slots (front, left, back, right); `{}` keeps a missing view's place. */
function fourSlots(views: ResolvedView[], urls: ReadonlyMap<string, string>): Record<string, string>[] {
  return FOUR_SLOTS.map((slot) => {
    const view = views.find((v) => v.view_type === slot);
    return view ? tripoImage(view.file, urls) : {};
  });
}

function texturePrompt(prompt: ResolvedTexturePrompt, urls: ReadonlyMap<string, string>): Input {
  const out: Input = {};
  if (prompt.text !== undefined) out.text = prompt.text;
  if (prompt.image) out.image = tripoImage(prompt.image, urls);
  if (prompt.view_images?.length) out.images = fourSlots(prompt.view_images, urls);
  if (prompt.style_image) out.style_image = tripoImage(prompt.style_image, urls);
  return out;
}

export interface TaskBody {
  body: Input;
  /** Request fields Tripo does not take, dropped. */
  dropped: string[];
}

/**
 * The POST /task body of a job. `urls` maps each image reference to a URL Tripo can fetch;
 * `original` is the Tripo task id an edit works on.
 */
export function taskBody(job: GenerationJob, urls: ReadonlyMap<string, string>, original?: string): TaskBody {
  const type = TASK_TYPES[job.endpoint];
  if (!type) throw new TaskFailedError(`Tripo does not run ${job.endpoint} tasks`);
  // The field tables read the input by field name.
  const input: Readonly<Input> = job.input;
  const edit = EDITS[job.endpoint];
  const rules = edit ? edit.fields : GENERATION_FIELDS;
  const body: Input = { type };
  if (!edit) {
    body.model_version = job.model.defaultRealModelName;
    if (job.endpoint === 'mesh3d.generate.image') body.file = tripoImage(job.input.file, urls);
    if (job.endpoint === 'mesh3d.generate.multiview') body.files = fourSlots(job.input.view_images, urls);
  } else {
    if (edit.version) body.model_version = edit.version === 'model' ? job.model.defaultRealModelName : (input[edit.version] ?? job.model.defaultRealModelName);
    if (job.endpoint === 'mesh3d.edit.refine') body.draft_model_task_id = job.input.draft_model_task_id ?? original;
    else body.original_model_task_id = original;
    if (job.endpoint === 'mesh3d.edit.texture' && job.input.texture_prompt) body.texture_prompt = texturePrompt(job.input.texture_prompt, urls);
    if (job.endpoint === 'mesh3d.edit.retarget_animation') {
      const { animations } = job.input;
      if (animations.length === 1) body.animation = animations[0];
      else body.animations = animations;
    }
  }
  for (const [key, value] of Object.entries(mapFields(input, rules))) if (value !== undefined) body[key] = value;
  const known = new Set([...CONSUMED, ...rules.map((r) => r.from)]);
  return { body, dropped: fieldsSet(input, Object.keys(input).filter((k) => !known.has(k))) };
}

// ---- replies ----

/** A Tripo task as GET /task/{id} describes it (the fields read). */
export interface TripoTask {
  status: string;
  progress?: number;
  output: NonNullable<TripoTaskData['output']>;
  /** The Blender add-on's shape: `{role: {url, type}}`. */
  result: NonNullable<TripoTaskData['result']>;
  errorCode?: number;
  errorMsg?: string;
}

/** Tripo's own words in a refusal (`{code, message, suggestion}`), when it has them. */
function wordsOf(reply: unknown): string | undefined {
  if (!TripoError.Check(reply)) return undefined;
  return reply.suggestion ? `${reply.message} (${reply.suggestion})` : reply.message;
}

/** Checks Tripo's `{code, data}` envelope: a non-zero code fails the task with Tripo's message. */
export function checkEnvelope(body: unknown, call: string): void {
  const { code } = readReply(TripoEnvelope, body, 'Tripo');
  if (code !== 0) throw new TaskFailedError(`Tripo refused ${call} (code ${code})`, wordsOf(body) ?? JSON.stringify(body));
}

/** Tripo's own words from an error body, else the text as it is. */
export function errorText(text: string): string {
  try {
    return wordsOf(JSON.parse(text)) ?? text;
  } catch {
    return text;
  }
}

export function submittedTaskId(reply: unknown): string {
  return readReply(TripoCreated, reply, 'Tripo').data.task_id;
}

export function parseTask(reply: unknown): TripoTask {
  const data = readReply(TripoTaskReply, reply, 'Tripo').data;
  return {
    status: data.status,
    ...(data.progress != null ? { progress: data.progress } : {}),
    output: data.output ?? {},
    result: data.result ?? {},
    ...(data.error_code != null ? { errorCode: data.error_code } : {}),
    ...(data.error_msg ? { errorMsg: data.error_msg } : {}),
  };
}

/** The temporary S3 credentials of an upload token reply. */
export function stsToken(reply: unknown): StsToken {
  return readReply(TripoStsToken, reply, 'Tripo').data;
}

const ONGOING = new Set(['queued', 'running', 'unknown']);

/** The engine's view of a task that is not (yet) a success; undefined for a success. */
export function pollState(task: TripoTask): Exclude<UpstreamPoll, { state: 'succeeded' }> | undefined {
  if (task.status === 'success') return undefined;
  if (ONGOING.has(task.status)) return { state: 'running', ...(task.progress !== undefined ? { progress: task.progress } : {}), message: task.status };
  const code = task.errorCode !== undefined ? ` (error ${task.errorCode})` : '';
  return { state: 'failed', message: `Tripo task ${task.status}${code}`, original: task.errorMsg ?? `task status ${task.status}` };
}

/** Result URLs by output key; the roles the gateway names them by and their file kind. */
const RESULT_ROLES = [
  { key: 'model', role: 'model', type: '3d' },
  { key: 'base_model', role: 'base_model', type: '3d' },
  { key: 'pbr_model', role: 'pbr_model', type: '3d' },
  { key: 'rendered_image', role: 'preview', type: 'image' },
] as const;

export interface ResultLink {
  role: string;
  type: '3d' | 'image';
  url: string;
}

/** The files of a finished task: `output` URLs, else the `result` objects. */
export function resultLinks(task: TripoTask): ResultLink[] {
  return RESULT_ROLES.flatMap(({ key, role, type }) => {
    const url = task.output[key] || task.result[key]?.url;
    return url ? [{ role, type, url }] : [];
  });
}

const KNOWN_EXTENSIONS = /\.(glb|gltf|fbx|obj|stl|usdz|3mf|schem|zip|png|jpe?g|webp)$/i;

/** The extension of a result: the URL's, else what the bytes start with. */
function extensionOf(url: string, data: Buffer): string {
  const byName = KNOWN_EXTENSIONS.exec(new URL(url).pathname)?.[1];
  if (byName) return byName.toLowerCase();
  const head = data.subarray(0, 20).toString('latin1');
  if (head.startsWith('glTF')) return 'glb';
  if (head.startsWith('Kaydara FBX')) return 'fbx';
  if (head.startsWith('PK')) return 'zip';
  const mime = guessMimeType(undefined, data);
  return mime.startsWith('image/') ? mime.slice(6).replace('jpeg', 'jpg') : 'bin';
}

/** A downloaded result as a generated file named after its role. */
export function resultFile(link: ResultLink, data: Buffer): GeneratedFile {
  const fileName = `${link.role}.${extensionOf(link.url, data)}`;
  return { type: link.type, role: link.role, data, fileName, mimeType: guessMimeType(fileName, data) };
}

/** Names of the mesh nodes of a GLB: the parts a segmentation made. */
export async function glbPartNames(data: Buffer): Promise<string[] | undefined> {
  if (data.subarray(0, 4).toString('latin1') !== 'glTF') return undefined;
  try {
    // glTF-Transform loads here: only a segmentation result needs it.
    const { NodeIO } = await import('@gltf-transform/core');
    const doc = await new NodeIO().readBinary(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    return doc.getRoot().listNodes().filter((n) => n.getMesh()).map((n) => n.getName()).filter((name) => name !== '');
  } catch {
    return undefined;
  }
}

/** Endpoints whose result's parts the history keeps. */
const PART_ENDPOINTS = new Set(['mesh3d.edit.segmentation', 'mesh3d.edit.completion']);

/**
 * The task output: the files, plus what the history needs — the parts of a segmentation, the
 * riggability answer of a check, the rig made.
 */
export async function taskOutput(job: GenerationJob, task: TripoTask, files: GeneratedFile[]): Promise<GenerationOutput> {
  const extra: Input = {};
  const model = files.find((f) => f.role === 'model');
  const partsGenerated = (job.endpoint === 'mesh3d.generate.text' || job.endpoint === 'mesh3d.generate.image' || job.endpoint === 'mesh3d.generate.multiview') && job.input.generate_parts === true;
  if (model && (PART_ENDPOINTS.has(job.endpoint) || partsGenerated)) {
    const parts = await glbPartNames(model.data);
    if (parts?.length) extra.parts = parts;
  }
  if (job.endpoint === 'mesh3d.edit.check_riggable') {
    if (task.output.riggable == null) throw new TaskFailedError('Tripo answered the riggability check without `riggable`', JSON.stringify(task.output).slice(0, 2000));
    extra.riggable = task.output.riggable;
    const rigType = task.output.rig_type ?? task.output.topology;
    if (rigType != null) extra.rig_type = rigType;
  }
  if (job.endpoint === 'mesh3d.edit.rig') extra.rig = { rig_type: job.input.rig_type ?? 'biped', spec: job.input.spec ?? 'spec_a' };
  if (files.length === 0 && job.endpoint !== 'mesh3d.edit.check_riggable') throw new TaskFailedError('Tripo reported success without a result file', JSON.stringify(task.output).slice(0, 2000));
  return { files, ...(Object.keys(extra).length > 0 ? { extra } : {}) };
}

// ---- edit sources ----

/** The upstream task behind an edit's source history, as the history keeps it (the task's saved `upstream` reference). */
export interface SourceTask {
  provider: string;
  task_id: string;
}

/**
 * The upstream task of the history an edit works on. The history keeps its task's saved state,
 * whose `upstream` is the reference the adapter's submit returned (`{provider, task_id, …}`).
 */
export function sourceTaskOf(source: EditTaskSource): SourceTask | undefined {
  return savedUpstreamTask(source.upstream);
}

/**
 * The `{provider, task_id}` in what an engine saved, at its top or under `upstream`. Any engine
 * saves state of its own shape, so the reference is looked for, not assumed.
 */
function savedUpstreamTask(saved: Record<string, unknown> | undefined): SourceTask | undefined {
  const ref = (saved?.upstream ?? saved) as Partial<SourceTask> | undefined;
  return ref && typeof ref.provider === 'string' && typeof ref.task_id === 'string' ? { provider: ref.provider, task_id: ref.task_id } : undefined;
}

/** Model file formats Tripo imports, by extension and by mime type. */
const IMPORT_FORMATS: Record<string, string> = {
  glb: 'glb', obj: 'obj', fbx: 'fbx', stl: 'stl',
  'model/gltf-binary': 'glb', 'model/obj': 'obj', 'application/vnd.autodesk.fbx': 'fbx', 'model/stl': 'stl',
};

/** The import format of a model file (glb, obj, fbx or stl), or undefined when Tripo cannot import it. */
export function importFormatOf(file: { data: Buffer; fileName: string; mimeType: string }): string | undefined {
  const ext = /\.([a-z0-9]+)$/i.exec(file.fileName)?.[1]?.toLowerCase();
  if (file.data.subarray(0, 4).toString('latin1') === 'glTF') return 'glb';
  return (ext && IMPORT_FORMATS[ext]) ?? IMPORT_FORMATS[file.mimeType.toLowerCase()];
}
