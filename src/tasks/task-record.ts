import type { BillingEntry, MediaSize, NodeStatus, RoutingRecord, Usage } from '../core/result-types.ts';
import type { TaskRow } from '../storage/schema.ts';

/** One output item (GeneralOutput). */
export interface GeneralOutput {
  type?: string;
  url?: string;
  b64_json?: string;
  content?: string;
  role?: string;
  filename?: string;
  mediaSize?: MediaSize;
  uploaded?: boolean;
  has_audio?: boolean;
}

/** What a finished (or partly finished) run leaves in the task's `result` column. */
export interface TaskResult {
  output_content?: GeneralOutput[];
  mediaSize?: MediaSize;
  usage?: Usage;
  billings?: BillingEntry[];
  node_status?: NodeStatus;
  /** Domain data of the run (GenerationOutput.extra), kept for the domain that submitted the task. */
  extra?: Record<string, unknown>;
  /** The parts a segmentation made, set by the 3D domain when the task ends (DrawResponse.part_names). */
  part_names?: string[];
  /** Request fields that were not passed on: those the adapter does not read, then those its run dropped. */
  warnings?: string[];
  /** Which model, provider and channel ran the task, the tries before, and what a fallback changed. */
  routing?: RoutingRecord;
}

/** A task's result: the `data` of queue_status and the body of a synchronous generation reply. */
export interface DrawResponse {
  task_id: string;
  request_id: string;
  status: string;
  type: string;
  output: string[];
  output_content: GeneralOutput[];
  billings: BillingEntry[];
  message?: string;
  original_error_message?: string;
  started_at?: number;
  finished_at?: number;
  mediaSize?: MediaSize;
  queue_info?: { queue: number; taskId: string };
  /** A segmentation's parts: the names its edits accept in `part_names`. */
  part_names?: string[];
}

export interface QueueStatus {
  task_id: string;
  request_id: string;
  server?: string;
  status: string;
  queue?: number;
  data: DrawResponse;
  output_content: GeneralOutput[];
  message?: string;
  original_error_message?: string;
  progress: number;
}

/** The task status record: the result body, the callback body, the realtime push. */
export interface TaskStatusRecord {
  queue_status: QueueStatus;
  node_status?: NodeStatus;
  usage?: Usage;
  callback_url?: string;
  user: { _id: string };
  /** `warnings`: request fields that were not passed on to the provider. */
  generate_info: { input: Record<string, unknown>; workflow: { _id: string }; warnings?: string[]; routing?: RoutingRecord };
  billings: BillingEntry[];
}

export function parseResult(row: Pick<TaskRow, 'result'>): TaskResult {
  return row.result ? (JSON.parse(row.result) as TaskResult) : {};
}

/** The result of a task with its parsed output; `queue` (its position while waiting) only when known. */
function drawResponseOf(row: TaskRow, result: TaskResult, queue?: number): DrawResponse {
  const outputs = result.output_content ?? [];
  return {
    task_id: row.id,
    request_id: row.request_id,
    status: row.status,
    type: row.output_type,
    output: outputs.flatMap((o) => (o.url ? [o.url] : [])),
    output_content: outputs,
    billings: result.billings ?? [],
    ...(row.message !== null ? { message: row.message } : {}),
    ...(row.error_message !== null ? { original_error_message: row.error_message } : {}),
    ...(row.started_at !== null ? { started_at: row.started_at } : {}),
    ...(row.finished_at !== null ? { finished_at: row.finished_at } : {}),
    ...(result.mediaSize ? { mediaSize: result.mediaSize } : {}),
    ...(queue !== undefined ? { queue_info: { queue, taskId: row.id } } : {}),
    ...(result.part_names ? { part_names: result.part_names } : {}),
  };
}

/** The full task status record of a task row. */
export function statusRecordOf(row: TaskRow, queue?: number): TaskStatusRecord {
  const result = parseResult(row);
  const data = drawResponseOf(row, result, queue);
  return {
    queue_status: {
      task_id: row.id,
      request_id: row.request_id,
      ...(row.server !== null ? { server: row.server } : {}),
      status: row.status,
      ...(queue !== undefined ? { queue } : {}),
      data,
      output_content: data.output_content,
      ...(row.message !== null ? { message: row.message } : {}),
      ...(row.error_message !== null ? { original_error_message: row.error_message } : {}),
      progress: row.progress,
    },
    ...(result.node_status ? { node_status: result.node_status } : {}),
    ...(result.usage ? { usage: result.usage } : {}),
    ...(row.callback_url !== null ? { callback_url: row.callback_url } : {}),
    user: { _id: row.owner_id },
    generate_info: { input: JSON.parse(row.input) as Record<string, unknown>, workflow: { _id: row.model }, ...(result.warnings?.length ? { warnings: result.warnings } : {}), ...(result.routing ? { routing: result.routing } : {}) },
    billings: result.billings ?? [],
  };
}
