/**
 * The task status record, the wire format of a task (tasks/task-record.ts builds it from the
 * stored row): the result body, the callback body and the realtime push carry it.
 */
import type { BillingEntry, MediaSize, NodeStatus, RoutingRecord, Usage } from './result-types.ts';

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
  /** ISO-8601: when the output is deleted and its URL answers 410 (with OUTPUT_RETENTION_DAYS). */
  expires_at?: string;
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
  /** While the task waits (submitted): how many earlier tasks of its model still wait; absent afterwards. */
  queue_position?: number;
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
