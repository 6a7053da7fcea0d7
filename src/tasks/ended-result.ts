/** A synchronous task's end as the calls that answer with its files (speech audio, base64 images) need it. */
import type { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { ApiError } from '../core/errors.ts';
import type { FileService } from '../files/file-service.ts';
import type { GenerationOutcome } from './generation-service.ts';
import { ownFileRef } from './input-reader.ts';
import type { DrawResponse } from './task-record.ts';

/** The ended task's result, or the error a synchronous call answers with (as the generation endpoints do). */
export function endedResult(outcome: GenerationOutcome): DrawResponse {
  const { task } = outcome;
  const ids = { task_id: task.id, request_id: task.request_id };
  if (outcome.kind !== 'ended') throw new ApiError('upstream_timeout', 'the task did not end within SYNC_TIMEOUT_MS; it goes on', null, ids);
  const draw = outcome.record.queue_status.data;
  if (draw.status === 'failed') throw new ApiError('task_failed', draw.original_error_message ?? draw.message ?? 'the task failed', null, ids);
  if (draw.status !== 'success') throw new ApiError('task_rejected', draw.message ?? `the task ended ${draw.status}`, null, ids);
  return draw;
}

/** The bytes of a file this gateway serves (a task output's URL). */
export async function ownFileBytes(files: FileService, url: string): Promise<Buffer> {
  const ref = ownFileRef(files, new URL(url));
  const opened = ref && (await files.open(ref.id, ref.name));
  if (!opened) throw new ApiError('internal_error', 'the output file of the task is gone');
  return buffer(opened.stream as Readable);
}
