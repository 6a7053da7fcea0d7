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
  /**
   * What an earlier run of this task saved with `RunContext.remember` (e.g. the upstream task
   * id), so a resumed run watches the upstream task instead of submitting it again.
   */
  saved?: Record<string, unknown>;
}

export interface RunContext {
  /** Aborted when the task is cancelled or the worker loses it; stop and throw. */
  signal: AbortSignal;
  /** Reports progress in percent (never decreasing in the record) with an optional message. */
  progress(percent: number, message?: string): Promise<void>;
  /** Persists state a resumed run needs (upstream task id, workflow prompt id) before waiting on it. */
  remember(state: Record<string, unknown>): Promise<void>;
  /**
   * The bytes behind a reference given in a request: a URL of this gateway's files (read from
   * the store, no network), an asset hash `blake3:<hex>`, a `data:` URI, or an http(s) URL
   * (fetched, bounded by the file size limit).
   */
  readInput(ref: string): Promise<InputFile>;
  /** A public URL for bytes an adapter must hand to an upstream (e.g. a decoded data URI). */
  publish(data: Buffer, fileName: string, mimeType: string): Promise<string>;
}

/** Bytes read from a request reference. */
export interface InputFile {
  data: Buffer;
  mimeType: string;
  fileName: string;
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
  /** GeneralOutput.role, e.g. model, base_model, pbr_model, preview for 3D results. */
  role?: string;
}

export interface GenerationOutput {
  files: GeneratedFile[];
  /** Text outputs (GeneralOutput with content). */
  texts?: { content: string; role?: string }[];
  usage?: Usage;
  billings?: BillingEntry[];
  nodeStatus?: NodeStatus;
  /** Domain data kept with the task result (e.g. a digital-human resource id, 3D parts or rig). */
  extra?: Record<string, unknown>;
}

/**
 * Refuses a task before it starts (bad parameters for this engine, policy): the task ends
 * `rejected` and a synchronous caller gets 422 task_rejected.
 */
export class TaskRejectedError extends Error {}

/** The reason a run's signal is aborted when the task was cancelled (not when its worker stops). */
export class TaskCancelledError extends Error {}

/**
 * The work failed for a reason worth showing (an upstream's refusal, a bad input file): the task
 * ends `failed` with `message` and, as original_error_message, the upstream's own text.
 */
export class TaskFailedError extends Error {
  constructor(message: string, readonly originalMessage?: string) {
    super(message);
  }
}

/** Something that runs generation tasks: the built-in `local` engine, a workflow engine, an upstream API. */
export interface GenerationEngine {
  /** Built-in engines can stop a running task; external API providers cannot (spec document 1). */
  readonly cancellable: boolean;
  /** Checks a job before it starts; throws TaskRejectedError to refuse it. */
  check?(job: GenerationJob): void | Promise<void>;
  run(job: GenerationJob, ctx: RunContext): Promise<GenerationOutput>;
}
