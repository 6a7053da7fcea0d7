/**
 * Tencent Hunyuan 3D (family A) on Tencent Cloud: gateway 3D requests → the action and JSON
 * payload of a job submit (Pro 3.0/3.1, Rapid 2.5, face reduction, texturing), and the job query
 * replies → generated files. Pure functions.
 */
import { guessMimeType } from '../../core/mime-type.ts';
import { TaskFailedError, TaskRejectedError, type GeneratedFile, type GenerationJob, type JobOf } from '../spec.ts';
import type { UpstreamPoll } from '../upstream-task-engine.ts';
import { readReply } from '../upstream-reply.ts';
import { HunyuanJob, HunyuanSubmitted, TencentEnvelope } from './reply-schemas.ts';

type Json = Record<string, unknown>;

/** Submit and query actions of a job kind. */
export interface JobKind {
  submit: string;
  query: string;
}

const PRO: JobKind = { submit: 'SubmitHunyuanTo3DProJob', query: 'QueryHunyuanTo3DProJob' };
const RAPID: JobKind = { submit: 'SubmitHunyuanTo3DRapidJob', query: 'QueryHunyuanTo3DRapidJob' };
const REDUCE_FACE: JobKind = { submit: 'SubmitReduceFaceJob', query: 'DescribeReduceFaceJob' };
const TEXTURE: JobKind = { submit: 'SubmitTextureTo3DJob', query: 'DescribeTextureTo3DJob' };

type GenerateEndpoint = 'mesh3d.generate.text' | 'mesh3d.generate.image' | 'mesh3d.generate.multiview';
const GENERATION: readonly string[] = ['mesh3d.generate.text', 'mesh3d.generate.image', 'mesh3d.generate.multiview'] satisfies GenerateEndpoint[];
const isGeneration = (job: GenerationJob): job is JobOf<GenerateEndpoint> => GENERATION.includes(job.endpoint);
/** Edits Tencent Cloud runs on a model file given by URL. */
const EDITS: Record<string, JobKind> = { 'mesh3d.edit.smart_lowpoly': REDUCE_FACE, 'mesh3d.edit.texture': TEXTURE };

/** Every endpoint a Hunyuan job exists for. */
export const HUNYUAN_ENDPOINTS = [...GENERATION, ...Object.keys(EDITS)];

/** The Rapid job's prompt limit (the Pro job takes the gateway's 1024). */
const RAPID_PROMPT_MAX = 200;

/** Pro or Rapid and the Pro version, from `hunyuan3d-pro-<v>` / `hunyuan3d-rapid-<v>`. */
function generationModel(name: string): { kind: JobKind; version?: string } {
  const pro = /^hunyuan3d-pro-(\d+\.\d+)$/i.exec(name);
  if (pro) return { kind: PRO, version: pro[1]! };
  if (/^hunyuan3d-rapid-\d+\.\d+$/i.test(name)) return { kind: RAPID };
  throw new TaskRejectedError(`Hunyuan has no model ${name} (expected hunyuan3d-pro-<version> or hunyuan3d-rapid-<version>)`);
}

/** The job kind of a task; refuses what Tencent Cloud cannot run. */
export function jobKindOf(job: GenerationJob): JobKind {
  const edit = EDITS[job.endpoint];
  if (edit) return edit;
  if (!isGeneration(job)) throw new TaskRejectedError(`Hunyuan does not run ${job.endpoint} tasks`);
  const { kind } = generationModel(job.model.defaultRealModelName);
  if (kind === RAPID) {
    if (job.endpoint === 'mesh3d.generate.multiview') throw new TaskRejectedError('the Hunyuan Rapid job takes no multiview input');
    if (job.endpoint === 'mesh3d.generate.text' && [...job.input.prompt].length > RAPID_PROMPT_MAX) throw new TaskRejectedError(`the Hunyuan Rapid job takes prompts of at most ${RAPID_PROMPT_MAX} characters`);
  }
  return kind;
}

/** The views of a multiview generation, their images by reference. */
function viewsOf(job: GenerationJob): { view_type: string; ref: string }[] {
  return job.endpoint === 'mesh3d.generate.multiview' ? job.input.view_images.map((v) => ({ view_type: v.view_type, ref: v.file.url })) : [];
}

/** The picture of an image generation, or the image of a texture edit's prompt. */
function pictureOf(job: GenerationJob): string | undefined {
  if (job.endpoint === 'mesh3d.generate.image') return job.input.file.url;
  if (job.endpoint === 'mesh3d.edit.texture') return job.input.texture_prompt?.image?.url;
  return undefined;
}

/** Image references the payload needs as URLs Tencent Cloud can fetch. */
export function imageRefs(job: GenerationJob): string[] {
  return [pictureOf(job), ...viewsOf(job).map((v) => v.ref)].filter((r): r is string => r !== undefined);
}

const FACE_LEVELS: readonly string[] = ['high', 'medium', 'low'];

/** Face reduction levels; a number goes as the nearest level (Tencent Cloud takes levels only). */
function faceLevel(value: number | string | undefined): string | undefined {
  if (typeof value === 'number') return value >= 20_000 ? 'high' : value >= 5_000 ? 'medium' : 'low';
  return value !== undefined && FACE_LEVELS.includes(value) ? value : undefined;
}

const polygonType = (topology: string | undefined) => (topology === 'quad' ? 'quadrilateral' : 'triangle');

/** Fields each kind of task reads; others set are dropped with a warning. */
const READ = new Set([
  'prompt', 'file', 'view_images', 'enable_texture', 'enable_pbr', 'face_limit', 'smart_low_poly', 'topology',
  'history_id', 'source', 'quad', 'texture', 'pbr', 'texture_prompt',
]);

export interface SubmitPayload {
  payload: Json;
  dropped: string[];
}

/**
 * The submit payload. `urls` maps image references to fetchable URLs; `model` is the source
 * model of an edit as `{Type, Url}`.
 */
export function submitPayload(job: GenerationJob, urls: ReadonlyMap<string, string>, model?: { Type: string; Url: string }): SubmitPayload {
  const url = (ref: string | undefined) => (ref ? (urls.get(ref) ?? ref) : undefined);
  const payload: Json = {};
  const set = (key: string, value: unknown) => {
    if (value !== undefined && value !== null) payload[key] = value;
  };
  const kind = jobKindOf(job);
  if (job.endpoint === 'mesh3d.edit.smart_lowpoly') {
    set('File3D', model);
    set('PolygonType', polygonType(job.input.topology));
    set('FaceLevel', faceLevel(job.input.face_limit));
  } else if (job.endpoint === 'mesh3d.edit.texture') {
    set('File3D', model);
    set('Prompt', job.input.texture_prompt?.text);
    const image = url(pictureOf(job));
    if (image) set('Image', { Url: image });
    set('EnablePBR', job.input.pbr);
  } else if (isGeneration(job)) {
    const input = job.input;
    const { version } = generationModel(job.model.defaultRealModelName);
    set('Model', version);
    if (job.endpoint === 'mesh3d.generate.text') set('Prompt', job.input.prompt);
    const views = viewsOf(job);
    set('ImageUrl', url(pictureOf(job) ?? views.find((v) => v.view_type === 'front')?.ref));
    const others = views.filter((v) => v.view_type !== 'front');
    if (others.length > 0) set('MultiViewImages', others.map((v) => ({ ViewType: v.view_type, ViewImageUrl: url(v.ref) })));
    const textured = input.enable_texture !== false;
    if (kind === RAPID) {
      if (!textured) set('EnableGeometry', true);
      else set('EnablePBR', input.enable_pbr);
    } else {
      set('FaceCount', input.face_limit);
      if (input.smart_low_poly === true) {
        set('GenerateType', 'LowPoly');
        set('PolygonType', polygonType(input.topology));
      } else if (!textured) {
        set('GenerateType', 'Geometry');
      }
      if (textured) set('EnablePBR', input.enable_pbr);
    }
  }
  return { payload, dropped: Object.entries(job.input).filter(([key, value]) => value !== undefined && !READ.has(key)).map(([key]) => key) };
}

/** Source model formats the edit jobs take. */
export function file3dType(file: { data: Buffer; fileName: string; mimeType: string }): string {
  if (file.data.subarray(0, 4).toString('latin1') === 'glTF' || /\.glb$/i.test(file.fileName) || file.mimeType === 'model/gltf-binary') return 'GLB';
  if (/\.obj$/i.test(file.fileName) || file.mimeType === 'model/obj') return 'OBJ';
  throw new TaskFailedError(`Hunyuan edits GLB or OBJ models; the source model is ${file.mimeType || file.fileName}`);
}

// ---- replies ----

/** The `Error` (code and message) of a Tencent Cloud reply that refuses the action; undefined for any other. */
export function refusalOf(reply: unknown): { code: string; message: string } | undefined {
  const error = readReply(TencentEnvelope, reply, 'Hunyuan').Response.Error;
  return error ? { code: error.Code, message: error.Message ?? error.Code } : undefined;
}

export function submittedJobId(reply: unknown): string {
  return readReply(HunyuanSubmitted, reply, 'Hunyuan').Response.JobId;
}

export interface ResultLink {
  role?: string;
  type: '3d' | 'image';
  url: string;
  /** Tencent Cloud's Type of the file (GLB, OBJ, …). */
  format?: string;
}

/** The engine's view of a job query; on DONE the result links (the preferred model first). */
export function jobState(reply: unknown): Exclude<UpstreamPoll, { state: 'succeeded' }> | { state: 'done'; links: ResultLink[] } {
  const response = readReply(HunyuanJob, reply, 'Hunyuan').Response;
  const status = response.Status;
  if (status === 'WAIT' || status === 'RUN') return { state: 'running', message: status };
  if (status === 'FAIL') {
    const code = response.ErrorCode ? ` (${response.ErrorCode})` : '';
    return { state: 'failed', message: `Hunyuan job failed${code}`, original: response.ErrorMessage || `job status ${status}` };
  }
  if (status !== 'DONE') throw new TaskFailedError(`Hunyuan job in an unknown status ${status}`);
  const results = response.ResultFile3Ds ?? [];
  const models = results.flatMap((r) => (r.Url ? [{ url: r.Url, format: r.Type ?? '' }] : []));
  if (models.length === 0) throw new TaskFailedError('Hunyuan job finished without a result file', JSON.stringify(response).slice(0, 2000));
  const main = models.find((r) => r.format.toUpperCase() === 'GLB') ?? models[0]!;
  const links: ResultLink[] = [main, ...models.filter((r) => r !== main)].map((r, i) => ({ ...(i === 0 ? { role: 'model' } : {}), type: '3d', ...r }));
  const preview = results.find((r) => r.PreviewImageUrl)?.PreviewImageUrl;
  if (preview) links.push({ role: 'preview', type: 'image', url: preview });
  return { state: 'done', links };
}

/** A downloaded result named after its role (or its place), with the URL's extension, else its Type's. */
export function resultFile(link: ResultLink, data: Buffer, index: number): GeneratedFile {
  const ext = /\.([a-z0-9]+)$/i.exec(new URL(link.url).pathname)?.[1]?.toLowerCase() ?? link.format?.toLowerCase() ?? (link.type === 'image' ? 'png' : 'bin');
  const fileName = `${link.role ?? `file-${index}`}.${ext}`;
  return { type: link.type, ...(link.role ? { role: link.role } : {}), data, fileName, mimeType: guessMimeType(fileName, data) };
}
