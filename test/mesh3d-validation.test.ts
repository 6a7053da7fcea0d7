/**
 * The 3D request rules, one row per rule: a request the
 * rule accepts (200 with a task id, and the task input it normalizes to) and one it refuses
 * (status, code and param). The server's engine is scripted so edit sources of every kind
 * exist in a few milliseconds.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { BUILTIN_CATALOG_PATH } from '../src/catalog/catalog.ts';
import { TaskFailedError, type GenerationEngine, type GenerationJob, type GenerationOutput, type RunContext } from '../src/providers/spec.ts';
import { startTestServer, tempDataDir, type TestServer } from './support/server.ts';
import { eventually } from './support/wait.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/**
 * Stands in for the mesh engine: an upstream task id saved for every task, a model file per task
 * (content unique to the task), parts for segmentation, the requested rig for rig, no model file
 * for the riggability check, and a failure for the prompt `fail`.
 */
const scriptedEngine: GenerationEngine = {
  cancellable: true,
  async run(job: GenerationJob, ctx: RunContext): Promise<GenerationOutput> {
    await ctx.remember({ upstream: { provider: 'scripted', task_id: `up-${job.taskId}` } });
    if (job.endpoint === 'mesh3d.generate.text' && job.input.prompt === 'fail') throw new TaskFailedError('scripted failure');
    const op = job.endpoint.split('.').pop();
    if (op === 'check_riggable') return { files: [], extra: { riggable: true, rig_type: 'biped' } };
    const extra: Record<string, unknown> = { face_count: 100, format: 'glb' };
    if (op === 'segmentation') extra.parts = ['head', 'body', 'legs'];
    if (job.endpoint === 'mesh3d.edit.rig') extra.rig = { rig_type: job.input.rig_type, spec: job.input.spec, bones: ['hips', 'spine'] };
    return {
      files: [
        { type: '3d', role: 'model', data: Buffer.from(`model of ${job.taskId}`), fileName: `${job.taskId}.glb`, mimeType: 'model/gltf-binary' },
        { type: 'image', role: 'preview', data: Buffer.from(`preview of ${job.taskId}`), fileName: `${job.taskId}.png`, mimeType: 'image/png' },
      ],
      extra,
    };
  },
};

/**
 * Deployment overrides: capabilities that win over the family tables (or, removed, let them
 * apply), a disabled model, a generation model declaring rig.
 */
const CONFIG = {
  models: {
    'rodin-gen2.5-medium': { capabilities: { text_to_model: { face_limit_range_by_topology: { triangle: { min: 600, max: 700 }, quad: { min: 1000, max: 200000 } } } } },
    'rodin-gen2-medium': { enabled: false, disabled_reason: 'maintenance' },
    'tripo-v3.0': { capabilities: { mesh_edit: { supported_operations: { texture: { supported: true }, rig: { supported: true } } } } },
    'hunyuan3d-pro-3.1': { capabilities: { multiview_to_model: { multiview_input: null, multiview_required_slots: null } } },
    'fal-tripo-p1': { capabilities: { image_to_model: { pbr_required_when_texture: true } } },
  },
};

/**
 * Operator catalog entries beside the built-in ones: a Tripo version of the H series whose
 * capabilities say nothing (the family table applies), a provider no family describes (its
 * capabilities alone apply) and a family A re-topology model.
 */
const EXTRA_CATALOG = {
  providers: [{ code: 'acme', name: 'acme', displayName: 'Acme 3D' }],
  baseModels: [
    { catalogKey: 'base:runtime:tripo-next', providerCode: 'tripo', displayName: 'Tripo next', alias: 'tripo-next', defaultRealModelName: 'v3.0-20990101', modelTypes: ['text_to_model'], capabilities: { text_to_model: { type: 'text_to_model' } }, status: 'active' },
    {
      catalogKey: 'base:runtime:acme-mesh',
      providerCode: 'acme',
      displayName: 'Acme mesh',
      alias: 'acme-mesh',
      defaultRealModelName: 'acme-1',
      modelTypes: ['text_to_model'],
      capabilities: { text_to_model: { type: 'text_to_model', face_limit_range: { min: 10, max: 100 }, support_quad: false, support_texture: true } },
      status: 'active',
    },
    { catalogKey: 'base:runtime:hunyuan3d-lowpoly', providerCode: 'hunyuan', displayName: 'Hunyuan3D re-topology', alias: 'hunyuan3d-lowpoly', defaultRealModelName: 'hunyuan3d-reduce-face', modelTypes: ['mesh_edit'], capabilities: { mesh_edit: { type: 'mesh_edit', supported_operations: { smart_lowpoly: { supported: true } } } }, status: 'active' },
  ],
};

const IMG = (name: string) => ({ url: `http://127.0.0.1:9/${name}.png`, mimetype: 'image/png' });
const views = (...types: string[]) => types.map((t) => ({ view_type: t, file: IMG(t) }));
const text = (model: string, extra: Json = {}) => ({ model, prompt: 'a small robot', ...extra });
const image = (model: string, extra: Json = {}) => ({ model, file: IMG('photo'), ...extra });
const multiview = (model: string, types: string[], extra: Json = {}) => ({ model, view_images: views(...types), ...extra });

/** Histories the edit rows work on, made before the rows run. */
interface Sources {
  gen: string;
  genA: string;
  turbo: string;
  seg: string;
  rigA: string;
  rigB: string;
  conv: string;
  check: string;
  failed: string;
  foreign: string;
  genTask: string;
  /** Content hash of the generation's model file. */
  genModel: string;
  turboTask: string;
  fileUrl: string;
  assetId: string;
  assetHash: string;
}

type Body = Record<string, unknown> | ((s: Sources) => Json);

interface Rule {
  rule: string;
  path: string;
  ok: Body;
  bad: Body;
  /** Status, code and param of the refusal. */
  error: [number, string, string | null];
  /** Checks of the accepted request's task input. */
  input?: (input: Json, s: Sources) => void;
}

const T = '/v1/mesh3d/generate/text';
const I = '/v1/mesh3d/generate/image';
const M = '/v1/mesh3d/generate/multiview';
const E = (op: string) => `/v1/mesh3d/edit/${op}`;
const SEG = 'tripo-segment-v1.0';
const LOWPOLY = 'tripo-smart-lowpoly-v2.0';
const TEX = 'tripo-texture-v2.5';
const RIG = 'tripo-rig-v2.5';

const GENERATION_RULES: Rule[] = [
  // Models.
  { rule: 'unknown model is 404', path: T, ok: text('tripo-v3.1'), bad: text('no-such-model'), error: [404, 'model_not_found', 'model'] },
  { rule: 'disabled model', path: T, ok: text('rodin-gen2-low'), bad: text('rodin-gen2-medium'), error: [400, 'model_disabled', 'model'] },
  { rule: 'an edit model cannot replace a generation model', path: T, ok: text('tripo-v3.1'), bad: text(SEG), error: [400, 'model_capability_mismatch', 'model'] },
  { rule: 'a legacy alias only serves its own generation type', path: T, ok: text('tripo-v2.5-text'), bad: text('tripo-v2.5-image'), error: [400, 'model_capability_mismatch', 'model'] },
  { rule: 'A fast has no multiview', path: M, ok: multiview('hunyuan3d-pro-3.0', ['front', 'left']), bad: multiview('hunyuan3d-rapid-2.5', ['front', 'left']), error: [400, 'model_capability_mismatch', 'model'] },
  // Prompts.
  { rule: 'prompt up to 1024 characters', path: T, ok: text('tripo-v3.1', { prompt: 'é'.repeat(1024) }), bad: text('tripo-v3.1', { prompt: 'x'.repeat(1025) }), error: [400, 'prompt_too_long', 'prompt'] },
  { rule: 'negative_prompt up to 255 characters', path: T, ok: text('tripo-p1', { negative_prompt: 'x'.repeat(255) }), bad: text('tripo-p1', { negative_prompt: 'x'.repeat(256) }), error: [400, 'prompt_too_long', 'negative_prompt'] },
  // Fields by family.
  { rule: 'geometry_quality: C H series, not P1', path: T, ok: text('tripo-v3.0', { geometry_quality: 'detailed' }), bad: text('tripo-p1', { geometry_quality: 'standard' }), error: [400, 'unsupported_parameter', 'geometry_quality'] },
  { rule: 'geometry_quality: D v3.1, not A', path: T, ok: text('fal-tripo-v3.1', { geometry_quality: 'detailed' }), bad: text('hunyuan3d-pro-3.1', { geometry_quality: 'detailed' }), error: [400, 'unsupported_parameter', 'geometry_quality'] },
  { rule: 'geometry_quality: not B, not D P1', path: T, ok: text('tripo-v3.1', { geometry_quality: 'standard' }), bad: text('fal-tripo-p1', { geometry_quality: 'standard' }), error: [400, 'unsupported_parameter', 'geometry_quality'] },
  { rule: 'geometry_quality not for B', path: T, ok: text('tripo-v3.1'), bad: text('rodin-gen2-low', { geometry_quality: 'standard' }), error: [400, 'unsupported_parameter', 'geometry_quality'] },
  { rule: 'texture_quality: B, C, D; not A', path: T, ok: text('rodin-gen2-low', { texture_quality: 'detailed' }), bad: text('hunyuan3d-pro-3.0', { texture_quality: 'detailed' }), error: [400, 'unsupported_parameter', 'texture_quality'] },
  { rule: 'texture_quality on D', path: T, ok: text('fal-tripo-p1', { texture_quality: 'detailed' }), bad: text('hunyuan3d-rapid-2.5', { texture_quality: 'standard' }), error: [400, 'unsupported_parameter', 'texture_quality'] },
  { rule: 'topology: B takes quad, A v3.1 not', path: T, ok: text('rodin-gen2-low', { topology: 'quad' }), bad: text('hunyuan3d-pro-3.1', { topology: 'triangle' }), error: [400, 'unsupported_parameter', 'topology'] },
  { rule: 'topology: not P1, not D', path: T, ok: text('tripo-v3.1', { topology: 'quad' }), bad: text('tripo-p1', { topology: 'quad' }), error: [400, 'unsupported_parameter', 'topology'] },
  { rule: 'topology on D', path: T, ok: text('tripo-v3.1', { topology: 'triangle' }), bad: text('fal-tripo-v3.1', { topology: 'triangle' }), error: [400, 'unsupported_parameter', 'topology'] },
  { rule: 'topology: A v3.0 only with low-poly', path: T, ok: text('hunyuan3d-pro-3.0', { smart_low_poly: true, topology: 'quad' }), bad: text('hunyuan3d-pro-3.0', { topology: 'quad' }), error: [400, 'unsupported_parameter', 'topology'] },
  { rule: 'topology: legacy C only with quad support', path: T, ok: text('tripo-v2.5-text', { topology: 'quad' }), bad: text('tripo-turbo-v1.0-text', { topology: 'quad' }), error: [400, 'unsupported_parameter', 'topology'] },
  { rule: 'smart_low_poly: C H series and A v3.0, not A v3.1', path: T, ok: text('tripo-v3.1', { smart_low_poly: true }), bad: text('hunyuan3d-pro-3.1', { smart_low_poly: true }), error: [400, 'unsupported_parameter', 'smart_low_poly'] },
  { rule: 'smart_low_poly: not P1, B or D', path: T, ok: text('hunyuan3d-pro-3.0', { smart_low_poly: true }), bad: text('rodin-gen2-low', { smart_low_poly: false }), error: [400, 'unsupported_parameter', 'smart_low_poly'] },
  { rule: 'smart_low_poly never sent to P1, not even false', path: T, ok: text('tripo-v3.0', { smart_low_poly: false }), bad: text('tripo-p1', { smart_low_poly: false }), error: [400, 'unsupported_parameter', 'smart_low_poly'] },
  { rule: 'generate_parts: C v3.x and legacy with parts, not P1', path: T, ok: text('tripo-v2.5-text', { generate_parts: true }), bad: text('tripo-p1', { generate_parts: true }), error: [400, 'unsupported_parameter', 'generate_parts'] },
  { rule: 'generate_parts: not legacy without parts, not D', path: T, ok: text('tripo-v3.1', { generate_parts: true }), bad: text('tripo-turbo-v1.0-text', { generate_parts: true }), error: [400, 'unsupported_parameter', 'generate_parts'] },
  { rule: 'seed: C and B, not A or D', path: T, ok: text('rodin-gen2-low', { seed: 7 }), bad: text('fal-tripo-v3.1', { seed: 7 }), error: [400, 'unsupported_parameter', 'seed'] },
  { rule: 'texture_seed, auto_size, export_uv: C including P1', path: T, ok: text('tripo-p1', { texture_seed: 3, auto_size: true, export_uv: true }), bad: text('rodin-gen2-low', { texture_seed: 3 }), error: [400, 'unsupported_parameter', 'texture_seed'] },
  { rule: 'export_uv not for A', path: T, ok: text('tripo-v3.1', { export_uv: false }), bad: text('hunyuan3d-pro-3.0', { export_uv: true }), error: [400, 'unsupported_parameter', 'export_uv'] },
  { rule: 'negative_prompt and image_seed: C text only', path: T, ok: text('tripo-v3.1', { negative_prompt: 'blurry', image_seed: 5 }), bad: text('hunyuan3d-pro-3.1', { image_seed: 5 }), error: [400, 'unsupported_parameter', 'image_seed'] },
  { rule: 'negative_prompt not on image generation', path: I, ok: image('tripo-v3.1'), bad: image('tripo-v3.1', { negative_prompt: 'blurry' }), error: [400, 'unsupported_parameter', 'negative_prompt'] },
  { rule: 'geometry_file_format and t_pose: B only', path: T, ok: text('rodin-gen2-low', { geometry_file_format: 'fbx', t_pose: true }), bad: text('tripo-v3.1', { t_pose: true }), error: [400, 'unsupported_parameter', 't_pose'] },
  { rule: 'geometry_file_format values', path: T, ok: text('rodin-gen2-low', { geometry_file_format: 'stl' }), bad: text('rodin-gen2-low', { geometry_file_format: 'ply' }), error: [400, 'invalid_parameter', 'geometry_file_format'] },
  { rule: 'texture_delight: B 2.5 image, not B 2', path: I, ok: image('rodin-gen2.5-low', { texture_delight: true }), bad: image('rodin-gen2-low', { texture_delight: true }), error: [400, 'unsupported_parameter', 'texture_delight'] },
  { rule: 'texture_delight not on text', path: T, ok: text('rodin-gen2.5-low'), bad: text('rodin-gen2.5-low', { texture_delight: true }), error: [400, 'unsupported_parameter', 'texture_delight'] },
  { rule: 'texture_delight needs texture', path: M, ok: multiview('rodin-gen2.5-low', ['front', 'back'], { texture_delight: true, enable_texture: true }), bad: multiview('rodin-gen2.5-low', ['front', 'back'], { texture_delight: true, enable_texture: false }), error: [400, 'invalid_parameter', 'texture_delight'] },
  { rule: 'geometry_instruct_mode: creative from Medium up', path: T, ok: text('rodin-gen2.5-medium', { geometry_instruct_mode: 'creative' }), bad: text('rodin-gen2.5-low', { geometry_instruct_mode: 'creative' }), error: [400, 'invalid_parameter', 'geometry_instruct_mode'] },
  { rule: 'geometry_instruct_mode: B 2.5 only', path: T, ok: text('rodin-gen2.5-extra-low', { geometry_instruct_mode: 'faithful' }), bad: text('rodin-gen2-low', { geometry_instruct_mode: 'faithful' }), error: [400, 'unsupported_parameter', 'geometry_instruct_mode'] },
  { rule: 'is_micro: B 2.5 Extra-High only', path: T, ok: text('rodin-gen2.5-extra-high', { is_micro: true }), bad: text('rodin-gen2.5-high', { is_micro: true }), error: [400, 'unsupported_parameter', 'is_micro'] },
  { rule: 'enable_image_autofix: C', path: I, ok: image('tripo-p1', { enable_image_autofix: true }), bad: image('hunyuan3d-pro-3.0', { enable_image_autofix: true }), error: [400, 'unsupported_parameter', 'enable_image_autofix'] },
  { rule: 'texture_alignment and orientation: C image', path: I, ok: image('tripo-p1', { texture_alignment: 'geometry', orientation: 'align_image' }), bad: image('rodin-gen2-low', { orientation: 'default' }), error: [400, 'unsupported_parameter', 'orientation'] },
  { rule: 'unknown fields are refused', path: T, ok: text('tripo-v3.1'), bad: text('tripo-v3.1', { style: 'clay' }), error: [400, 'unsupported_parameter', 'style'] },
  // face_limit.
  { rule: 'face_limit unsupported on A fast', path: T, ok: text('hunyuan3d-rapid-2.5'), bad: text('hunyuan3d-rapid-2.5', { face_limit: 10000 }), error: [400, 'unsupported_parameter', 'face_limit'] },
  { rule: 'face_limit unsupported on D', path: T, ok: text('fal-tripo-p1'), bad: text('fal-tripo-p1', { face_limit: 10000 }), error: [400, 'unsupported_parameter', 'face_limit'] },
  { rule: 'A pro: 3000 at least', path: T, ok: text('hunyuan3d-pro-3.1', { face_limit: 3000 }), bad: text('hunyuan3d-pro-3.1', { face_limit: 2999 }), error: [400, 'face_limit_out_of_range', 'face_limit'] },
  { rule: 'A pro: 1500000 at most', path: T, ok: text('hunyuan3d-pro-3.0', { face_limit: 1_500_000 }), bad: text('hunyuan3d-pro-3.0', { face_limit: 1_500_001 }), error: [400, 'face_limit_out_of_range', 'face_limit'] },
  { rule: 'never 1000 as automatic', path: T, ok: text('hunyuan3d-pro-3.1'), bad: text('hunyuan3d-pro-3.1', { face_limit: 1000 }), error: [400, 'face_limit_out_of_range', 'face_limit'] },
  { rule: 'never 0', path: T, ok: text('tripo-p1', { face_limit: 48 }), bad: text('tripo-p1', { face_limit: 0 }), error: [400, 'face_limit_out_of_range', 'face_limit'] },
  { rule: 'never auto', path: T, ok: text('tripo-v3.1'), bad: text('tripo-v3.1', { face_limit: 'auto' }), error: [400, 'face_limit_out_of_range', 'face_limit'] },
  {
    rule: 'A v3.0 low-poly ignores face_limit',
    path: T,
    ok: text('hunyuan3d-pro-3.0', { smart_low_poly: true, face_limit: 10 }),
    bad: text('hunyuan3d-pro-3.0', { face_limit: 10 }),
    error: [400, 'face_limit_out_of_range', 'face_limit'],
    input: (i) => assert.equal(i.face_limit, undefined),
  },
  { rule: 'P1: 48 to 20000', path: T, ok: text('tripo-p1', { face_limit: 20_000 }), bad: text('tripo-p1', { face_limit: 20_001 }), error: [400, 'face_limit_out_of_range', 'face_limit'] },
  { rule: 'P1 minimum', path: I, ok: image('tripo-p1', { face_limit: 50 }), bad: image('tripo-p1', { face_limit: 47 }), error: [400, 'face_limit_out_of_range', 'face_limit'] },
  { rule: 'C v3.x standard triangle up to 1000000', path: T, ok: text('tripo-v3.1', { face_limit: 1_000_000 }), bad: text('tripo-v3.1', { face_limit: 1_000_001 }), error: [400, 'face_limit_out_of_range', 'face_limit'] },
  { rule: 'C v3.x standard triangle from 1000', path: T, ok: text('tripo-v3.1', { face_limit: 1000 }), bad: text('tripo-v3.1', { face_limit: 999 }), error: [400, 'face_limit_out_of_range', 'face_limit'] },
  { rule: 'C v3.x standard quad up to 500000', path: T, ok: text('tripo-v3.0', { topology: 'quad', face_limit: 500_000 }), bad: text('tripo-v3.0', { topology: 'quad', face_limit: 500_001 }), error: [400, 'face_limit_out_of_range', 'face_limit'] },
  { rule: 'C v3.x detailed triangle up to 2000000', path: T, ok: text('tripo-v3.1', { geometry_quality: 'detailed', face_limit: 2_000_000 }), bad: text('tripo-v3.1', { geometry_quality: 'detailed', face_limit: 2_000_001 }), error: [400, 'face_limit_out_of_range', 'face_limit'] },
  { rule: 'C v3.x detailed quad up to 1000000', path: M, ok: multiview('tripo-v3.1', ['front', 'back'], { geometry_quality: 'detailed', topology: 'quad', face_limit: 1_000_000 }), bad: multiview('tripo-v3.1', ['front', 'back'], { geometry_quality: 'detailed', topology: 'quad', face_limit: 1_000_001 }), error: [400, 'face_limit_out_of_range', 'face_limit'] },
  { rule: 'C smart low-poly triangle up to 20000, over the quality ranges', path: T, ok: text('tripo-v3.1', { smart_low_poly: true, geometry_quality: 'detailed', face_limit: 20_000 }), bad: text('tripo-v3.1', { smart_low_poly: true, geometry_quality: 'detailed', face_limit: 20_001 }), error: [400, 'face_limit_out_of_range', 'face_limit'] },
  { rule: 'C smart low-poly quad 500 to 10000', path: T, ok: text('tripo-v3.1', { smart_low_poly: true, topology: 'quad', face_limit: 500 }), bad: text('tripo-v3.1', { smart_low_poly: true, topology: 'quad', face_limit: 10_001 }), error: [400, 'face_limit_out_of_range', 'face_limit'] },
  { rule: 'C legacy quad up to 500000', path: T, ok: text('tripo-v2.5-text', { topology: 'quad', face_limit: 500_000 }), bad: text('tripo-v2.5-text', { topology: 'quad', face_limit: 500_001 }), error: [400, 'face_limit_out_of_range', 'face_limit'] },
  { rule: 'C legacy triangle up to 1000000', path: T, ok: text('tripo-turbo-v1.0-text', { face_limit: 1_000_000 }), bad: text('tripo-turbo-v1.0-text', { face_limit: 1_000_001 }), error: [400, 'face_limit_out_of_range', 'face_limit'] },
  { rule: 'B low tiers triangle from 500', path: T, ok: text('rodin-gen2-low', { face_limit: 500 }), bad: text('rodin-gen2-low', { face_limit: 499 }), error: [400, 'face_limit_out_of_range', 'face_limit'] },
  { rule: 'B quad up to 200000', path: T, ok: text('rodin-gen2.5-extra-low', { topology: 'quad', face_limit: 200_000 }), bad: text('rodin-gen2.5-extra-low', { topology: 'quad', face_limit: 200_001 }), error: [400, 'face_limit_out_of_range', 'face_limit'] },
  { rule: 'B 2.5 High triangle from 20000', path: T, ok: text('rodin-gen2.5-high', { face_limit: 20_000 }), bad: text('rodin-gen2.5-high', { face_limit: 19_999 }), error: [400, 'face_limit_out_of_range', 'face_limit'] },
  { rule: 'B 2.5 Extra-High triangle up to 2000000', path: T, ok: text('rodin-gen2.5-extra-high', { face_limit: 2_000_000 }), bad: text('rodin-gen2.5-extra-high', { face_limit: 2_000_001 }), error: [400, 'face_limit_out_of_range', 'face_limit'] },
  { rule: 'family and version come from providerCode and defaultRealModelName', path: T, ok: text('tripo-next', { geometry_quality: 'detailed', face_limit: 2_000_000 }), bad: text('tripo-next', { geometry_quality: 'detailed', face_limit: 2_000_001 }), error: [400, 'face_limit_out_of_range', 'face_limit'] },
  { rule: 'a model of no family: its face-limit capabilities', path: T, ok: text('acme-mesh', { face_limit: 100, seed: 1 }), bad: text('acme-mesh', { face_limit: 101 }), error: [400, 'face_limit_out_of_range', 'face_limit'] },
  { rule: 'a model of no family: its capability flags', path: T, ok: text('acme-mesh', { enable_texture: true }), bad: text('acme-mesh', { topology: 'triangle' }), error: [400, 'unsupported_parameter', 'topology'] },
  { rule: 'live capabilities win over the family table', path: T, ok: text('rodin-gen2.5-medium', { face_limit: 650 }), bad: text('rodin-gen2.5-medium', { face_limit: 800 }), error: [400, 'face_limit_out_of_range', 'face_limit'] },
  // Texture and PBR.
  {
    rule: 'C: PBR turns texture on',
    path: T,
    ok: text('tripo-v3.1', { enable_pbr: true, enable_texture: false }),
    bad: text('rodin-gen2-low', { enable_pbr: true, enable_texture: false }),
    error: [400, 'invalid_parameter', 'enable_pbr'],
    input: (i) => assert.deepEqual([i.enable_texture, i.enable_pbr], [true, true]),
  },
  { rule: 'A: both off is geometry only; PBR needs texture', path: T, ok: text('hunyuan3d-pro-3.1', { enable_pbr: false, enable_texture: false }), bad: text('hunyuan3d-pro-3.1', { enable_pbr: true, enable_texture: false }), error: [400, 'invalid_parameter', 'enable_pbr'] },
  { rule: 'a model may need PBR with texture', path: I, ok: image('fal-tripo-p1', { enable_pbr: true }), bad: image('fal-tripo-p1', { enable_pbr: false }), error: [400, 'invalid_parameter', 'enable_pbr'] },
  { rule: 'D: texture off requires PBR off', path: T, ok: text('fal-tripo-v3.1', { enable_texture: false, enable_pbr: false }), bad: text('fal-tripo-v3.1', { enable_texture: false, enable_pbr: true }), error: [400, 'invalid_parameter', 'enable_pbr'] },
  {
    rule: 'C defaults: texture on, PBR off',
    path: T,
    ok: text('tripo-v3.1'),
    bad: text('tripo-v3.1', { enable_texture: 'yes' }),
    error: [400, 'invalid_parameter', 'enable_texture'],
    input: (i) => assert.deepEqual([i.enable_texture, i.enable_pbr, i.model], [true, false, undefined]),
  },
  {
    rule: 'generate_parts excludes texture',
    path: T,
    ok: text('tripo-v3.1', { generate_parts: true }),
    bad: text('tripo-v3.1', { generate_parts: true, enable_texture: true }),
    error: [400, 'invalid_parameter', 'enable_texture'],
    input: (i) => assert.deepEqual([i.enable_texture, i.enable_pbr], [false, false]),
  },
  { rule: 'generate_parts excludes PBR', path: T, ok: text('tripo-v3.0', { generate_parts: true, enable_pbr: false }), bad: text('tripo-v3.0', { generate_parts: true, enable_pbr: true }), error: [400, 'invalid_parameter', 'enable_pbr'] },
  { rule: 'generate_parts excludes quad', path: T, ok: text('tripo-v3.0', { generate_parts: true, topology: 'triangle' }), bad: text('tripo-v3.0', { generate_parts: true, topology: 'quad' }), error: [400, 'invalid_parameter', 'topology'] },
  { rule: 'B defaults to GLB output', path: T, ok: text('rodin-gen2-low'), bad: text('rodin-gen2-low', { enable_pbr: 1 }), error: [400, 'invalid_parameter', 'enable_pbr'], input: (i) => assert.equal(i.geometry_file_format, 'glb') },
  // Views.
  { rule: 'multiview needs front', path: M, ok: multiview('tripo-v3.1', ['front', 'left']), bad: multiview('tripo-v3.1', ['left', 'back']), error: [400, 'multiview_front_required', 'view_images'] },
  { rule: 'multiview needs 2 images', path: M, ok: multiview('tripo-p1', ['front', 'right']), bad: multiview('tripo-p1', ['front']), error: [400, 'view_count_unsupported', 'view_images'] },
  { rule: 'D takes exactly 4 views', path: M, ok: multiview('fal-tripo-p1', ['front', 'left', 'back', 'right']), bad: multiview('fal-tripo-p1', ['front', 'left', 'back']), error: [400, 'view_count_unsupported', 'view_images'] },
  { rule: 'A v3.1 takes up to 8 views', path: M, ok: multiview('hunyuan3d-pro-3.1', ['front', 'left', 'back', 'right', 'left_front', 'right_front', 'top', 'bottom']), bad: multiview('hunyuan3d-pro-3.1', ['front']), error: [400, 'view_count_unsupported', 'view_images'] },
  { rule: 'A v3.0 takes four semantic views', path: M, ok: multiview('hunyuan3d-pro-3.0', ['front', 'left', 'back', 'right']), bad: multiview('hunyuan3d-pro-3.0', ['front', 'top']), error: [400, 'view_type_unsupported', 'view_images[1].view_type'] },
  { rule: 'B takes up to 5 views of its set', path: M, ok: multiview('rodin-gen2-low', ['front', 'left', 'back', 'right', 'top']), bad: multiview('rodin-gen2-low', ['front', 'bottom']), error: [400, 'view_type_unsupported', 'view_images[1].view_type'] },
  { rule: 'unknown view types', path: M, ok: multiview('tripo-v2.5-multiview', ['front', 'back']), bad: multiview('tripo-v2.5-multiview', ['front', 'side']), error: [400, 'view_type_unsupported', 'view_images[1].view_type'] },
  { rule: 'one image per view', path: M, ok: multiview('tripo-v3.0', ['front', 'left', 'back']), bad: multiview('tripo-v3.0', ['front', 'left', 'left']), error: [400, 'invalid_parameter', 'view_images[2].view_type'] },
  {
    rule: 'legacy files: four slots, null for missing views',
    path: M,
    ok: { model: 'tripo-v3.1', files: [IMG('f'), null, IMG('b'), null] },
    bad: { model: 'tripo-v3.1', files: [IMG('f'), IMG('l'), IMG('b')] },
    error: [400, 'invalid_parameter', 'files'],
    input: (i) => {
      assert.deepEqual(i.view_images.map((v: Json) => v.view_type), ['front', 'back']);
      assert.equal(i.files, undefined);
    },
  },
  { rule: 'legacy files: front cannot be empty', path: M, ok: { model: 'tripo-v3.1', files: [IMG('f'), IMG('l'), null, null] }, bad: { model: 'tripo-v3.1', files: [null, IMG('l'), IMG('b'), null] }, error: [400, 'multiview_front_required', 'files[0]'] },
  { rule: 'legacy files: at least 2 images', path: M, ok: { model: 'tripo-v3.1', files: [IMG('f'), null, null, IMG('r')] }, bad: { model: 'tripo-v3.1', files: [IMG('f'), null, null, null] }, error: [400, 'view_count_unsupported', 'files'] },
  {
    rule: 'view_images win over files',
    path: M,
    ok: { model: 'tripo-v3.1', view_images: views('front', 'left'), files: [null, null] },
    bad: { model: 'tripo-v3.1' },
    error: [400, 'missing_parameter', 'view_images'],
    input: (i) => assert.deepEqual(i.view_images.map((v: Json) => v.view_type), ['front', 'left']),
  },
  { rule: 'view images of the allowed types', path: M, ok: multiview('tripo-v3.1', ['front', 'left']), bad: { model: 'tripo-v3.1', view_images: [{ view_type: 'front', file: { url: 'http://127.0.0.1:9/f.gif', mimetype: 'image/gif' } }, ...views('left')] }, error: [400, 'invalid_parameter', 'view_images[0].file.mimetype'] },
  { rule: 'view images within the side limits', path: M, ok: { model: 'tripo-v3.1', view_images: [{ view_type: 'front', file: { ...IMG('f'), width: 20, height: 6000 } }, ...views('left')] }, bad: { model: 'tripo-v3.1', view_images: [{ view_type: 'front', file: { ...IMG('f'), width: 19, height: 300 } }, ...views('left')] }, error: [400, 'invalid_parameter', 'view_images[0].file.width'] },
  // File sources.
  { rule: 'a file needs a source', path: I, ok: image('tripo-v3.1'), bad: { model: 'tripo-v3.1', file: { originalname: 'a.png' } }, error: [400, 'missing_parameter', 'file'] },
  { rule: 'file.url is an http(s) URL', path: I, ok: image('tripo-v3.1', { file: { url: 'https://example.com/a.png' } }), bad: image('tripo-v3.1', { file: { url: 'ftp://example.com/a.png' } }), error: [400, 'url_not_allowed', 'file.url'] },
  { rule: 'file.url is not a data URI', path: I, ok: image('tripo-v3.1', { file: { url: 'https://example.com/a.png' } }), bad: image('tripo-v3.1', { file: { url: 'data:image/png;base64,iVBORw0KGgo=' } }), error: [400, 'invalid_parameter', 'file.url'] },
  {
    rule: 'file.path names a file of this gateway',
    path: I,
    ok: (s) => image('tripo-v3.1', { file: { path: new URL(s.fileUrl).pathname } }),
    bad: image('tripo-v3.1', { file: { path: '/etc/passwd' } }),
    error: [400, 'invalid_parameter', 'file.path'],
    input: (i, s) => assert.equal(i.file.url, s.fileUrl),
  },
  { rule: 'file.file_token is the hash of one of your assets', path: I, ok: (s) => image('tripo-v3.1', { file: { file_token: s.assetHash } }), bad: image('tripo-v3.1', { file: { file_token: `blake3:${'0'.repeat(64)}` } }), error: [400, 'invalid_parameter', 'file.file_token'], input: (i, s) => assert.equal(i.file.url, s.assetHash) },
  { rule: 'file.object is one of your assets', path: I, ok: (s) => image('tripo-v3.1', { file: { object: s.assetId } }), bad: image('tripo-v3.1', { file: { object: 'not-an-asset' } }), error: [400, 'invalid_parameter', 'file.object'], input: (i, s) => assert.equal(i.file.url, s.assetHash) },
  { rule: 'D takes public URLs only', path: I, ok: image('fal-tripo-v3.1'), bad: (s) => image('fal-tripo-v3.1', { file: { file_token: s.assetHash } }), error: [400, 'unsupported_parameter', 'file.file_token'] },
  { rule: 'family C input images are JPEG or PNG', path: I, ok: image('tripo-v3.1', { file: { url: 'http://127.0.0.1:9/a.jpg', mimetype: 'image/jpeg' } }), bad: image('tripo-v3.1', { file: { url: 'http://127.0.0.1:9/a.webp', mimetype: 'image/webp' } }), error: [400, 'invalid_parameter', 'file.mimetype'] },
];

const EDIT_RULES: Rule[] = [
  // Models and sources.
  { rule: 'unknown edit model', path: E('segmentation'), ok: (s) => ({ history_id: s.gen, model: SEG }), bad: (s) => ({ history_id: s.gen, model: 'no-such-model' }), error: [404, 'model_not_found', 'model'] },
  { rule: 'the alias must declare the operation', path: E('segmentation'), ok: (s) => ({ history_id: s.gen, model: SEG }), bad: (s) => ({ history_id: s.gen, model: 'tripo-v3.1' }), error: [400, 'model_capability_mismatch', 'model'] },
  { rule: 'a generation-only alias cannot edit', path: E('convert'), ok: (s) => ({ history_id: s.gen, model: 'tripo-v3.1', format: 'OBJ' }), bad: (s) => ({ history_id: s.gen, model: 'tripo-p1', format: 'OBJ' }), error: [400, 'model_capability_mismatch', 'model'] },
  { rule: 'an edit model serves its own operation only', path: E('rig'), ok: (s) => ({ history_id: s.gen, model: RIG }), bad: (s) => ({ history_id: s.gen, model: SEG }), error: [400, 'model_capability_mismatch', 'model'] },
  { rule: 'unknown history', path: E('stylize'), ok: (s) => ({ history_id: s.gen, model: 'tripo-v3.1', style: 'voxel' }), bad: { history_id: 'hist_unknown', model: 'tripo-v3.1', style: 'voxel' }, error: [404, 'history_not_found', 'history_id'] },
  { rule: "another user's history", path: E('stylize'), ok: (s) => ({ history_id: s.gen, model: 'tripo-v3.1', style: 'brick' }), bad: (s) => ({ history_id: s.foreign, model: 'tripo-v3.1', style: 'brick' }), error: [404, 'history_not_found', 'history_id'] },
  { rule: 'a failed history', path: E('check-riggable'), ok: (s) => ({ history_id: s.gen, model: RIG }), bad: (s) => ({ history_id: s.failed, model: RIG }), error: [404, 'history_not_found', 'history_id'] },
  // Segmentation and completion.
  { rule: 'segmentation works on family C', path: E('segmentation'), ok: (s) => ({ history_id: s.gen, model: SEG }), bad: (s) => ({ history_id: s.genA, model: SEG }), error: [400, 'history_source_unsupported', 'history_id'] },
  { rule: 'segmentation model version', path: E('segmentation'), ok: (s) => ({ history_id: s.gen, model: SEG, model_version_seg: 'v1.0-20250506' }), bad: (s) => ({ history_id: s.gen, model: SEG, model_version_seg: 'v2.0' }), error: [400, 'invalid_parameter', 'model_version_seg'] },
  { rule: 'segmentation does not take a rig', path: E('segmentation'), ok: (s) => ({ history_id: s.gen, model: SEG }), bad: (s) => ({ history_id: s.rigA, model: SEG }), error: [400, 'history_source_unsupported', 'history_id'] },
  {
    rule: 'completion needs a segmentation',
    path: E('completion'),
    ok: (s) => ({ history_id: s.seg, model: SEG, part_names: ['head', 'legs'] }),
    bad: (s) => ({ history_id: s.gen, model: SEG, part_names: ['head'] }),
    error: [400, 'history_source_unsupported', 'history_id'],
    input: (i, s) => {
      assert.deepEqual(i.source.parts, ['head', 'body', 'legs']);
      assert.equal(i.source.history_id, s.seg);
      assert.equal(i.source.operation, 'segmentation');
      assert.match(i.source.model, /^blake3:[0-9a-f]{64}$/);
    },
  },
  { rule: 'completion part names come from the segmentation', path: E('completion'), ok: (s) => ({ history_id: s.seg, model: SEG, part_names: ['body'] }), bad: (s) => ({ history_id: s.seg, model: SEG, part_names: ['tail'] }), error: [400, 'invalid_parameter', 'part_names'] },
  { rule: 'completion needs part names', path: E('completion'), ok: (s) => ({ history_id: s.seg, model: SEG, part_names: ['head'] }), bad: (s) => ({ history_id: s.seg, model: SEG }), error: [400, 'missing_parameter', 'part_names'] },
  // Smart low-poly.
  { rule: 'smart low-poly triangle up to 20000', path: E('smart-lowpoly'), ok: (s) => ({ history_id: s.gen, model: LOWPOLY, face_limit: 20_000 }), bad: (s) => ({ history_id: s.gen, model: LOWPOLY, face_limit: 20_001 }), error: [400, 'face_limit_out_of_range', 'face_limit'] },
  { rule: 'smart low-poly quad 500 to 10000', path: E('smart-lowpoly'), ok: (s) => ({ history_id: s.gen, model: LOWPOLY, quad: true, face_limit: 500 }), bad: (s) => ({ history_id: s.gen, model: LOWPOLY, topology: 'quad', face_limit: 10_001 }), error: [400, 'face_limit_out_of_range', 'face_limit'] },
  {
    rule: 'smart low-poly: auto is adaptive, levels are family A only',
    path: E('smart-lowpoly'),
    ok: (s) => ({ history_id: s.gen, model: LOWPOLY, face_limit: 'auto' }),
    bad: (s) => ({ history_id: s.gen, model: LOWPOLY, face_limit: 'high' }),
    error: [400, 'face_limit_out_of_range', 'face_limit'],
    input: (i) => assert.deepEqual([i.face_limit, i.topology, i.quad, i.bake], [undefined, 'triangle', false, true]),
  },
  {
    rule: 'topology wins over quad',
    path: E('smart-lowpoly'),
    ok: (s) => ({ history_id: s.gen, model: LOWPOLY, topology: 'triangle', quad: true, face_limit: 15_000 }),
    bad: (s) => ({ history_id: s.gen, model: LOWPOLY, topology: 'quad', quad: false, face_limit: 15_000 }),
    error: [400, 'face_limit_out_of_range', 'face_limit'],
    input: (i) => assert.deepEqual([i.topology, i.quad], ['triangle', false]),
  },
  {
    rule: 'family A re-topology takes levels',
    path: E('smart-lowpoly'),
    ok: (s) => ({ history_id: s.gen, model: 'hunyuan3d-lowpoly', face_limit: 'medium' }),
    bad: (s) => ({ history_id: s.gen, model: 'hunyuan3d-lowpoly', face_limit: 'tiny' }),
    error: [400, 'face_limit_out_of_range', 'face_limit'],
    input: (i) => assert.equal(i.face_limit, 'medium'),
  },
  { rule: 'smart low-poly part names need a segmented source', path: E('smart-lowpoly'), ok: (s) => ({ history_id: s.seg, model: LOWPOLY, part_names: ['head'] }), bad: (s) => ({ history_id: s.gen, model: LOWPOLY, part_names: ['head'] }), error: [400, 'invalid_parameter', 'part_names'] },
  // Texture.
  {
    rule: 'texture works on generations',
    path: E('texture'),
    ok: (s) => ({ history_id: s.gen, model: TEX, enable_texture: false, texture: true, enable_pbr: false }),
    bad: (s) => ({ history_id: s.rigA, model: TEX }),
    error: [400, 'history_source_unsupported', 'history_id'],
    input: (i) => assert.deepEqual([i.texture, i.pbr, i.enable_texture, i.enable_pbr, i.texture_quality, i.bake], [true, false, undefined, undefined, 'standard', true]),
  },
  { rule: 'texture refuses 1.x generations', path: E('texture'), ok: (s) => ({ history_id: s.gen, model: TEX }), bad: (s) => ({ history_id: s.turbo, model: TEX }), error: [400, 'history_source_unsupported', 'history_id'] },
  { rule: 'standard texture needs texture or pbr', path: E('texture'), ok: (s) => ({ history_id: s.gen, model: TEX, texture: false }), bad: (s) => ({ history_id: s.gen, model: TEX, texture: false, pbr: false }), error: [400, 'invalid_parameter', 'texture'] },
  { rule: 'detailed with both off needs the 3.0 texture model', path: E('texture'), ok: (s) => ({ history_id: s.gen, model: 'tripo-v3.0', texture_quality: 'detailed', texture: false, pbr: false }), bad: (s) => ({ history_id: s.gen, model: TEX, texture_quality: 'detailed', enable_texture: false, enable_pbr: false }), error: [400, 'invalid_parameter', 'texture_quality'] },
  { rule: 'texture prompt kinds exclude each other', path: E('texture'), ok: (s) => ({ history_id: s.gen, model: TEX, texture_prompt: { text: 'rusty metal', style_image: IMG('style') } }), bad: (s) => ({ history_id: s.gen, model: TEX, texture_prompt: { text: 'rusty', image: IMG('ref') } }), error: [400, 'invalid_parameter', 'texture_prompt'] },
  { rule: 'texture prompt image 20 to 6000 pixels', path: E('texture'), ok: (s) => ({ history_id: s.gen, model: TEX, texture_prompt: { image: { ...IMG('ref'), width: 6000, height: 20 } } }), bad: (s) => ({ history_id: s.gen, model: TEX, texture_prompt: { image: { ...IMG('ref'), width: 6001, height: 400 } } }), error: [400, 'invalid_parameter', 'texture_prompt.image.width'] },
  { rule: 'style image is JPEG or PNG', path: E('texture'), ok: (s) => ({ history_id: s.gen, model: TEX, texture_prompt: { style_image: { url: 'http://127.0.0.1:9/s.jpg', mimetype: 'image/jpeg' } } }), bad: (s) => ({ history_id: s.gen, model: TEX, texture_prompt: { style_image: { url: 'http://127.0.0.1:9/s.gif', mimetype: 'image/gif' } } }), error: [400, 'invalid_parameter', 'texture_prompt.style_image.mimetype'] },
  {
    rule: 'texture prompt views follow the multiview rules',
    path: E('texture'),
    ok: (s) => ({ history_id: s.gen, model: TEX, texture_prompt: { images: [IMG('f'), IMG('l'), null, null] } }),
    bad: (s) => ({ history_id: s.gen, model: TEX, texture_prompt: { view_images: views('left', 'back') } }),
    error: [400, 'multiview_front_required', 'texture_prompt.view_images'],
    input: (i) => assert.deepEqual(i.texture_prompt.view_images.map((v: Json) => v.view_type), ['front', 'left']),
  },
  { rule: 'texture part names', path: E('texture'), ok: (s) => ({ history_id: s.seg, model: TEX, part_names: ['legs'] }), bad: (s) => ({ history_id: s.seg, model: TEX, part_names: ['wings'] }), error: [400, 'invalid_parameter', 'part_names'] },
  // Convert.
  {
    rule: 'convert formats, upper case recommended',
    path: E('convert'),
    ok: (s) => ({ history_id: s.gen, model: 'tripo-v3.1', format: 'fbx' }),
    bad: (s) => ({ history_id: s.gen, model: 'tripo-v3.1', format: 'PLY' }),
    error: [400, 'invalid_parameter', 'format'],
    input: (i) => {
      assert.deepEqual([i.format, i.texture_format, i.face_limit, i.texture_size, i.fbx_preset, i.with_animation, i.export_orientation], ['FBX', 'PNG', 10000, 4096, 'preset_a', true, '+x']);
      assert.equal(i.export_vertex_colors, undefined);
    },
  },
  { rule: 'OBJ, STL and 3MF cannot hold a rig', path: E('convert'), ok: (s) => ({ history_id: s.rigA, model: 'tripo-v3.1', format: 'GLTF' }), bad: (s) => ({ history_id: s.rigA, model: 'tripo-v3.1', format: '3MF' }), error: [400, 'invalid_parameter', 'format'] },
  { rule: 'force_symmetry in quad mode only', path: E('convert'), ok: (s) => ({ history_id: s.gen, model: 'tripo-v3.1', format: 'OBJ', quad: true, force_symmetry: true }), bad: (s) => ({ history_id: s.gen, model: 'tripo-v3.1', format: 'OBJ', force_symmetry: true }), error: [400, 'unsupported_parameter', 'force_symmetry'] },
  { rule: 'flatten threshold only with flatten_bottom', path: E('convert'), ok: (s) => ({ history_id: s.gen, model: 'tripo-v3.1', format: 'STL', flatten_bottom: true, flatten_bottom_threshold: 0.05 }), bad: (s) => ({ history_id: s.gen, model: 'tripo-v3.1', format: 'STL', flatten_bottom_threshold: 0.05 }), error: [400, 'unsupported_parameter', 'flatten_bottom_threshold'] },
  { rule: 'flatten threshold default', path: E('convert'), ok: (s) => ({ history_id: s.gen, model: 'tripo-v3.1', format: 'OBJ', flatten_bottom: true }), bad: (s) => ({ history_id: s.gen, model: 'tripo-v3.1', format: 'OBJ', flatten_bottom: false, flatten_bottom_threshold: 0.01 }), error: [400, 'unsupported_parameter', 'flatten_bottom_threshold'], input: (i) => assert.equal(i.flatten_bottom_threshold, 0.01) },
  { rule: 'texture_size up to 4096 from version 2.0', path: E('convert'), ok: (s) => ({ history_id: s.gen, model: 'tripo-v3.1', format: 'USDZ', texture_size: 4096 }), bad: (s) => ({ history_id: s.gen, model: 'tripo-v3.1', format: 'USDZ', texture_size: 4097 }), error: [400, 'invalid_parameter', 'texture_size'] },
  { rule: 'texture_size up to 2048 before version 2.0', path: E('convert'), ok: (s) => ({ history_id: s.turbo, model: 'tripo-v3.1', format: 'GLTF' }), bad: (s) => ({ history_id: s.turbo, model: 'tripo-v3.1', format: 'GLTF', texture_size: 2049 }), error: [400, 'invalid_parameter', 'texture_size'], input: (i) => assert.equal(i.texture_size, 2048) },
  { rule: 'vertex colours for OBJ and GLTF only', path: E('convert'), ok: (s) => ({ history_id: s.gen, model: 'tripo-v3.1', format: 'GLTF', export_vertex_colors: true }), bad: (s) => ({ history_id: s.gen, model: 'tripo-v3.1', format: 'FBX', export_vertex_colors: true }), error: [400, 'unsupported_parameter', 'export_vertex_colors'] },
  { rule: 'convert face_limit is a number', path: E('convert'), ok: (s) => ({ history_id: s.gen, model: 'tripo-v3.1', format: 'OBJ', face_limit: 5000 }), bad: (s) => ({ history_id: s.gen, model: 'tripo-v3.1', format: 'OBJ', face_limit: 'auto' }), error: [400, 'face_limit_out_of_range', 'face_limit'] },
  {
    rule: 'a converted result only changes format',
    path: E('convert'),
    ok: (s) => ({ history_id: s.conv, model: 'tripo-v3.1', format: 'GLTF' }),
    bad: (s) => ({ history_id: s.conv, model: 'tripo-v3.1', format: 'GLTF', scale_factor: 2 }),
    error: [400, 'unsupported_parameter', 'scale_factor'],
    input: (i, s) => {
      // The earlier conversion's options stay (scale 3, orientation -y); its model is converted again.
      assert.deepEqual([i.format, i.scale_factor, i.export_orientation, i.texture_format, i.fbx_preset], ['GLTF', 3, '-y', 'JPEG', 'preset_a']);
      assert.equal(i.source.history_id, s.conv);
      assert.equal(i.source.operation, 'convert');
    },
  },
  { rule: 'convert refuses a riggability check', path: E('convert'), ok: (s) => ({ history_id: s.rigB, model: 'tripo-v3.1', format: 'FBX' }), bad: (s) => ({ history_id: s.check, model: 'tripo-v3.1', format: 'FBX' }), error: [400, 'history_source_unsupported', 'history_id'] },
  { rule: 'export_orientation values', path: E('convert'), ok: (s) => ({ history_id: s.seg, model: 'tripo-v3.1', format: 'FBX', export_orientation: '-x' }), bad: (s) => ({ history_id: s.seg, model: 'tripo-v3.1', format: 'FBX', export_orientation: 'z' }), error: [400, 'invalid_parameter', 'export_orientation'] },
  // Rigging.
  { rule: 'check-riggable takes models, not rigs', path: E('check-riggable'), ok: (s) => ({ history_id: s.seg, model: RIG }), bad: (s) => ({ history_id: s.rigA, model: RIG }), error: [400, 'history_source_unsupported', 'history_id'] },
  {
    rule: 'rig defaults',
    path: E('rig'),
    ok: (s) => ({ history_id: s.gen, model: RIG }),
    bad: (s) => ({ history_id: s.gen, model: RIG, rig_type: 'dragon' }),
    error: [400, 'invalid_parameter', 'rig_type'],
    input: (i) => assert.deepEqual([i.out_format, i.rig_type, i.spec, i.rigging_model_version], ['glb', 'biped', 'spec_a', 'v2.5-20260210']),
  },
  { rule: 'rigging_model_version is a rigging version', path: E('rig'), ok: (s) => ({ history_id: s.gen, model: RIG, rigging_model_version: 'v2.0-20250506' }), bad: (s) => ({ history_id: s.gen, model: RIG, rigging_model_version: 'v3.1-20260211' }), error: [400, 'invalid_rigging_model_version', 'rigging_model_version'] },
  { rule: 'rigging v1.0 is for bipeds', path: E('rig'), ok: (s) => ({ history_id: s.gen, model: RIG, rigging_model_version: 'v1.0-20240301', rig_type: 'biped' }), bad: (s) => ({ history_id: s.gen, model: RIG, rigging_model_version: 'v1.0-20240301', rig_type: 'quadruped' }), error: [400, 'invalid_rigging_model_version', 'rigging_model_version'] },
  { rule: 'a generation model version cannot rig', path: E('rig'), ok: (s) => ({ history_id: s.gen, model: RIG, rig_type: 'avian', spec: 'spec_b' }), bad: (s) => ({ history_id: s.gen, model: 'tripo-v3.0' }), error: [400, 'invalid_rigging_model_version', 'model'] },
  {
    rule: 'rig after a riggability check',
    path: E('rig'),
    ok: (s) => ({ history_id: s.check, model: RIG, out_format: 'fbx' }),
    bad: (s) => ({ history_id: s.check, model: RIG, out_format: 'obj' }),
    error: [400, 'invalid_parameter', 'out_format'],
    // The check has no model file of its own: the model it checked is rigged.
    input: (i, s) => assert.deepEqual([i.source.operation, i.source.model], ['check_riggable', s.genModel]),
  },
  // Retargeting.
  {
    rule: 'retargeting needs a spec_a rig',
    path: E('retarget-animation'),
    ok: (s) => ({ history_id: s.rigA, animation: 'preset:walk' }),
    bad: (s) => ({ history_id: s.rigB, animation: 'preset:walk' }),
    error: [400, 'history_source_unsupported', 'history_id'],
    input: (i) => {
      assert.deepEqual([i.animations, i.animation, i.out_format, i.bake_animation, i.export_with_geometry, i.animate_in_place], [['preset:walk'], undefined, 'glb', true, true, false]);
      assert.deepEqual(i.source.rig, { rig_type: 'biped', spec: 'spec_a', bones: ['hips', 'spine'] });
    },
  },
  { rule: 'retargeting needs a rig', path: E('retarget-animation'), ok: (s) => ({ history_id: s.rigA, model: RIG, animations: ['preset:idle', 'preset:run'] }), bad: (s) => ({ history_id: s.gen, model: RIG, animation: 'preset:idle' }), error: [400, 'history_source_unsupported', 'history_id'] },
  { rule: 'animation or animations is required', path: E('retarget-animation'), ok: (s) => ({ history_id: s.rigA, animation: 'preset:jump' }), bad: (s) => ({ history_id: s.rigA }), error: [400, 'empty_animation', 'animation'] },
  { rule: 'animation cannot be empty', path: E('retarget-animation'), ok: (s) => ({ history_id: s.rigA, animation: 'preset:idle' }), bad: (s) => ({ history_id: s.rigA, animation: '  ' }), error: [400, 'empty_animation', 'animation'] },
  { rule: 'animations holds 1 to 5 ids', path: E('retarget-animation'), ok: (s) => ({ history_id: s.rigA, animations: ['a', 'b', 'c', 'd', 'e'].map((n) => `preset:${n}`) }), bad: (s) => ({ history_id: s.rigA, animations: [] }), error: [400, 'empty_animation', 'animations'] },
  { rule: 'animations: no more than 5', path: E('retarget-animation'), ok: (s) => ({ history_id: s.rigA, animations: ['preset:walk'] }), bad: (s) => ({ history_id: s.rigA, animations: ['a', 'b', 'c', 'd', 'e', 'f'].map((n) => `preset:${n}`) }), error: [400, 'invalid_parameter', 'animations'] },
  { rule: 'animation and animations exclude each other', path: E('retarget-animation'), ok: (s) => ({ history_id: s.rigA, animations: ['preset:walk', 'preset:run'] }), bad: (s) => ({ history_id: s.rigA, animation: 'preset:walk', animations: ['preset:run'] }), error: [400, 'invalid_parameter', 'animations'] },
  { rule: 'bake_animation for GLB output only', path: E('retarget-animation'), ok: (s) => ({ history_id: s.rigA, animation: 'preset:walk', out_format: 'fbx' }), bad: (s) => ({ history_id: s.rigA, animation: 'preset:walk', out_format: 'fbx', bake_animation: true }), error: [400, 'unsupported_parameter', 'bake_animation'] },
  // Refine and stylize.
  {
    rule: 'refine takes drafts before version 2.0',
    path: E('refine'),
    ok: (s) => ({ history_id: s.turbo, model: 'tripo-turbo-v1.0-text' }),
    bad: (s) => ({ history_id: s.gen, model: 'tripo-turbo-v1.0-text' }),
    error: [400, 'history_source_unsupported', 'history_id'],
    input: (i) => assert.equal(i.source.operation, 'text'),
  },
  {
    rule: 'refine draft task id is the history\'s upstream task',
    path: E('refine'),
    ok: (s) => ({ history_id: s.turbo, model: 'tripo-turbo-v1.0-text', draft_model_task_id: `up-${s.turboTask}` }),
    bad: (s) => ({ history_id: s.turbo, model: 'tripo-turbo-v1.0-text', draft_model_task_id: `up-${s.genTask}` }),
    error: [400, 'invalid_parameter', 'draft_model_task_id'],
    input: (i, s) => {
      // The source keeps the upstream reference and the channel that holds it (a later edit goes to the same account).
      assert.deepEqual(i.source.upstream.upstream, { provider: 'scripted', task_id: `up-${s.turboTask}` });
      assert.equal(i.source.upstream.routing.model, 'tripo-turbo-v1.0-text');
    },
  },
  { rule: 'refine draft task id may be the gateway task', path: E('refine'), ok: (s) => ({ history_id: s.turbo, model: 'tripo-turbo-v1.0-text', draft_model_task_id: s.turboTask }), bad: (s) => ({ history_id: s.turbo, model: 'tripo-turbo-v1.0-text', draft_model_task_id: s.genTask }), error: [400, 'invalid_parameter', 'draft_model_task_id'] },
  { rule: 'block_size with blockgame only', path: E('stylize'), ok: (s) => ({ history_id: s.gen, model: 'tripo-v3.1', style: 'blockgame', block_size: 32 }), bad: (s) => ({ history_id: s.gen, model: 'tripo-v3.1', style: 'voxel', block_size: 32 }), error: [400, 'unsupported_parameter', 'block_size'] },
  { rule: 'block_size 32 to 128', path: E('stylize'), ok: (s) => ({ history_id: s.gen, model: 'tripo-v3.1', style: 'blockgame' }), bad: (s) => ({ history_id: s.gen, model: 'tripo-v3.1', style: 'blockgame', block_size: 129 }), error: [400, 'invalid_parameter', 'block_size'], input: (i) => assert.equal(i.block_size, 80) },
  { rule: 'style is brick, voxel, voronoi or blockgame', path: E('stylize'), ok: (s) => ({ history_id: s.gen, model: 'tripo-v3.1', style: 'brick' }), bad: (s) => ({ history_id: s.gen, model: 'tripo-v3.1', style: 'cubist' }), error: [400, 'invalid_parameter', 'style'] },
  { rule: 'stylize sources', path: E('stylize'), ok: (s) => ({ history_id: s.rigA, model: 'tripo-v3.1', style: 'voronoi' }), bad: (s) => ({ history_id: s.seg, model: 'tripo-v3.1', style: 'voronoi' }), error: [400, 'history_source_unsupported', 'history_id'] },
];

describe('3D request rules', () => {
  let srv: TestServer;
  let token: string;
  const s = {} as Sources;

  const post = async (path: string, body: Json, as = token): Promise<{ status: number; body: Json }> => {
    const res = await srv.fetch(path, { method: 'POST', token: as, json: body });
    return { status: res.status, body: await res.json() };
  };
  const resultOf = async (taskId: string, as = token): Promise<Json> => (await srv.fetch(`/v1/ai/result/${taskId}`, { token: as })).json();
  /** Submits and waits for the task to end; answers the new history id. */
  const made = async (path: string, body: Json, as = token, status = 'success'): Promise<{ history: string; task: string }> => {
    const res = await post(path, body, as);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    await eventually(`task ${res.body.task_id} ${status}`, async () => (await resultOf(res.body.task_id, as)).queue_status.status === status);
    return { history: res.body.mesh3d_history_id ?? res.body.history_id, task: res.body.task_id };
  };

  const catalogDir = tempDataDir();

  before(async () => {
    const builtin = JSON.parse(fs.readFileSync(BUILTIN_CATALOG_PATH, 'utf8')) as Json;
    const catalogPath = path.join(catalogDir, 'catalog.json');
    fs.writeFileSync(catalogPath, JSON.stringify({ ...builtin, providers: [...builtin.providers, ...EXTRA_CATALOG.providers], baseModels: [...builtin.baseModels, ...EXTRA_CATALOG.baseModels] }));
    srv = await startTestServer({ CATALOG_PATH: catalogPath, GENGATE_CONFIG: JSON.stringify(CONFIG) }, { engines: { engineFor: () => scriptedEngine } });
    token = await srv.tokenFor('mesh-user');
    const gen = await made(T, text('tripo-v3.1'));
    s.gen = gen.history;
    s.genTask = gen.task;
    const outputs = (await (await srv.fetch('/api/assets?include_tags=output&limit=500', { token })).json()) as Json;
    s.genModel = outputs.assets.find((x: Json) => x.job_id === gen.task && x.name.endsWith('.glb')).asset_hash;
    s.genA = (await made(T, text('hunyuan3d-pro-3.1'))).history;
    const turbo = await made(T, text('tripo-turbo-v1.0-text'));
    s.turbo = turbo.history;
    s.turboTask = turbo.task;
    s.seg = (await made(E('segmentation'), { history_id: s.gen, model: SEG })).history;
    s.rigA = (await made(E('rig'), { history_id: s.gen, model: RIG })).history;
    s.rigB = (await made(E('rig'), { history_id: s.gen, model: RIG, spec: 'spec_b' })).history;
    s.check = (await made(E('check-riggable'), { history_id: s.gen, model: RIG })).history;
    s.conv = (await made(E('convert'), { history_id: s.gen, model: 'tripo-v3.1', format: 'FBX', scale_factor: 3, export_orientation: '-y' })).history;
    s.failed = (await made(T, text('tripo-v3.1', { prompt: 'fail' }), token, 'failed')).history;
    s.foreign = (await made(T, text('tripo-v3.1'), await srv.tokenFor('someone-else'))).history;

    const upload = new FormData();
    upload.append('file', new Blob([Buffer.from('png bytes')], { type: 'image/png' }), 'photo.png');
    s.fileUrl = ((await (await srv.fetch('/v1/files/upload', { method: 'POST', token, body: upload })).json()) as Json).data.url;
    const asset = new FormData();
    asset.append('tags', 'input');
    asset.append('file', new Blob([Buffer.from('asset png bytes')], { type: 'image/png' }), 'asset.png');
    const created = (await (await srv.fetch('/api/assets', { method: 'POST', token, body: asset })).json()) as Json;
    s.assetId = created.id;
    s.assetHash = created.asset_hash;
  });

  after(async () => {
    await srv?.close();
    fs.rmSync(catalogDir, { recursive: true, force: true });
  });

  for (const [group, rules] of [['generation', GENERATION_RULES], ['edit', EDIT_RULES]] as const) {
    describe(group, () => {
      for (const rule of rules) {
        it(rule.rule, async () => {
          const ok = await post(rule.path, typeof rule.ok === 'function' ? rule.ok(s) : rule.ok);
          assert.equal(ok.status, 200, `accepted request answered ${JSON.stringify(ok.body)}`);
          assert.match(ok.body.task_id, /^task_/);
          assert.match(ok.body.material_id, /^mat_/);
          assert.match(group === 'generation' ? ok.body.mesh3d_history_id : ok.body.history_id, /^hist_/);
          if (rule.input) rule.input((await resultOf(ok.body.task_id)).generate_info.input, s);

          const bad = await post(rule.path, typeof rule.bad === 'function' ? rule.bad(s) : rule.bad);
          const [status, code, param] = rule.error;
          assert.deepEqual({ status: bad.status, code: bad.body.error?.code, param: bad.body.error?.param }, { status, code, param }, bad.body.error?.message);
          assert.equal(bad.body.error.type, status === 404 ? 'not_found_error' : 'invalid_request_error');
        });
      }
    });
  }
});
