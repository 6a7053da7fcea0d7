/**
 * 3D requests fitted to a fallback model by the same rules that check them at submit (the
 * model's capabilities, else its family's tables): a generation's fields the model does not
 * take are dropped, an option it does not list becomes its default, face_limit is brought into
 * its range, its views must suit the model; an edit needs the operation and its formats.
 */
import type { Model3dCapabilityFields } from '../catalog/schema.ts';
import { ApiError } from '../core/errors.ts';
import { CAPABILITY_OPTIONS, GENERATION_FIELDS, familyRulesOf, type GenerationField, type Topology } from '../endpoints/mesh3d-generation-rules.ts';
import { checkViews } from '../endpoints/mesh3d-image-inputs.ts';
import { familyOf } from '../endpoints/mesh3d-family.ts';
import type { EditOperation, GenerationKind, ResolvedTexturePrompt, ResolvedView } from '../endpoints/mesh3d.ts';
import { texturePromptModes } from '../endpoints/mesh3d-edit-checks.ts';
import { GENERATION_CAPABILITY, faceLimitRange, supportsField, viewRuleOf } from '../endpoints/mesh3d-generation-checks.ts';
import { listOf, type InputFitter } from './input-changes.ts';
import { clamp } from './nearest-values.ts';

/** The capability default that stands in for an option the model does not list. */
const OPTION_DEFAULTS: Partial<Record<GenerationField, 'default_geometry_instruct_mode' | 'default_output_format'>> = {
  geometry_instruct_mode: 'default_geometry_instruct_mode',
  geometry_file_format: 'default_output_format',
};

export const fitMesh3dGenerationInput: InputFitter = (changes, { endpoint, target }) => {
  const kind = endpoint.slice('mesh3d.generate.'.length) as GenerationKind;
  const caps: Model3dCapabilityFields = target.capabilities[GENERATION_CAPABILITY[kind]] ?? {};
  const rules = familyRulesOf(familyOf(target));
  const { input } = changes;
  if (kind === 'multiview') {
    const views = (input.view_images ?? []) as ResolvedView[];
    try {
      checkViews(views.map((v, i) => ({ view_type: v.view_type, param: `view_images[${i}]` })), viewRuleOf(caps, rules.views), 'view_images');
    } catch (err) {
      if (err instanceof ApiError) return `cannot take these views (${err.message})`;
      throw err;
    }
  }
  for (const field of GENERATION_FIELDS) {
    if (input[field] !== undefined && !supportsField(field, caps, rules)) changes.drop(field, 'does not take it');
  }
  if (rules.lowPolyMode && input.topology !== undefined && input.smart_low_poly !== true) changes.drop('topology', 'takes topology only together with smart_low_poly');
  for (const [field, options] of Object.entries(CAPABILITY_OPTIONS)) {
    const value = input[field];
    const allowed = (caps[options.key] as string[] | undefined) ?? (field === 'geometry_instruct_mode' ? rules.geometryInstructModes : undefined);
    if (typeof value !== 'string' || !allowed?.length || allowed.includes(value)) continue;
    const defaultKey = OPTION_DEFAULTS[field as GenerationField];
    const modelDefault = defaultKey ? caps[defaultKey] : undefined;
    changes.set(field, modelDefault !== undefined && allowed.includes(modelDefault) ? modelDefault : allowed[0]!, listOf(allowed));
  }
  const faceLimit = input.face_limit;
  if (typeof faceLimit === 'number') {
    const lowPoly = input.smart_low_poly === true;
    if (rules.lowPolyMode && lowPoly) changes.drop('face_limit', 'ignores it in low-poly mode');
    else {
      const topology = (input.topology as Topology | undefined) ?? 'triangle';
      const range = faceLimitRange(caps, rules.faceLimit, topology, (input.geometry_quality as string | undefined) ?? 'standard', lowPoly);
      if (range && clamp(faceLimit, range) !== faceLimit) changes.set('face_limit', clamp(faceLimit, range), `face limits of ${range[0]} to ${range[1]} (${topology})`);
    }
  }
  return undefined;
};

export const fitMeshEditInput: InputFitter = (changes, { endpoint, target }) => {
  const operation = endpoint.slice('mesh3d.edit.'.length) as EditOperation;
  const entry = target.capabilities.mesh_edit?.supported_operations?.[operation];
  if (entry?.supported !== true) return `does not support the ${operation} operation`;
  const { input } = changes;
  const format = operation === 'convert' ? input.format : operation === 'rig' ? input.out_format ?? 'glb' : undefined;
  const formats = entry.supported_formats;
  if (typeof format === 'string' && formats && !formats.some((f) => f.toLowerCase() === format.toLowerCase())) return `cannot write ${format} (only ${listOf(formats)})`;
  const prompt = input.texture_prompt as ResolvedTexturePrompt | undefined;
  const modes = entry.supported_texture_prompt_modes;
  const mode = prompt ? texturePromptModes(prompt)[0] : undefined;
  if (mode && modes && !modes.includes(mode)) return `takes no texture_prompt.${mode} (only ${listOf(modes)})`;
  return undefined;
};
