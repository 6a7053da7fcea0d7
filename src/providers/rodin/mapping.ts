/**
 * Hyper3D Rodin (family B): gateway 3D generation requests → the multipart fields of POST /rodin,
 * and the status and download replies → generated files. Pure functions.
 */
import { guessMimeType } from '../../core/mime-type.ts';
import { TaskFailedError, TaskRejectedError, type EngineDeclaration, type GeneratedFile, type GenerationJob, type JobOf } from '../spec.ts';
import type { UpstreamPoll } from '../upstream-task-engine.ts';
import { readReply } from '../upstream-reply.ts';
import { RodinDownloads, RodinEnvelope, RodinStatus, RodinSubmitted } from './reply-schemas.ts';

type GenerateEndpoint = 'mesh3d.generate.text' | 'mesh3d.generate.image' | 'mesh3d.generate.multiview';
const GENERATION_ENDPOINTS: readonly string[] = ['mesh3d.generate.text', 'mesh3d.generate.image', 'mesh3d.generate.multiview'] satisfies GenerateEndpoint[];

/** The job as the generation it must be: Rodin runs nothing else. */
export function generationJob(job: GenerationJob): JobOf<GenerateEndpoint> {
  if (!GENERATION_ENDPOINTS.includes(job.endpoint)) throw new TaskRejectedError(`Rodin generates models only; it does not run ${job.endpoint} tasks`);
  return job as JobOf<GenerateEndpoint>;
}

/** Rodin's names of the Gen-2.5 tiers; Gen-2 has one tier whose catalog tiers go as `quality`. */
const GEN25_TIERS: Record<string, string> = {
  'extra-low': 'Gen-2.5-Extreme-Low',
  low: 'Gen-2.5-Low',
  medium: 'Gen-2.5-Medium',
  high: 'Gen-2.5-High',
  'extra-high': 'Gen-2.5-Extreme-High',
};
/** Gen-2 quality per catalog tier; Rodin has no quality above `high`. */
const GEN2_QUALITY: Record<string, string> = { 'extra-low': 'extra-low', low: 'low', medium: 'medium', high: 'high' };

/** Upstream tier and (Gen-2) quality of a catalog model's `Gen-2/<tier>` or `Gen-2.5/<tier>`. */
export function tierOf(defaultRealModelName: string): { generation: '2' | '2.5'; tier: string; quality?: string } {
  const m = /^Gen-(2(?:\.5)?)\/([a-z-]+)$/i.exec(defaultRealModelName);
  const level = m?.[2]?.toLowerCase();
  if (m?.[1] === '2.5' && level && GEN25_TIERS[level]) return { generation: '2.5', tier: GEN25_TIERS[level] };
  if (m?.[1] === '2' && level && GEN2_QUALITY[level]) return { generation: '2', tier: 'Gen-2', quality: GEN2_QUALITY[level] };
  throw new TaskRejectedError(`Rodin has no model for ${defaultRealModelName} (expected Gen-2/<extra-low|low|medium|high> or Gen-2.5/<extra-low|low|medium|high|extra-high>)`);
}

const SEED_MAX = 65535;

/** Request fields this mapping reads (RODIN_SERVES); the others are the task's warnings from its submit. */
const READ = new Set([
  'prompt', 'file', 'view_images', 'enable_texture', 'enable_pbr', 'texture_quality', 'topology', 'face_limit', 'seed', 'geometry_file_format', 't_pose',
  'texture_delight', 'geometry_instruct_mode', 'is_micro',
]);

/** The three generations, each reading the fields of READ. */
export const RODIN_SERVES: EngineDeclaration = Object.fromEntries([...GENERATION_ENDPOINTS].map((endpoint) => [endpoint, { fields: [...READ] }]));

export interface RodinForm {
  /** Text fields, booleans as "true"/"false" as Rodin takes them. */
  fields: [string, string][];
  /** Image references in upload order (the first one drives the material). */
  images: string[];
  /** Options the chosen generation could not honour. */
  warnings: string[];
}

/** Views in Rodin's order: front first, then the others as family C orders them. */
const VIEW_ORDER = ['front', 'left', 'back', 'right', 'left_front', 'right_front', 'top', 'bottom'];

function imagesOf(job: JobOf<GenerateEndpoint>): string[] {
  if (job.endpoint === 'mesh3d.generate.image') return [job.input.file.url];
  if (job.endpoint === 'mesh3d.generate.text') return [];
  return [...job.input.view_images].sort((a, b) => VIEW_ORDER.indexOf(a.view_type) - VIEW_ORDER.indexOf(b.view_type)).map((v) => v.file.url);
}

/** Checks what the upstream cannot take at all (before anything is sent). */
export function checkJob(job: GenerationJob): void {
  const { seed } = generationJob(job).input;
  tierOf(job.model.defaultRealModelName);
  if (seed !== undefined && (seed < 0 || seed > SEED_MAX)) throw new TaskRejectedError(`Rodin takes a seed from 0 to ${SEED_MAX}`);
}

/**
 * The POST /rodin form of a generation. Triangles go as mesh_mode Raw (the gateway's default
 * topology), quads as Quad; face_limit is the quality override; texture and PBR pick the material.
 */
export function rodinForm(job: JobOf<GenerateEndpoint>): RodinForm {
  const input = job.input;
  const { generation, tier, quality } = tierOf(job.model.defaultRealModelName);
  const fields: [string, string][] = [];
  const warnings: string[] = [];
  const put = (name: string, value: unknown) => {
    if (value !== undefined && value !== null) fields.push([name, String(value)]);
  };
  const quad = input.topology === 'quad';
  if (job.endpoint === 'mesh3d.generate.text') put('prompt', job.input.prompt);
  put('tier', tier);
  put('geometry_file_format', input.geometry_file_format);
  // Raw meshes come at medium quality whatever is asked (Rodin's constraint): the tier's quality goes with quads only.
  if (quad) put('quality', quality);
  put('mesh_mode', quad ? 'Quad' : 'Raw');
  put('quality_override', input.face_limit);
  put('seed', input.seed);
  put('TAPose', input.t_pose);

  if (input.enable_texture === false) {
    if (generation === '2.5') put('material', 'None');
    else warnings.push('enable_texture false: Gen-2 always textures its models (no material None)');
  } else if (input.enable_pbr !== undefined) {
    put('material', input.enable_pbr ? 'PBR' : 'Shaded');
  }
  if (input.texture_quality === 'detailed') {
    if (generation === '2.5') put('hd_texture', true);
    else if (quad) put('addons', 'HighPack');
    else warnings.push('texture_quality detailed: Gen-2 gives high-definition texture (HighPack) to quad meshes only');
  }
  if (generation === '2.5') {
    if (job.endpoint !== 'mesh3d.generate.text') put('texture_delight', job.input.texture_delight);
    put('geometry_instruct_mode', input.geometry_instruct_mode);
    put('is_micro', input.is_micro);
  }
  return { fields, images: imagesOf(job), warnings };
}

// ---- replies ----

/** Fails the task when the reply says Rodin refused the call. */
function checkRefusal(body: unknown, call: string): void {
  const { error, message } = readReply(RodinEnvelope, body, 'Rodin');
  if (error) throw new TaskFailedError(`Rodin refused ${call}: ${error}`, message ?? error);
}

/** The task uuid and the subscription key of the submit reply. */
export function submitted(body: unknown): { uuid: string; subscriptionKey: string } {
  checkRefusal(body, 'the generation');
  const reply = readReply(RodinSubmitted, body, 'Rodin');
  return { uuid: reply.uuid, subscriptionKey: reply.jobs.subscription_key };
}

/** The engine's view of POST /status: done when every job is Done, failed when any job Failed. */
export function statusState(body: unknown): Exclude<UpstreamPoll, { state: 'succeeded' }> | { state: 'done' } {
  checkRefusal(body, 'the status query');
  const statuses = readReply(RodinStatus, body, 'Rodin').jobs.map((j) => j.status);
  if (statuses.includes('Failed')) return { state: 'failed', message: 'Rodin generation failed', original: `job statuses: ${statuses.join(', ')}` };
  const done = statuses.filter((s) => s === 'Done').length;
  if (done === statuses.length) return { state: 'done' };
  return { state: 'running', progress: Math.round((done / statuses.length) * 100), message: statuses.join(', ') };
}

export interface RodinResult {
  url: string;
  name: string;
}

/** The files listed by POST /download. */
export function downloadList(body: unknown): RodinResult[] {
  checkRefusal(body, 'the download request');
  const files = (readReply(RodinDownloads, body, 'Rodin').list ?? []).map((f) => ({ url: f.url, name: f.name }));
  if (files.length === 0) throw new TaskFailedError('Rodin listed no result files', JSON.stringify(body).slice(0, 2000));
  return files;
}

const MODEL_EXT = /\.(glb|usdz|fbx|obj|stl)$/i;
const IMAGE_EXT = /\.(webp|png|jpe?g)$/i;

/**
 * The role of each listed file: the model in the requested format (else the first model file),
 * the preview picture, and the rest (an OBJ's material and textures) as plain files.
 */
export function resultFiles(results: { name: string; data: Buffer }[], format: string | undefined): GeneratedFile[] {
  const wanted = results.find((r) => r.name.toLowerCase().endsWith(`.${(format ?? 'glb').toLowerCase()}`)) ?? results.find((r) => MODEL_EXT.test(r.name));
  if (!wanted) throw new TaskFailedError('Rodin listed no model file', results.map((r) => r.name).join(', '));
  let preview = false;
  return results.map((r): GeneratedFile => {
    const ext = /\.([a-z0-9]+)$/i.exec(r.name)?.[1]?.toLowerCase() ?? 'bin';
    if (r === wanted) return { type: '3d', role: 'model', data: r.data, fileName: `model.${ext}`, mimeType: guessMimeType(`model.${ext}`, r.data) };
    if (!preview && IMAGE_EXT.test(r.name) && /preview/i.test(r.name)) {
      preview = true;
      return { type: 'image', role: 'preview', data: r.data, fileName: `preview.${ext}`, mimeType: guessMimeType(`preview.${ext}`, r.data) };
    }
    const fileName = r.name.replace(/[^\w.-]+/g, '_');
    return { type: MODEL_EXT.test(r.name) ? '3d' : 'file', data: r.data, fileName, mimeType: guessMimeType(fileName, r.data) };
  });
}
