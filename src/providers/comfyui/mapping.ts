/**
 * ComfyUI mapping: a workflow and a request → the API-format prompt; WebSocket messages → the
 * run's progress; a history entry → the outcome and the files to fetch. Pure functions.
 */
import mime from 'mime-types';
import type { NodeStatus } from '../spec.ts';
import { readReply } from '../upstream-reply.ts';
import { ComfyExecutionError, ComfyHistory, ComfyInterrupted, ComfyOutputFile, ComfyPreviewMetadata, ComfyProgressMessages, ComfyRefusal } from './reply-schemas.ts';
import type { Workflow } from './workflow-catalog.ts';

/** Request fields only the gateway reads (never bound, never warned about). */
const GATEWAY_FIELDS = new Set(['_metadata', 'options', 'model']);

/** The values bindings read: the request's fields, with `width`/`height` taken from `size` ("WxH") when not given. */
export function requestValues(input: Record<string, unknown>): Record<string, unknown> {
  const values = { ...input };
  const size = typeof input.size === 'string' ? /^(\d+)x(\d+)$/.exec(input.size) : null;
  if (size) {
    values.width ??= Number(size[1]);
    values.height ??= Number(size[2]);
  }
  return values;
}

/** Fields whose values are image references to upload before submitting (a binding with `upload: true`). */
export function uploadFields(workflow: Workflow): string[] {
  return Object.entries(workflow.bindings ?? {}).filter(([, bindings]) => bindings.some((b) => b.upload)).map(([field]) => field);
}

/** The references a field holds: one string or a list of them. */
export function refsOf(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

/** The largest seed ComfyUI's samplers take is 2^64-1; a random one stays within safe JSON integers. */
const RANDOM_LIMIT = 2 ** 32;

/**
 * The prompt to submit: the workflow's graph with each bound field's value set on its node
 * inputs. A list value gives each binding the item at its `index`; a missing value keeps the
 * graph's own (or a random integer for `random` bindings). Request fields with no binding are
 * reported as warnings.
 */
export function bindGraph(workflow: Workflow, values: Record<string, unknown>, random: () => number = Math.random): { prompt: Record<string, { class_type: string; inputs: Record<string, unknown> }>; warnings: string[] } {
  const prompt = structuredClone(workflow.graph);
  const bindings = workflow.bindings ?? {};
  for (const [field, targets] of Object.entries(bindings)) {
    const value = values[field];
    for (const target of targets) {
      let bound: unknown = Array.isArray(value) ? value[target.index ?? 0] : (target.index ?? 0) === 0 ? value : undefined;
      if (bound === undefined && target.random) bound = Math.floor(random() * RANDOM_LIMIT);
      if (bound !== undefined) prompt[target.node]!.inputs[target.input] = bound;
    }
  }
  const sizeBound = 'width' in bindings || 'height' in bindings;
  const warnings = Object.keys(values)
    .filter((field) => !(field in bindings) && !GATEWAY_FIELDS.has(field) && !(field === 'size' && sizeBound) && !((field === 'width' || field === 'height') && 'size' in values))
    .map((field) => `${field} dropped: workflow ${workflow.name} has no binding for it`);
  return { prompt, warnings };
}

/** What the WebSocket has told about one prompt so far. */
export interface PromptProgress {
  /** Nodes that finished (or came from the cache). */
  done: Set<string>;
  /** The node running now. */
  running?: string;
  /** Steps of the running node, from `progress` messages. */
  step?: { value: number; max: number };
  /** Set by `execution_success` or `executing` with node null: the outcome is in the history. */
  finished?: boolean;
  error?: ExecutionError;
  interrupted?: { nodeId?: string; nodeType?: string };
  /** The newest preview image not yet handed to the run. */
  preview?: PreviewImage;
}

/** A preview image ComfyUI sent as a binary WebSocket frame. */
export interface PreviewImage {
  image: Buffer;
  mimeType: string;
  /** Named by frames with metadata; a plain preview belongs to the prompt running. */
  promptId?: string;
}

/** Binary frame types (ComfyUI's server.py BinaryEventTypes) and the image formats of a plain preview. */
const PREVIEW_IMAGE = 1;
const PREVIEW_IMAGE_WITH_METADATA = 4;
const PREVIEW_FORMATS: Record<number, string> = { 1: 'image/jpeg', 2: 'image/png' };

/**
 * The preview image of a binary frame: a 4-byte big-endian type, then for a plain preview a
 * 4-byte format and the image, for one with metadata a 4-byte length, that much JSON (prompt_id,
 * image_type) and the image. Undefined for other frames and for frames cut short.
 */
export function previewOf(frame: Buffer): PreviewImage | undefined {
  if (frame.length < 8) return undefined;
  const type = frame.readUInt32BE(0);
  if (type === PREVIEW_IMAGE) {
    const mimeType = PREVIEW_FORMATS[frame.readUInt32BE(4)];
    return mimeType && frame.length > 8 ? { image: frame.subarray(8), mimeType } : undefined;
  }
  if (type !== PREVIEW_IMAGE_WITH_METADATA) return undefined;
  const end = 8 + frame.readUInt32BE(4);
  if (frame.length <= end) return undefined;
  let metadata: unknown;
  try {
    metadata = JSON.parse(frame.subarray(8, end).toString('utf8'));
  } catch {
    return undefined;
  }
  if (!ComfyPreviewMetadata.Check(metadata) || !Object.values(PREVIEW_FORMATS).includes(metadata.image_type)) return undefined;
  return { image: frame.subarray(end), mimeType: metadata.image_type, ...(metadata.prompt_id ? { promptId: metadata.prompt_id } : {}) };
}

/** An `execution_error` message (also found in a history entry's status messages). */
export interface ExecutionError {
  nodeId?: string;
  nodeType?: string;
  message: string;
  exceptionType?: string;
}

export function newProgress(): PromptProgress {
  return { done: new Set() };
}

/** A node id or a text of a message as text (ComfyUI sends some as numbers). */
const text = (value: string | number | null | undefined): string | undefined => (value == null ? undefined : String(value));

/** An execution error from its message's data; data of another shape still says that the node failed. */
function executionErrorOf(data: unknown): ExecutionError {
  if (!ComfyExecutionError.Check(data)) return { message: 'the node failed' };
  const nodeId = text(data.node_id);
  const nodeType = text(data.node_type);
  const exceptionType = text(data.exception_type);
  return { ...(nodeId ? { nodeId } : {}), ...(nodeType ? { nodeType } : {}), ...(exceptionType ? { exceptionType } : {}), message: text(data.exception_message)?.trim() || 'the node failed' };
}

/** Where an interrupted prompt stopped, from its message's data. */
function interruptionOf(data: unknown): { nodeId?: string; nodeType?: string } {
  if (!ComfyInterrupted.Check(data)) return {};
  const nodeId = text(data.node_id);
  const nodeType = text(data.node_type);
  return { ...(nodeId ? { nodeId } : {}), ...(nodeType ? { nodeType } : {}) };
}

/**
 * Applies one WebSocket message (already known to concern this prompt) to its progress. A
 * progress message of another shape is passed over: the history, read at the end, decides.
 */
export function applyMessage(state: PromptProgress, type: string, data: unknown): void {
  const { execution_cached: cached, executing, progress, executed } = ComfyProgressMessages;
  switch (type) {
    case 'execution_cached':
      if (cached.Check(data)) for (const node of data.nodes) state.done.add(String(node));
      break;
    case 'executing': {
      if (!executing.Check(data)) break;
      const node = text(data.node);
      if (state.running && state.running !== node) state.done.add(state.running);
      if (node === undefined) {
        delete state.running;
        state.finished = true;
      } else {
        state.running = node;
      }
      delete state.step;
      break;
    }
    case 'progress': {
      if (!progress.Check(data)) break;
      const node = text(data.node);
      if (node && node !== state.running) {
        if (state.running) state.done.add(state.running);
        state.running = node;
      }
      if (data.value !== undefined && data.max !== undefined && data.max > 0) state.step = { value: data.value, max: data.max };
      break;
    }
    case 'executed': {
      const node = executed.Check(data) ? text(data.node) : undefined;
      if (node) state.done.add(node);
      break;
    }
    case 'execution_success':
      state.finished = true;
      break;
    case 'execution_error':
      state.error = executionErrorOf(data);
      break;
    case 'execution_interrupted':
      state.interrupted = interruptionOf(data);
      break;
  }
}

/** Percent done: finished nodes plus the running node's step fraction, over the graph's nodes; below 100 until the end. */
export function percentOf(state: PromptProgress, nodeCount: number): number {
  const running = state.running && !state.done.has(state.running) && state.step ? state.step.value / state.step.max : 0;
  return Math.min(99, Math.floor((100 * (state.done.size + running)) / Math.max(1, nodeCount)));
}

/** The task's node_status while the prompt runs. */
export function runningNodeStatus(promptId: string, workflow: Workflow, state: PromptProgress): NodeStatus | undefined {
  if (!state.running) return undefined;
  const classType = workflow.graph[state.running]?.class_type ?? 'node';
  return {
    executeId: promptId,
    nodeId: state.running,
    customWorkflowId: workflow.name,
    status: 'running',
    message: state.step ? `${classType} ${state.step.value}/${state.step.max}` : classType,
  };
}

/** A file a node wrote, as /view addresses it. */
export interface OutputFileRef {
  node: string;
  filename: string;
  subfolder: string;
  type: string;
}

export type HistoryOutcome =
  | { state: 'pending' }
  | { state: 'success'; files: OutputFileRef[] }
  | { state: 'failed'; error: ExecutionError }
  | { state: 'interrupted'; nodeId?: string };

/**
 * Reads a GET /history/{prompt_id} answer: `{}` while the prompt waits or runs; else its
 * status and the files of the workflow's output nodes (every `output` file when it names none).
 */
export function historyOutcome(body: unknown, promptId: string, workflow: Workflow | undefined): HistoryOutcome {
  const entry = readReply(ComfyHistory, body, 'ComfyUI')[promptId];
  if (!entry) return { state: 'pending' };
  const status = entry.status;
  if (status?.status_str === 'error') {
    for (const [event, data] of status.messages ?? []) {
      if (event === 'execution_error') return { state: 'failed', error: executionErrorOf(data) };
      if (event === 'execution_interrupted') {
        const { nodeId } = interruptionOf(data);
        return { state: 'interrupted', ...(nodeId ? { nodeId } : {}) };
      }
    }
    return { state: 'failed', error: { message: 'ComfyUI reports the run as failed without an error message' } };
  }
  if (status && status.completed === false) return { state: 'pending' };
  const wanted = workflow?.outputs;
  const files: OutputFileRef[] = [];
  for (const [node, output] of Object.entries(entry.outputs ?? {})) {
    if (wanted && !wanted.includes(node)) continue;
    for (const list of Object.values(output)) {
      if (!Array.isArray(list)) continue;
      for (const item of list) {
        // Lists hold other things too (texts, flags): only files are results.
        if (!ComfyOutputFile.Check(item)) continue;
        const type = item.type ?? 'output';
        // Without a list of output nodes, previews (type temp) are not results.
        if (!wanted && type !== 'output') continue;
        files.push({ node, filename: item.filename, subfolder: item.subfolder ?? '', type });
      }
    }
  }
  return { state: 'success', files };
}

/** The text of a POST /prompt refusal (400 `{error, node_errors}`): the error and each node's problems. */
export function refusalText(body: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return body;
  }
  if (!ComfyRefusal.Check(parsed)) return body;
  const parts: string[] = [];
  const error = parsed.error;
  if (typeof error === 'string') parts.push(error);
  else if (error) parts.push([text(error.message), text(error.details)].filter(Boolean).join(': '));
  for (const [node, nodeError] of Object.entries(parsed.node_errors ?? {})) {
    const problems = (nodeError.errors ?? []).map((e) => [text(e.message), text(e.details)].filter(Boolean).join(': ')).join('; ');
    const classType = text(nodeError.class_type);
    parts.push(`node ${node}${classType ? ` (${classType})` : ''}: ${problems}`);
  }
  return parts.filter(Boolean).join('; ') || body;
}

/** The task message of a node's execution error. */
export function executionErrorMessage(error: ExecutionError): string {
  const where = error.nodeId ? `node ${error.nodeId}${error.nodeType ? ` (${error.nodeType})` : ''}` : 'a node';
  return `the workflow failed at ${where}: ${error.message}`;
}

/** GeneralOutput.type and MIME type of an output file, by its name; `fallbackType` when the name does not tell. */
export function outputKind(fileName: string, fallbackType: string | undefined): { type: string; mimeType: string } {
  const mimeType = mime.lookup(fileName) || 'application/octet-stream';
  const family = mimeType.split('/')[0];
  if (family === 'image' || family === 'video' || family === 'audio') return { type: family, mimeType };
  if (family === 'model' || /\.(glb|gltf|obj|fbx|stl|usdz|ply)$/i.test(fileName)) return { type: '3d', mimeType };
  return { type: fallbackType ?? 'file', mimeType };
}
