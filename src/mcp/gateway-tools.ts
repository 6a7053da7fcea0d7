/**
 * The gateway's own MCP tools, made from the endpoint table (endpoints/endpoint-table.ts): one
 * per tool named there, offered when the caller has an enabled model of its capabilities, plus
 * list_models, get_task and cancel_task. A call runs what its endpoint's route runs: the same
 * admission (one request of the endpoint for the limits), body schema and modality service, so
 * its task is routed, ledgered, kept in histories and called back like any other.
 */
import type { ValidateFunction } from 'ajv';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { AudioService } from '../audio/service.ts';
import type { LiveModel } from '../catalog/catalog.ts';
import type { Principal } from '../auth/tokens.ts';
import { ApiError } from '../core/errors.ts';
import { guessMimeType } from '../core/mime-type.ts';
import { bodyValidators } from '../core/schema-validators.ts';
import { isTerminal } from '../core/task-state.ts';
import type { TaskStatusRecord } from '../core/task-status-record.ts';
import { validationError, type AjvLikeError } from '../core/validation-errors.ts';
import type { DigitalHumanGenerations } from '../digital-human/digital-human-generations.ts';
import { ENDPOINT_NAMES, ENDPOINTS, type Endpoint, type EndpointRow, type GatewayToolName } from '../endpoints/endpoint-table.ts';
import type { EditOperation, GenerationKind, GenerationRequestBody } from '../endpoints/mesh3d.ts';
import { callbackEventsOf } from '../endpoints/submit-fields.ts';
import type { ImageService } from '../images/service.ts';
import type { LimitsService } from '../limits/limits-service.ts';
import type { ModelList } from '../limits/model-list.ts';
import type { Mesh3dService } from '../mesh3d/service.ts';
import type { EventBus } from '../storage/event-bus.ts';
import type { GenerationCaller } from '../tasks/generation-service.ts';
import type { TaskService } from '../tasks/task-service.ts';
import type { VideoService } from '../video/service.ts';

export interface GatewayToolsDeps {
  images: ImageService;
  video: VideoService;
  audio: AudioService;
  digitalHumans: DigitalHumanGenerations;
  mesh3d: Mesh3dService;
  tasks: TaskService;
  bus: EventBus;
  limits: LimitsService;
  modelList: ModelList;
  /** Every model as /v1/models/list lists it (catalog models and engines' workflows). */
  models(): LiveModel[];
  /** MCP_CALL_TIMEOUT_MS: how long a call waits for its task. */
  waitMs: number;
}

/** One tools/call as the MCP server hands it over. */
export interface ToolCallContext {
  principal: Principal;
  /** The call's id: its admission, task request id and ledger row. */
  requestId: string;
  /** Aborted by the client's notifications/cancelled. */
  signal: AbortSignal;
  /** Set when the client sent a progressToken: called with each rise of the task's progress. */
  progress?: (percent: number) => Promise<void>;
}

/** How a call ended, for its ledger row: refused when the gateway turned it away before anything ran. */
export type CallOutcome = { result: CallToolResult; status: 'success' | 'error' | 'refused'; httpStatus: number };

/** The tools that are not endpoints. */
const TASK_TOOLS: Tool[] = [
  {
    name: 'list_models',
    description: 'The models you can use, as GET /v1/models/list lists them; `type` narrows them to one capability type.',
    inputSchema: { type: 'object', properties: { type: { type: 'string', description: 'a capability type (e.g. image_generate), or all' } }, additionalProperties: false },
  },
  {
    name: 'get_task',
    description: 'The status record of one of your tasks, with links to its outputs once it succeeded.',
    inputSchema: { type: 'object', properties: { task_id: { type: 'string', minLength: 1 } }, required: ['task_id'], additionalProperties: false },
  },
  {
    name: 'cancel_task',
    description: 'Cancels one of your tasks where it can be cancelled; answers its record.',
    inputSchema: { type: 'object', properties: { task_id: { type: 'string', minLength: 1 } }, required: ['task_id'], additionalProperties: false },
  },
];

const DESCRIPTIONS: Record<GatewayToolName, string> = {
  generate_image: 'Generate images from a prompt (POST /v1/images/generations).',
  edit_image: 'Edit images given by URL (POST /v1/images/edits).',
  generate_video: 'Generate a video (POST /v1/video/generations).',
  generate_music: 'Generate a song (POST /v1/song/generations).',
  generate_speech: 'Synthesize speech (POST /v1/speech/generations).',
  generate_digital_human_video: 'Lip-sync a digital human to an audio track (POST /v1/digital-human/generations).',
  generate_3d: 'Generate a 3D model from text, one image or several views (POST /v1/mesh3d/generate/{mode}).',
  edit_3d: 'Edit a 3D model of a history (POST /v1/mesh3d/edit/{operation}).',
};

/** The endpoints of each tool, in the table's order. */
function toolEndpoints(): Map<GatewayToolName, Endpoint[]> {
  const byTool = new Map<GatewayToolName, Endpoint[]>();
  for (const endpoint of ENDPOINT_NAMES) {
    const tool = ENDPOINTS[endpoint].tool;
    if (tool) byTool.set(tool.name, [...(byTool.get(tool.name) ?? []), endpoint]);
  }
  return byTool;
}

/** A schema as plain JSON (TypeBox keeps its own marks out of JSON). */
function plain(schema: unknown): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;
}

function textResult(text: string, isError: boolean, structuredContent?: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text }], ...(structuredContent ? { structuredContent } : {}), ...(isError ? { isError: true } : {}) };
}

/** An error as a tool result: its code, message and param as JSON text. */
export function errorResult(err: ApiError): CallToolResult {
  return textResult(JSON.stringify({ error: { code: err.code, message: err.message, param: err.param } }), true);
}

/** The last segment of a URL's path: the output's file name. */
function fileNameOf(url: string): string {
  try {
    return decodeURIComponent(new URL(url).pathname.split('/').pop() || url);
  } catch {
    return url;
  }
}

/**
 * A task's record as a tool result: one resource_link per output file once it succeeded, a text
 * naming the task and its status, the record as structuredContent. A failed or rejected task is
 * an error result naming the code its endpoint answers (task_failed, task_rejected).
 */
export function recordResult(record: TaskStatusRecord): CallToolResult {
  const status = record.queue_status;
  const draw = status.data;
  const failed = status.status === 'failed' ? 'task_failed' : status.status === 'rejected' ? 'task_rejected' : undefined;
  const message = failed ? draw.original_error_message ?? draw.message ?? status.message : undefined;
  const links = status.status === 'success'
    ? draw.output_content.filter((o) => o.url).map((o) => ({ type: 'resource_link' as const, uri: o.url!, name: o.filename ?? fileNameOf(o.url!), mimeType: guessMimeType(o.filename ?? fileNameOf(o.url!)) }))
    : [];
  const text = `task ${status.task_id}: ${status.status}${failed ? ` (${failed}${message ? `: ${message}` : ''})` : ''}`;
  return {
    content: [...links, { type: 'text', text }],
    structuredContent: record as unknown as Record<string, unknown>,
    ...(failed ? { isError: true } : {}),
  };
}

export class GatewayTools {
  private readonly endpointsOf = toolEndpoints();
  private readonly checks = new Map<Endpoint, ValidateFunction>();

  private readonly deps: GatewayToolsDeps;

  constructor(deps: GatewayToolsDeps) {
    this.deps = deps;
    // The app's body validation (http/app.ts): values as sent, defaults filled in.
    for (const endpoints of this.endpointsOf.values()) for (const endpoint of endpoints) this.checks.set(endpoint, bodyValidators.compile(plain(ENDPOINTS[endpoint].tool!.body)));
  }

  /** The enabled models of any of the capabilities of `rows`. */
  private modelsFor(rows: readonly EndpointRow[]): string[] {
    const capabilities = new Set(rows.flatMap((r) => r.capabilities));
    return this.deps.models().filter((m) => m.enabled && m.modelTypes.some((t) => capabilities.has(t))).map((m) => m.alias);
  }

  /** The tools as the caller sees them: those with an enabled model, then the task tools. */
  list(): Tool[] {
    const tools: Tool[] = [];
    for (const [name, endpoints] of this.endpointsOf) {
      const withModels = endpoints.filter((e) => this.modelsFor([ENDPOINTS[e]]).length > 0);
      if (withModels.length === 0) continue;
      const rows = withModels.map((e) => ENDPOINTS[e]);
      const models = this.modelsFor(rows);
      const choice = rows[0]!.tool!.choice;
      let inputSchema: Record<string, unknown>;
      if (!choice) {
        inputSchema = plain(rows[0]!.tool!.body);
      } else {
        // One schema for the endpoints of the tool: the argument that picks one, and every field of theirs.
        const properties: Record<string, unknown> = {};
        for (const row of rows) for (const [field, schema] of Object.entries((plain(row.tool!.body).properties ?? {}) as Record<string, unknown>)) properties[field] ??= schema;
        inputSchema = {
          type: 'object',
          properties: { [choice.argument]: { type: 'string', enum: rows.map((r) => r.tool!.choice!.value), description: `picks the endpoint: ${rows.map((r) => r.routes[0]).join(', ')}` }, ...properties },
          required: [choice.argument],
        };
      }
      const properties = (inputSchema.properties ?? {}) as Record<string, Record<string, unknown>>;
      properties.model = { ...(properties.model ?? {}), type: 'string', enum: models };
      delete properties.model.minLength;
      delete properties.model.maxLength;
      tools.push({ name, description: DESCRIPTIONS[name], inputSchema: inputSchema as Tool['inputSchema'] });
    }
    return [...tools, ...TASK_TOOLS];
  }

  /** Whether the gateway has a tool of that name (listed or not). */
  has(name: string): boolean {
    return this.endpointsOf.has(name as GatewayToolName) || TASK_TOOLS.some((t) => t.name === name);
  }

  /** Runs one call; errors are results (never thrown), except a failure of the gateway itself. */
  async call(name: string, args: Record<string, unknown>, ctx: ToolCallContext): Promise<CallOutcome> {
    try {
      switch (name) {
        case 'list_models': {
          const type = args.type === undefined ? 'all' : args.type;
          if (typeof type !== 'string') throw new ApiError('invalid_parameter', 'type must be a string', 'type');
          const listing = this.deps.modelList.list(type);
          return { result: textResult(JSON.stringify(listing), false, listing), status: 'success', httpStatus: 200 };
        }
        case 'get_task':
          return this.answered(recordResult(await this.deps.tasks.record(ctx.principal.userId, taskIdOf(args))));
        case 'cancel_task':
          return this.answered(recordResult(await this.deps.tasks.cancel(ctx.principal.userId, taskIdOf(args))));
      }
      return await this.generate(name as GatewayToolName, args, ctx);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      return { result: errorResult(err), status: err.status < 500 ? 'refused' : 'error', httpStatus: err.status };
    }
  }

  private answered(result: CallToolResult): CallOutcome {
    return { result, status: result.isError ? 'error' : 'success', httpStatus: 200 };
  }

  /** The endpoint a call of the tool runs: its only one, or the one its `mode` / `operation` names. */
  private endpointFor(name: GatewayToolName, args: Record<string, unknown>): Endpoint {
    const endpoints = this.endpointsOf.get(name)!;
    const choice = ENDPOINTS[endpoints[0]!].tool!.choice;
    if (!choice) return endpoints[0]!;
    const value = args[choice.argument];
    if (value === undefined) throw new ApiError('missing_parameter', `${choice.argument} is required`, choice.argument);
    const endpoint = endpoints.find((e) => ENDPOINTS[e].tool!.choice!.value === value);
    if (!endpoint) throw new ApiError('invalid_parameter', `${choice.argument} must be one of ${endpoints.map((e) => ENDPOINTS[e].tool!.choice!.value).join(', ')}`, choice.argument);
    return endpoint;
  }

  private async generate(name: GatewayToolName, args: Record<string, unknown>, ctx: ToolCallContext): Promise<CallOutcome> {
    const endpoint = this.endpointFor(name, args);
    const row = ENDPOINTS[endpoint];
    const body: Record<string, unknown> = { ...args };
    if (row.tool!.choice) delete body[row.tool!.choice.argument];
    // Admission first, as on the route: a refused body still counts against the caller's rate.
    const admission = await this.deps.limits.admit(ctx.principal, ctx.requestId, { route: row.routes[0]!, body, countsTokens: false });
    let taskId: string;
    try {
      const check = this.checks.get(endpoint)!;
      if (!check(body)) throw validationError(check.errors![0] as unknown as AjvLikeError, 'body');
      const callbackEvents = callbackEventsOf(body.callback_events);
      delete body.callback_events;
      const caller: GenerationCaller = { ownerId: ctx.principal.userId, clientId: null, requestId: ctx.requestId, admission, ...(callbackEvents ? { callbackEvents } : {}) };
      taskId = await this.submit(endpoint, body, caller);
    } catch (err) {
      admission.failedWith(err);
      void admission.end(err instanceof ApiError ? err.status : 500, undefined);
      throw err;
    }
    void admission.end(200, undefined);
    return this.answered(await this.follow(taskId, ctx));
  }

  /** Submits through the endpoint's modality service, as its route does; answers the task id. */
  private async submit(endpoint: Endpoint, body: Record<string, unknown>, caller: GenerationCaller): Promise<string> {
    const { images, video, audio, digitalHumans, mesh3d } = this.deps;
    const submitted = async (outcome: Promise<{ task: { id: string } }>) => (await outcome).task.id;
    switch (endpoint) {
      case 'images.generations':
        return submitted(images.generate(caller, body as never, 'async'));
      case 'images.edits': {
        const { image, mask, ...fields } = body as { image: string | string[]; mask?: string };
        const list = Array.isArray(image) ? image : [image];
        return submitted(images.edit(caller, images.checkEdit(fields as never, list.length), { image: list, ...(mask ? { mask } : {}) }, 'async'));
      }
      case 'video.generations':
        return submitted(video.generate(caller, body as never, 'async'));
      case 'song.generations':
        return submitted(audio.song(caller, body as never, 'async'));
      case 'speech.generations':
        return submitted(audio.speech(caller, body as never, 'async'));
      case 'digital-human.generations':
        return submitted(digitalHumans.generate(caller, body as never, 'async'));
    }
    const [, kind, op] = endpoint.split('.') as [string, string, string];
    if (kind === 'generate') return submitted(mesh3d.generate(op as GenerationKind, body as GenerationRequestBody, caller));
    return (await mesh3d.edit(op as EditOperation, body as Record<string, unknown> & { history_id: string }, caller)).task_id;
  }

  /**
   * Waits for the task (MCP_CALL_TIMEOUT_MS at most), reporting each rise of its progress; the
   * client's cancellation cancels the task. A task still running answers its current record.
   */
  private async follow(taskId: string, ctx: ToolCallContext): Promise<CallToolResult> {
    const { tasks, bus } = this.deps;
    const ownerId = ctx.principal.userId;
    let reported = -1;
    const report = ctx.progress;
    const unsubscribe = report
      ? bus.subscribe('task.status', (event) => {
        const progress = event.record.queue_status.progress;
        if (event.taskId !== taskId || !(progress > reported)) return;
        reported = progress;
        void report(progress).catch(() => undefined);
      })
      : () => undefined;
    const cancel = () => void tasks.cancel(ownerId, taskId, 'cancelled by the MCP client').catch(() => undefined);
    ctx.signal.addEventListener('abort', cancel, { once: true });
    try {
      const ended = await tasks.waitForEnd(taskId, this.deps.waitMs);
      const record = ended ?? (await tasks.record(ownerId, taskId));
      if (!ended && !isTerminal(record.queue_status.status)) return stillRunning(record);
      return recordResult(record);
    } finally {
      unsubscribe();
      ctx.signal.removeEventListener('abort', cancel);
    }
  }
}

/** A task past the wait: its id and status, its record, no links; get_task reads it later. */
function stillRunning(record: TaskStatusRecord): CallToolResult {
  const status = record.queue_status;
  return textResult(`task ${status.task_id}: ${status.status} (still running; read it later with get_task)`, false, record as unknown as Record<string, unknown>);
}

function taskIdOf(args: Record<string, unknown>): string {
  const id = args.task_id;
  if (id === undefined) throw new ApiError('missing_parameter', 'task_id is required', 'task_id');
  if (typeof id !== 'string' || id.length === 0) throw new ApiError('invalid_parameter', 'task_id must be a non-empty string', 'task_id');
  return id;
}
