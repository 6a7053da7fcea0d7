/**
 * fal.ai-hosted Tripo (family D): gateway 3D generation requests → the fal endpoint id and its
 * input JSON, and the queue's status and result replies → generated files. Pure functions.
 */
import { guessMimeType } from '../../core/mime-type.ts';
import { TaskFailedError, TaskRejectedError, type EngineDeclaration, type GeneratedFile, type GenerationJob, type JobOf } from '../spec.ts';
import type { UpstreamPoll } from '../upstream-task-engine.ts';
import { readReply } from '../upstream-reply.ts';
import { FalErrorString, FalErrorText, FalResult, FalStatus, FalSubmitted, FalValidationError, type FalFile } from './reply-schemas.ts';

type Json = Record<string, unknown>;
type Kind = 'text' | 'image' | 'multiview';

/** fal endpoint ids per catalog version string and generation kind. */
const ENDPOINT_IDS: Record<string, Record<Kind, string>> = {
  'tripo3d/v3.1': { text: 'tripo3d/h3.1/text-to-3d', image: 'tripo3d/h3.1/image-to-3d', multiview: 'tripo3d/h3.1/multiview-to-3d' },
  'tripo3d/p1': { text: 'tripo3d/p1/text-to-3d', image: 'tripo3d/p1/image-to-3d', multiview: 'tripo3d/p1/multiview-to-3d' },
};

/** fal's multiview takes four pictures in Tripo's order. */
const FOUR_VIEWS = ['front', 'left', 'back', 'right'];

/** fal calls the highest geometry quality `ultra`. */
const GEOMETRY_QUALITY: Record<'standard' | 'detailed', string> = { standard: 'standard', detailed: 'ultra' };

/** Fields the mapping reads (FAL_SERVES); the others are the task's warnings from its submit. */
const READ = new Set(['prompt', 'file', 'view_images', 'enable_texture', 'enable_pbr', 'texture_quality', 'geometry_quality']);

/** The three generations, each reading the fields of READ. */
export const FAL_SERVES: EngineDeclaration = Object.fromEntries((['text', 'image', 'multiview'] as const).map((kind) => [`mesh3d.generate.${kind}`, { fields: [...READ] }]));

/** A 3D generation job: what fal hosts. */
export type FalJob = JobOf<`mesh3d.generate.${Kind}`>;

/** The job as the 3D generation it must be; refuses what fal does not host. */
export function falJob(job: GenerationJob): FalJob {
  if (!/^mesh3d\.generate\.(text|image|multiview)$/.test(job.endpoint)) throw new TaskRejectedError(`fal hosts 3D generation only; it does not run ${job.endpoint} tasks`);
  return job as FalJob;
}

/** The fal endpoint id of a job; refuses a model fal does not host. */
export function endpointIdOf(job: FalJob): string {
  const kind = job.endpoint.slice('mesh3d.generate.'.length) as Kind;
  const ids = ENDPOINT_IDS[job.model.defaultRealModelName.toLowerCase()];
  if (!ids) throw new TaskRejectedError(`fal has no model for ${job.model.defaultRealModelName} (expected ${Object.keys(ENDPOINT_IDS).join(' or ')})`);
  return ids[kind];
}

/** Image references in the order fal takes them (one image, or the four views). */
export function imageRefs(job: FalJob): string[] {
  if (job.endpoint === 'mesh3d.generate.image') return [job.input.file.url];
  if (job.endpoint === 'mesh3d.generate.text') return [];
  const views = job.input.view_images;
  return FOUR_VIEWS.flatMap((type) => views.filter((v) => v.view_type === type).slice(0, 1).map((v) => v.file.url));
}

/** The model input of the submit; `urls` are the public URLs of imageRefs, in their order. */
export function falInput(job: FalJob, urls: string[]): Json {
  const src = job.input;
  const input: Json = {};
  if (job.endpoint === 'mesh3d.generate.text') input.prompt = job.input.prompt;
  if (job.endpoint === 'mesh3d.generate.image') input.image_url = urls[0];
  if (job.endpoint === 'mesh3d.generate.multiview') input.image_urls = urls;
  if (src.enable_texture !== undefined) input.texture = src.enable_texture;
  if (src.enable_pbr !== undefined) input.pbr = src.enable_pbr;
  if (src.texture_quality !== undefined) input.texture_quality = src.texture_quality;
  if (src.geometry_quality !== undefined) input.geometry_quality = GEOMETRY_QUALITY[src.geometry_quality];
  return input;
}

// ---- queue replies ----

export interface Submitted {
  requestId: string;
  statusUrl: string;
  responseUrl: string;
}

/** The queue's submit reply: the request id and the URLs to follow (ids with sub-paths use shorter ones). */
export function submitted(body: unknown): Submitted {
  const reply = readReply(FalSubmitted, body, 'fal');
  return { requestId: reply.request_id, statusUrl: reply.status_url, responseUrl: reply.response_url };
}

/** The engine's view of a queue status; `completed` when the result can be read. */
export function queueState(body: unknown): Exclude<UpstreamPoll, { state: 'succeeded' }> | { state: 'completed' } {
  const reply = readReply(FalStatus, body, 'fal');
  switch (reply.status) {
    case 'IN_QUEUE':
      return { state: 'running', message: reply.queue_position != null ? `in queue at ${reply.queue_position}` : 'in queue' };
    case 'IN_PROGRESS':
      return { state: 'running', message: 'in progress' };
    case 'COMPLETED':
      if (reply.error) return { state: 'failed', message: `fal request failed${reply.error_type != null ? ` (${reply.error_type})` : ''}`, original: String(reply.error) };
      return { state: 'completed' };
    default:
      throw new TaskFailedError(`fal answered the status query with status ${reply.status}`, JSON.stringify(body).slice(0, 2000));
  }
}

/** fal's own words in an error body: `detail` as text or as validation items, else the text. */
export function errorText(text: string): string {
  try {
    const body: unknown = JSON.parse(text);
    if (FalErrorText.Check(body)) return body.detail;
    if (FalValidationError.Check(body)) return body.detail.map((d) => `${(d.loc ?? []).join('.')}: ${String(d.msg)}`).join('; ');
    if (FalErrorString.Check(body)) return body.error;
  } catch {
    // not JSON: the text is the message
  }
  return text;
}

export interface ResultLink {
  role: string;
  type: '3d' | 'image';
  url: string;
  fileName?: string;
}

/** A result file's URL and, when fal names it, its file name; nothing for an empty URL. */
function fileOf(value: FalFile | null | undefined): { url: string; fileName?: string } | undefined {
  const file = typeof value === 'string' ? { url: value } : value;
  if (!file?.url) return undefined;
  return { url: file.url, ...(file.file_name != null ? { fileName: file.file_name } : {}) };
}

/** The result's files by role: model_mesh is the model; base and PBR models from model_urls (or the top level); the rendered image is the preview. */
export function resultLinks(body: unknown): ResultLink[] {
  const output = readReply(FalResult, body, 'fal');
  const model = fileOf(output.model_mesh);
  if (!model) throw new TaskFailedError('fal result has no model_mesh', JSON.stringify(body).slice(0, 2000));
  const links: ResultLink[] = [{ role: 'model', type: '3d', ...model }];
  for (const role of ['base_model', 'pbr_model'] as const) {
    const file = fileOf(output.model_urls?.[role] ?? output[role]);
    if (file && file.url !== model.url) links.push({ role, type: '3d', ...file });
  }
  const preview = fileOf(output.rendered_image);
  if (preview) links.push({ role: 'preview', type: 'image', ...preview });
  return links;
}

/** A downloaded result named after its role, with the extension fal's file name or URL gives. */
export function resultFile(link: ResultLink, data: Buffer): GeneratedFile {
  const ext = /\.([a-z0-9]+)$/i.exec(link.fileName ?? new URL(link.url).pathname)?.[1]?.toLowerCase() ?? (link.type === 'image' ? 'webp' : 'glb');
  const fileName = `${link.role}.${ext}`;
  return { type: link.type, role: link.role, data, fileName, mimeType: guessMimeType(fileName, data) };
}
