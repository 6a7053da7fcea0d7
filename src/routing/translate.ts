/**
 * Fitting a request to a fallback model through its catalog capabilities: a value outside what
 * the model allows becomes the nearest allowed one, a field it does not take is dropped, and
 * each change is a warning (generate_info.routing.warnings).
 */
import type { LiveModel } from '../catalog/catalog.ts';
import { languageCapabilityOf } from '../catalog/capabilities.ts';
import type { Capabilities, CapabilityName, ImageCapabilityFields, VideoCapabilityFields } from '../catalog/schema.ts';
import { ENDPOINTS, type Endpoint } from '../endpoints/endpoint-table.ts';
import type { ChatParams, EndpointDeclaration } from '../providers/spec.ts';
import type { Translation } from './router.ts';

type Input = Record<string, unknown>;

const CHAT_TYPES: CapabilityName[] = ['text_generate', 'omni'];

/** Fields the gateway itself reads from an input; never dropped. */
const GATEWAY_FIELDS = new Set(['_metadata', 'options']);

/** The first of the capability values `from` that the model has. */
function firstCapability<C extends CapabilityName>(target: LiveModel, from: readonly C[]): Capabilities[C] | undefined {
  return from.map((name) => target.capabilities[name]).find((value) => value !== undefined);
}

function list(value: readonly string[]): string {
  return value.join(', ');
}

/** Every value of a capability field that is a list or an object of lists (per mode). */
function flat<T>(value: T[] | Record<string, T[]> | undefined): T[] | undefined {
  if (value === undefined) return undefined;
  return Array.isArray(value) ? value : [...new Set(Object.values(value).flat())];
}

function nearestNumber(value: number, allowed: readonly number[]): number {
  let best = allowed[0]!;
  for (const candidate of allowed) if (Math.abs(candidate - value) < Math.abs(best - value)) best = candidate;
  return best;
}

/** A WxH size, a ratio W:H, a resolution like 720p or 2K, as numbers to compare. */
const parseSize = (text: string) => /^(\d+)x(\d+)$/.exec(text)?.slice(1).map(Number) as [number, number] | undefined;
const parseRatio = (text: string) => {
  const m = /^(\d+(?:\.\d+)?):(\d+(?:\.\d+)?)$/.exec(text);
  return m ? Number(m[1]) / Number(m[2]) : undefined;
};
const parseLines = (text: string) => {
  const m = /^(\d+)([pk])$/i.exec(text);
  return m ? Number(m[1]) * (m[2]!.toLowerCase() === 'k' ? 1024 : 1) : undefined;
};

/** The allowed text nearest to `value` by a numeric reading of both; undefined when they do not read as numbers. */
function nearestBy(value: string, allowed: readonly string[], read: (text: string) => number | undefined, distance = (a: number, b: number) => Math.abs(a - b)): string | undefined {
  const v = read(value);
  if (v === undefined) return undefined;
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of allowed) {
    const c = read(candidate);
    if (c === undefined) continue;
    const d = distance(v, c);
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

/** The allowed size nearest in shape and area (both compared on a log scale). */
function nearestSize(size: string, allowed: readonly string[]): string | undefined {
  const asked = parseSize(size);
  if (!asked) return undefined;
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of allowed) {
    const c = parseSize(candidate);
    if (!c) continue;
    const d = Math.abs(Math.log(asked[0] / asked[1]) - Math.log(c[0] / c[1])) + Math.abs(Math.log((asked[0] * asked[1]) / (c[0] * c[1])));
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

/** Collects the changes made to one input. */
class Changes {
  readonly warnings: string[] = [];
  constructor(readonly input: Input, private readonly alias: string) {}

  set(field: string, value: unknown, allowed: string): void {
    this.warnings.push(`${field} ${JSON.stringify(this.input[field])} became ${JSON.stringify(value)}: fallback model ${this.alias} takes ${allowed}`);
    this.input[field] = value;
  }

  drop(field: string, why: string): void {
    this.warnings.push(`${field} dropped: fallback model ${this.alias} ${why}`);
    delete this.input[field];
  }
}

function fitImage(changes: Changes, capability: ImageCapabilityFields | undefined): void {
  if (!capability) return;
  const { input } = changes;
  const sizes = capability.output_resolutions?.filter((s) => parseSize(s));
  if (typeof input.size === 'string' && input.size !== 'auto') {
    if (sizes?.length && !capability.allow_custom_width_height_size && !sizes.includes(input.size)) {
      const size = nearestSize(input.size, sizes);
      if (size) changes.set('size', size, list(capability.output_resolutions!));
    } else if (capability.output_size_range) {
      const asked = parseSize(input.size)!;
      const [min, max] = capability.output_size_range;
      const area = asked[0] * asked[1];
      if (area < min || area > max) {
        const scale = Math.sqrt((area < min ? min : max) / area);
        const step = capability.width_height_multiple ?? 16;
        const side = (n: number) => Math.max(step, (area < min ? Math.ceil : Math.floor)((n * scale) / step) * step);
        changes.set('size', `${side(asked[0])}x${side(asked[1])}`, `sizes of ${min} to ${max} pixels`);
      }
    }
  }
  const levels = capability.output_resolutions?.filter((s) => parseLines(s));
  if (typeof input.resolution === 'string' && levels?.length && !levels.includes(input.resolution)) {
    const level = nearestBy(input.resolution, levels, parseLines);
    if (level) changes.set('resolution', level, list(levels));
  }
  const ratios = capability.aspect_ratio_allowed;
  if (typeof input.aspect_ratio === 'string' && ratios?.length && !ratios.includes(input.aspect_ratio)) {
    const ratio = nearestBy(input.aspect_ratio, ratios, parseRatio, (a, b) => Math.abs(Math.log(a / b)));
    if (ratio) changes.set('aspect_ratio', ratio, list(ratios));
  }
  const maxImages = capability.output_multiple_images === false ? 1 : capability.output_max_images_count;
  if (typeof input.n === 'number' && maxImages !== undefined && maxImages > 0 && input.n > maxImages) changes.set('n', maxImages, `at most ${maxImages}`);
  const qualities = capability.quality_options;
  if (typeof input.quality === 'string' && qualities?.length && !qualities.includes(input.quality)) {
    if (qualities.includes('auto')) changes.set('quality', 'auto', list(qualities));
    else changes.drop('quality', `takes only ${list(qualities)}`);
  }
}

function fitVideo(changes: Changes, capability: VideoCapabilityFields | undefined): void {
  if (!capability) return;
  const { input } = changes;
  const resolutions = flat(capability.output_resolutions);
  if (typeof input.resolution === 'string' && resolutions?.length && !resolutions.includes(input.resolution)) {
    const resolution = nearestBy(input.resolution, resolutions, parseLines);
    if (resolution) changes.set('resolution', resolution, list(resolutions));
  }
  const durations = flat(capability.duration_options);
  const range = Array.isArray(capability.duration_range) ? capability.duration_range : undefined;
  if (typeof input.duration === 'number') {
    if (durations?.length && !durations.includes(input.duration)) {
      changes.set('duration', nearestNumber(input.duration, durations), `durations of ${durations.join(', ')} s`);
    } else if (!durations?.length && range && (input.duration < range[0] || input.duration > range[1])) {
      changes.set('duration', Math.min(range[1], Math.max(range[0], input.duration)), `durations of ${range[0]} to ${range[1]} s`);
    }
  }
  const ratios = flat(capability.aspect_ratio_allowed);
  if (typeof input.aspect_ratio === 'string' && ratios?.length && !ratios.includes(input.aspect_ratio)) {
    const ratio = nearestBy(input.aspect_ratio, ratios, parseRatio, (a, b) => Math.abs(Math.log(a / b)));
    if (ratio) changes.set('aspect_ratio', ratio, list(ratios));
  }
  if (input.audio === true && capability.output_audio === false) changes.drop('audio', 'makes no audio');
}

/**
 * A task's input for a fallback model: the model must have a capability type of the endpoint,
 * its values are fitted to the model's capabilities, and fields its adapter does not read or
 * refuses are dropped.
 */
export function translateTaskInput(endpoint: Endpoint, input: Input, target: LiveModel, declaration: EndpointDeclaration | undefined): Translation<Input> {
  const { capabilities: types, fallbackFit } = ENDPOINTS[endpoint];
  if (!types.some((t) => target.modelTypes.includes(t))) return { skip: `fallback model ${target.alias} cannot do ${endpoint} (it has none of ${list(types)})` };
  const changes = new Changes(structuredClone(input), target.alias);
  if (fallbackFit?.fit === 'image') fitImage(changes, firstCapability(target, fallbackFit.from));
  else if (fallbackFit?.fit === 'video') fitVideo(changes, firstCapability(target, fallbackFit.from));
  for (const field of Object.keys(changes.input)) {
    if (GATEWAY_FIELDS.has(field) || changes.input[field] === undefined) continue;
    if (declaration?.refused?.includes(field)) changes.drop(field, `(provider ${target.providerCode}) refuses it`);
    else if (declaration?.fields && !declaration.fields.includes(field)) changes.drop(field, `(provider ${target.providerCode}) does not take it`);
  }
  return { input: changes.input, warnings: changes.warnings };
}

/**
 * A chat call's parameters for a fallback model: the output-token limit held to what the model
 * writes, tools dropped for a model without tool calls, structured output for one without it.
 */
export function translateChatParams(params: ChatParams, target: LiveModel): Translation<ChatParams> {
  if (!CHAT_TYPES.some((t) => target.modelTypes.includes(t))) return { skip: `fallback model ${target.alias} is not a chat model` };
  const changes = new Changes({ ...params }, target.alias);
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
  const format = changes.input.response_format as { type?: string } | undefined;
  if (format?.type === 'json_schema' && language?.supportStructuredOutput === false) changes.drop('response_format', 'has no structured output');
  return { input: changes.input as ChatParams, warnings: changes.warnings };
}
