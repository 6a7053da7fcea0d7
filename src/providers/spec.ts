import type { LiveModel } from '../catalog/catalog.ts';
import type { BillingEntry, MediaSize, NodeStatus, Usage } from '../tasks/task-record.ts';

/** One task as an engine sees it. */
export interface GenerationJob {
  taskId: string;
  ownerId: string;
  /** The generation endpoint, e.g. `images.generations`. */
  endpoint: string;
  model: LiveModel;
  /** The request's parameters as validated by the endpoint. */
  input: Record<string, unknown>;
  /** 1 on the first run; a resumed task (its worker died) runs again from the start. */
  attempt: number;
}

export interface RunContext {
  /** Aborted when the task is cancelled or the worker loses it; stop and throw. */
  signal: AbortSignal;
  /** Reports progress in percent (never decreasing in the record) with an optional message. */
  progress(percent: number, message?: string): Promise<void>;
}

/** A file an engine produced; the gateway stores it, serves it and registers it as an asset. */
export interface GeneratedFile {
  /** GeneralOutput.type: image, audio, video, 3d or file. */
  type: string;
  data: Buffer;
  fileName: string;
  mimeType: string;
  mediaSize?: MediaSize;
  hasAudio?: boolean;
}

export interface GenerationOutput {
  files: GeneratedFile[];
  /** Text outputs (GeneralOutput with content). */
  texts?: { content: string; role?: string }[];
  usage?: Usage;
  billings?: BillingEntry[];
  nodeStatus?: NodeStatus;
}

/**
 * Refuses a task before it starts (bad parameters for this engine, policy): the task ends
 * `rejected` and a synchronous caller gets 422 task_rejected.
 */
export class TaskRejectedError extends Error {}

/** Something that runs generation tasks: the built-in `local` engine, a workflow engine, an upstream API. */
export interface GenerationEngine {
  /** Built-in engines can stop a running task; external API providers cannot (spec document 1). */
  readonly cancellable: boolean;
  /** Checks a job before it starts; throws TaskRejectedError to refuse it. */
  check?(job: GenerationJob): void | Promise<void>;
  run(job: GenerationJob, ctx: RunContext): Promise<GenerationOutput>;
}
