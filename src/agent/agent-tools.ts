/**
 * The agent's built-in tools: the gateway's own generation endpoints, run for the caller through
 * the same modality services the routes call, so their tasks are checked, stored, billed, pushed
 * and listed (and a 3D task gets its history and material) like any other task of that user.
 */
import type { ValidateFunction } from 'ajv';
import type { AudioService } from '../audio/service.ts';
import { ApiError } from '../core/errors.ts';
import { SchemaValidators } from '../core/schema-validators.ts';
import type { ImageService } from '../images/service.ts';
import type { Mesh3dService } from '../mesh3d/service.ts';
import type { ChatTool } from '../providers/spec.ts';
import type { GenerationCaller } from '../tasks/generation-service.ts';
import type { TaskService } from '../tasks/task-service.ts';
import type { TaskRow } from '../storage/schema.ts';
import type { VideoService } from '../video/service.ts';

/** What a tool call needs to know about the request it runs for. */
export interface ToolCaller {
  ownerId: string;
  requestId: string;
}

/** The modality services the tools submit through. */
export interface ToolServices {
  images: ImageService;
  video: VideoService;
  audio: AudioService;
  mesh3d: Mesh3dService;
}

/** A tool's arguments once checked against its JSON Schema; `model` omitted means the catalog's default. */
type Args = Record<string, unknown> & { model?: string };

interface GenerationToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the arguments, as the model sees it. */
  parameters: Record<string, unknown>;
  /** Submits the task through the modality's service (asynchronously). */
  submit(services: ToolServices, args: Args, caller: GenerationCaller): Promise<SubmittedTask>;
}

/** The stored task, and the ids its service answered besides (a 3D history), handed to the model with the output. */
interface SubmittedTask {
  task: TaskRow;
  ids?: Record<string, string>;
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
    submit: async ({ images }, { model, prompt, size, aspect_ratio: ratio }, caller) => (await images.generate(caller, {
      ...(model ? { model } : {}),
      prompt: prompt as string,
      ...(size ? { size: size as string } : {}),
      ...(ratio ? { aspect_ratio: ratio as string } : {}),
    }, 'async')),
  },
  {
    name: 'generate_video',
    description: 'Make a short video from a text prompt. Returns the task with the video URL.',
    parameters: object({
      prompt: { type: 'string', minLength: 1, maxLength: 4000, description: 'what happens in the video' },
      duration: { type: 'integer', minimum: 1, maximum: 10, description: 'seconds, default 5' },
      aspect_ratio: { type: 'string', enum: ['16:9', '9:16', '4:3', '3:4', '1:1', '21:9'], description: 'default 16:9' },
    }, ['prompt']),
    // The defaults of POST /v1/video/generations, in landscape.
    submit: async ({ video }, { model, prompt, duration, aspect_ratio: ratio }, caller) => (await video.generate(caller, {
      ...(model ? { model } : {}),
      content: [{ type: 'text', text: prompt as string }],
      aspect_ratio: (ratio as '16:9' | undefined) ?? '16:9',
      resolution: '720p',
      duration: (duration as number | undefined) ?? 5,
      watermark: false,
      seed: -1,
      camerafixed: false,
    }, 'async')),
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
    submit: async ({ audio }, { model, prompt, tags, title, instrumental }, caller) => (await audio.song(caller, {
      ...(model ? { model } : {}),
      prompt: prompt as string,
      tags: (tags as string | undefined) ?? 'pop',
      negativeTags: '',
      ...(title ? { title: title as string } : {}),
      ...(instrumental !== undefined ? { makeInstrumental: instrumental as boolean } : {}),
    }, 'async')),
  },
  {
    name: 'generate_speech',
    description: 'Read a text aloud. Returns the task with the audio URL.',
    parameters: object({
      text: { type: 'string', minLength: 1, maxLength: 10_000, description: 'the text to speak' },
      voice_id: { type: 'string', minLength: 1, description: 'one of the model\'s voices; omit it for the first' },
    }, ['text']),
    submit: async ({ audio }, { model, text, voice_id: voice }, caller) => (await audio.speech(caller, {
      ...(model ? { model } : {}),
      text: text as string,
      ...(voice ? { voice_id: voice as string } : {}),
    }, 'async')),
  },
  {
    name: 'generate_3d',
    description: 'Build a 3D model (GLB) from a text prompt. Returns the task with the model URL.',
    parameters: object({
      prompt: { type: 'string', minLength: 1, maxLength: 1024, description: 'the object to model' },
    }, ['prompt']),
    submit: async ({ mesh3d }, { model, prompt }, caller) => {
      const { task, reply } = await mesh3d.generate('text', { ...(model ? { model } : {}), prompt: prompt as string }, caller);
      // The history id lets the user (or a later call) edit the model through /v1/mesh3d/edit.
      return { task, ids: { material_id: reply.material_id, mesh3d_history_id: reply.mesh3d_history_id } };
    },
  },
];

export interface GenerationToolsDeps {
  services: ToolServices;
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

/** The checks of a model's tool arguments: as the model wrote them, no defaults filled in. */
const TOOL_ARGUMENTS = new SchemaValidators({ allErrors: false, strict: false }, false);

/** The generation endpoints as function tools for the agent's model. */
export class GenerationTools {
  private readonly checks = new Map<string, ValidateFunction>();
  /** The tools in the chat API's shape, offered to every run whose model calls tools. */
  readonly definitions: ChatTool[] = GENERATION_TOOLS.map((tool) => ({ type: 'function', function: { name: tool.name, description: tool.description, parameters: tool.parameters } }));

  private readonly deps: GenerationToolsDeps;

  constructor(deps: GenerationToolsDeps) {
    this.deps = deps;
    for (const tool of GENERATION_TOOLS) this.checks.set(tool.name, TOOL_ARGUMENTS.compile(tool.parameters));
  }

  /**
   * Runs one call: arguments checked, the task submitted for the caller through the modality's
   * service (the `model` argument, else the catalog's default) and waited for. Problems the model
   * can act on (bad arguments, a request the service refuses, a refused or failed task) are
   * results, not errors; an abort of `signal` cancels the task and rejects. Answers the output as
   * JSON `{task_id, model, status, output: [urls], message?}`, plus the ids the service answered
   * (generate_3d: material_id and mesh3d_history_id).
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

    let submitted: SubmittedTask;
    try {
      submitted = await tool.submit(this.deps.services, args, { ownerId: caller.ownerId, clientId: null, requestId: caller.requestId });
    } catch (err) {
      if (err instanceof ApiError && err.status < 500) return failure(err.message);
      throw err;
    }
    const { task, ids } = submitted;
    const stop = () => void this.deps.tasks.cancel(caller.ownerId, task.id, 'the agent request was cancelled').catch(() => undefined);
    signal.addEventListener('abort', stop, { once: true });
    try {
      const record = await untilAborted(this.deps.tasks.waitForEnd(task.id, this.deps.waitMs), signal);
      const status = record?.queue_status.status ?? 'process';
      const draw = record?.queue_status.data;
      const message = !record ? `still running; its result will be at GET /v1/ai/result/${task.id}` : status !== 'success' ? draw?.original_error_message ?? draw?.message : undefined;
      return JSON.stringify({ task_id: task.id, model: task.model, status, output: draw?.output ?? [], ...ids, ...(message ? { message } : {}) });
    } finally {
      signal.removeEventListener('abort', stop);
    }
  }
}
