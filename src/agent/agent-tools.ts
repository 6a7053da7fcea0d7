/**
 * The agent's built-in tools: the gateway's own generation endpoints, run for the caller as
 * tasks through the generation pipeline, so they are stored, billed, pushed and listed like any
 * other task of that user.
 */
import { Ajv, type ValidateFunction } from 'ajv';
import type { Catalog, LiveModel } from '../catalog/catalog.ts';
import type { CapabilityName } from '../catalog/schema.ts';
import { ApiError } from '../core/errors.ts';
import type { ChatTool } from '../providers/spec.ts';
import type { GenerationService } from '../tasks/generation-service.ts';
import type { TaskService } from '../tasks/task-service.ts';
import type { TaskRow } from '../storage/schema.ts';

type Args = Record<string, unknown>;

/** What a tool call needs to know about the request it runs for. */
export interface ToolCaller {
  ownerId: string;
  requestId: string;
}

interface GenerationToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the arguments, as the model sees it. */
  parameters: Record<string, unknown>;
  endpoint: string;
  capabilities: readonly CapabilityName[];
  outputType: string;
  /** The task input for the endpoint, from checked arguments and the chosen model. */
  input(args: Args, model: LiveModel): Record<string, unknown>;
}

const modelArgument = { type: 'string', minLength: 1, description: 'catalog alias of the model to use; omit it for the default' };
const object = (properties: Record<string, unknown>, required: string[]) => ({ type: 'object', properties: { ...properties, model: modelArgument }, required, additionalProperties: false });

/** The built-in tools, by name. */
const GENERATION_TOOLS: readonly GenerationToolSpec[] = [
  {
    name: 'generate_image',
    description: 'Draw an image from a text prompt. Returns the task with the image URL.',
    parameters: object({
      prompt: { type: 'string', minLength: 1, maxLength: 4000, description: 'what the image shows' },
      size: { type: 'string', pattern: '^[1-9][0-9]{0,3}x[1-9][0-9]{0,3}$', description: '<width>x<height>, e.g. 1024x1024' },
      aspect_ratio: { type: 'string', pattern: '^[1-9][0-9]*:[1-9][0-9]*$', description: 'W:H, e.g. 16:9' },
    }, ['prompt']),
    endpoint: 'images.generations',
    capabilities: ['image_generate'],
    outputType: 'image',
    input: ({ prompt, size, aspect_ratio: ratio }) => ({ prompt, ...(size ? { size } : {}), ...(ratio ? { aspect_ratio: ratio } : {}) }),
  },
  {
    name: 'generate_video',
    description: 'Make a short video from a text prompt. Returns the task with the video URL.',
    parameters: object({
      prompt: { type: 'string', minLength: 1, maxLength: 4000, description: 'what happens in the video' },
      duration: { type: 'integer', minimum: 1, maximum: 10, description: 'seconds, default 5' },
      aspect_ratio: { type: 'string', enum: ['16:9', '9:16', '4:3', '3:4', '1:1', '21:9'], description: 'default 16:9' },
    }, ['prompt']),
    endpoint: 'video.generations',
    capabilities: ['video_generate', 'omni_video'],
    outputType: 'video',
    // The defaults of POST /v1/video/generations.
    input: ({ prompt, duration, aspect_ratio: ratio }) => ({
      content: [{ type: 'text', text: prompt }],
      aspect_ratio: ratio ?? '16:9',
      resolution: '720p',
      duration: duration ?? 5,
      watermark: false,
      seed: -1,
      camerafixed: false,
    }),
  },
  {
    name: 'generate_music',
    description: 'Compose a song from a description. Returns the task with the audio URL.',
    parameters: object({
      prompt: { type: 'string', minLength: 1, maxLength: 3000, description: 'what the song is about' },
      tags: { type: 'string', minLength: 1, maxLength: 200, description: 'style tags, e.g. "lofi, piano"' },
      title: { type: 'string', maxLength: 80 },
      instrumental: { type: 'boolean', description: 'no vocals' },
    }, ['prompt']),
    endpoint: 'song.generations',
    capabilities: ['audio_generate'],
    outputType: 'audio',
    input: ({ prompt, tags, title, instrumental }) => ({
      prompt,
      tags: tags ?? 'pop',
      negativeTags: '',
      ...(title ? { title } : {}),
      ...(instrumental !== undefined ? { makeInstrumental: instrumental } : {}),
    }),
  },
  {
    name: 'generate_speech',
    description: 'Read a text aloud. Returns the task with the audio URL.',
    parameters: object({
      text: { type: 'string', minLength: 1, maxLength: 10_000, description: 'the text to speak' },
      voice_id: { type: 'string', minLength: 1, description: 'one of the model\'s voices; omit it for the first' },
    }, ['text']),
    endpoint: 'speech.generations',
    capabilities: ['text_to_speech'],
    outputType: 'audio',
    input: ({ text, voice_id: voice }, model) => ({ text, voice_id: voice ?? model.capabilities.text_to_speech?.voices?.[0]?.id ?? 'default' }),
  },
  {
    name: 'generate_3d',
    description: 'Build a 3D model (GLB) from a text prompt. Returns the task with the model URL.',
    parameters: object({
      prompt: { type: 'string', minLength: 1, maxLength: 1024, description: 'the object to model' },
    }, ['prompt']),
    endpoint: 'mesh3d.generate.text',
    capabilities: ['text_to_model'],
    outputType: '3d',
    input: ({ prompt }) => ({ prompt }),
  },
];

export interface GenerationToolsDeps {
  catalog: Catalog;
  generations: GenerationService;
  tasks: TaskService;
  /** How long a tool waits for its task (SYNC_TIMEOUT_MS); a task still running is reported as such. */
  waitMs: number;
}

/** A problem the model can act on, as the tool's output. */
function failure(message: string): string {
  return JSON.stringify({ status: 'error', message });
}

/** `promise`, or the signal's reason as a rejection when it aborts first. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** The generation endpoints as function tools for the agent's model. */
export class GenerationTools {
  private readonly checks = new Map<string, ValidateFunction>();
  /** The tools in the chat API's shape, offered to every run whose model calls tools. */
  readonly definitions: ChatTool[] = GENERATION_TOOLS.map((tool) => ({ type: 'function', function: { name: tool.name, description: tool.description, parameters: tool.parameters } }));

  constructor(private readonly deps: GenerationToolsDeps) {
    const ajv = new Ajv({ allErrors: false, strict: false });
    for (const tool of GENERATION_TOOLS) this.checks.set(tool.name, ajv.compile(tool.parameters));
  }

  /**
   * Runs one call: arguments checked, a model chosen (the `model` argument, else the first
   * enabled catalog model with the capability), the task submitted for the caller and waited
   * for. Problems the model can act on (bad arguments, a refused or failed task) are results,
   * not errors; an abort of `signal` cancels the task and rejects. Answers the output as JSON
   * `{task_id, model, status, output: [urls], message?}`.
   */
  async run(name: string, argumentsText: string, caller: ToolCaller, signal: AbortSignal): Promise<string> {
    const tool = GENERATION_TOOLS.find((t) => t.name === name);
    if (!tool) return failure(`there is no tool ${name}`);
    let args: Args;
    try {
      args = JSON.parse(argumentsText || '{}') as Args;
    } catch {
      return failure('the arguments are not valid JSON');
    }
    const check = this.checks.get(name)!;
    if (!check(args)) return failure(`invalid arguments: ${check.errors?.map((e) => `${e.instancePath || '/'} ${e.message}`).join('; ')}`);
    const model = this.modelFor(tool, args.model as string | undefined);
    if (typeof model === 'string') return failure(model);

    let task: TaskRow;
    try {
      const outcome = await this.deps.generations.generate({
        ownerId: caller.ownerId,
        clientId: null,
        requestId: caller.requestId,
        endpoint: tool.endpoint,
        capabilities: tool.capabilities,
        outputType: tool.outputType,
        model: model.alias,
        input: tool.input(args, model),
      }, 'async');
      task = outcome.task;
    } catch (err) {
      if (err instanceof ApiError && err.status < 500) return failure(err.message);
      throw err;
    }
    const stop = () => void this.deps.tasks.cancel(caller.ownerId, task.id, 'the agent request was cancelled').catch(() => undefined);
    signal.addEventListener('abort', stop, { once: true });
    try {
      const record = await untilAborted(this.deps.tasks.waitForEnd(task.id, this.deps.waitMs), signal);
      const status = record?.queue_status.status ?? 'process';
      const draw = record?.queue_status.data;
      const message = !record ? `still running; its result will be at GET /v1/ai/result/${task.id}` : status !== 'success' ? draw?.original_error_message ?? draw?.message : undefined;
      return JSON.stringify({ task_id: task.id, model: model.alias, status, output: draw?.output ?? [], ...(message ? { message } : {}) });
    } finally {
      signal.removeEventListener('abort', stop);
    }
  }

  /** The model a call asked for, else the first enabled one with the capability; a message when there is none. */
  private modelFor(tool: GenerationToolSpec, alias: string | undefined): LiveModel | string {
    const fits = (model: LiveModel) => tool.capabilities.some((c) => model.modelTypes.includes(c));
    if (alias !== undefined) {
      const model = this.deps.catalog.find(alias);
      if (!model) return `unknown model ${alias}`;
      if (!fits(model)) return `model ${alias} cannot do ${tool.capabilities.join(' or ')}`;
      if (!model.enabled) return `model ${alias} is disabled`;
      return model;
    }
    return this.deps.catalog.models.find((model) => model.enabled && fits(model)) ?? `no enabled model can do ${tool.capabilities.join(' or ')}`;
  }
}
