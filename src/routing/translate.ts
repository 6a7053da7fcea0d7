/**
 * Fitting a request to a fallback model through its catalog capabilities: a value outside what
 * the model allows becomes the nearest allowed one, a field it does not take is dropped, and
 * each change is a warning (generate_info.routing.warnings).
 */
import type { LiveModel } from '../catalog/catalog.ts';
import { languageCapabilityOf } from '../catalog/capabilities.ts';
import type { CapabilityName } from '../catalog/schema.ts';
import { ENDPOINTS, type Endpoint, type FallbackFit } from '../endpoints/endpoint-table.ts';
import type { ChatParams, EndpointDeclaration } from '../providers/spec.ts';
import { fitSongInput, fitSpeechInput } from './fit-audio-input.ts';
import { fitImageInput } from './fit-image-input.ts';
import { fitMesh3dGenerationInput, fitMeshEditInput } from './fit-mesh3d-input.ts';
import { fitVideoInput } from './fit-video-input.ts';
import { InputChanges, listOf, type InputFitter } from './input-changes.ts';
import { nearestInOrder } from './nearest-values.ts';
import type { Translation } from './router.ts';

type Input = Record<string, unknown>;

/** What fits an input to a fallback model's capabilities, by the endpoint table's `fallbackFit`. */
const FITTERS: Record<FallbackFit, InputFitter> = {
  image: fitImageInput,
  // The content decides which of the endpoint's capability types the model needs.
  video: fitVideoInput,
  song: fitSongInput,
  speech: fitSpeechInput,
  'mesh3d-generation': fitMesh3dGenerationInput,
  'mesh3d-edit': fitMeshEditInput,
};

const CHAT_TYPES: CapabilityName[] = ['text_generate', 'omni'];

/** Reasoning effort levels from least to most, to find the nearest level a model lists. */
export const EFFORT_ORDER = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh'];

/** Fields the gateway itself reads from an input; never dropped. */
const GATEWAY_FIELDS = new Set(['_metadata', 'options']);

/**
 * A task's input for a fallback model: the model must have a capability type of the endpoint,
 * its values are fitted to the model's capabilities, and fields its adapter does not read or
 * refuses are dropped.
 */
export function translateTaskInput(endpoint: Endpoint, input: Input, target: LiveModel, declaration: EndpointDeclaration | undefined): Translation<Input> {
  const { capabilities: types, fallbackFit } = ENDPOINTS[endpoint];
  if (!types.some((t) => target.modelTypes.includes(t))) return { skip: `fallback model ${target.alias} cannot do ${endpoint} (it has none of ${listOf(types)})` };
  const changes = new InputChanges(structuredClone(input), target.alias);
  const misfit = fallbackFit && FITTERS[fallbackFit](changes, { endpoint, target, declaration });
  if (misfit) return { skip: `fallback model ${target.alias} ${misfit}` };
  for (const field of Object.keys(changes.input)) {
    if (GATEWAY_FIELDS.has(field) || changes.input[field] === undefined) continue;
    if (declaration?.refused?.includes(field)) changes.drop(field, `(provider ${target.providerCode}) refuses it`);
    else if (declaration?.fields && !declaration.fields.includes(field)) changes.drop(field, `(provider ${target.providerCode}) does not take it`);
  }
  return { input: changes.input, warnings: changes.warnings };
}

/**
 * A chat call's parameters for a fallback model: the output-token limit held to what the model
 * writes, tools dropped for a model without tool calls, reasoning effort fitted to its levels,
 * structured output dropped for one without it.
 */
export function translateChatParams(params: ChatParams, target: LiveModel): Translation<ChatParams> {
  if (!CHAT_TYPES.some((t) => target.modelTypes.includes(t))) return { skip: `fallback model ${target.alias} is not a chat model` };
  const changes = new InputChanges({ ...params }, target.alias);
  const language = languageCapabilityOf(target);
  const maxOutput = language?.max_output_tokens;
  for (const field of ['max_tokens', 'max_completion_tokens'] as const) {
    const value = changes.input[field];
    if (maxOutput && typeof value === 'number' && value > maxOutput) changes.set(field, maxOutput, `at most ${maxOutput} output tokens`);
  }
  if (changes.input.tools !== undefined && (!target.modelTypes.includes('tools_call') || language?.supportTool === false)) {
    changes.drop('tools', 'cannot call tools');
    if (changes.input.tool_choice !== undefined) changes.drop('tool_choice', 'cannot call tools');
  }
  const effort = changes.input.reasoning_effort;
  const levels = language?.thinkingEffortLevels;
  if (typeof effort === 'string' && language?.supportThinking === false) changes.drop('reasoning_effort', 'does not reason');
  else if (typeof effort === 'string' && levels?.length && !levels.includes(effort)) {
    const level = nearestInOrder(effort, levels, EFFORT_ORDER);
    if (level) changes.set('reasoning_effort', level, listOf(levels));
    else changes.drop('reasoning_effort', `takes only ${listOf(levels)}`);
  }
  const format = changes.input.response_format as { type?: string } | undefined;
  if (format?.type === 'json_schema' && language?.supportStructuredOutput === false) changes.drop('response_format', 'has no structured output');
  return { input: changes.input as ChatParams, warnings: changes.warnings };
}
