/** OpenAI's `batch` object of a stored batch, and the output and error lines batches write. */
import type { LineCounts } from '../storage/repos/batches-repo.ts';
import type { BatchRow } from '../storage/schema.ts';
import type { BatchValidationError } from './batch-input.ts';
import { toUnixSeconds } from './openai-files.ts';

export const TERMINAL_BATCH = ['completed', 'failed', 'expired', 'cancelled'] as const;

export interface BatchObject {
  id: string;
  object: 'batch';
  endpoint: string;
  errors: { object: 'list'; data: BatchValidationError[] } | null;
  input_file_id: string;
  completion_window: string;
  status: string;
  output_file_id: string | null;
  error_file_id: string | null;
  created_at: number;
  in_progress_at: number | null;
  expires_at: number;
  finalizing_at: number | null;
  completed_at: number | null;
  failed_at: number | null;
  expired_at: number | null;
  cancelling_at: number | null;
  cancelled_at: number | null;
  request_counts: { total: number; completed: number; failed: number };
  metadata: Record<string, string> | null;
}

const seconds = (ms: number | null): number | null => (ms === null ? null : toUnixSeconds(Number(ms)));

/** The batch object; `live` are the counts of its lines while it runs (a batch that ended keeps its own). */
export function batchObject(row: BatchRow, live: LineCounts | undefined): BatchObject {
  const counts = live ? { total: Number(row.request_total), completed: live.done, failed: live.failed } : { total: Number(row.request_total), completed: Number(row.request_completed), failed: Number(row.request_failed) };
  return {
    id: row.id,
    object: 'batch',
    endpoint: row.endpoint,
    errors: row.errors ? { object: 'list', data: JSON.parse(row.errors) as BatchValidationError[] } : null,
    input_file_id: row.input_file_id,
    completion_window: row.completion_window,
    status: row.status,
    output_file_id: row.output_file_id,
    error_file_id: row.error_file_id,
    created_at: toUnixSeconds(Number(row.created_at)),
    in_progress_at: seconds(row.in_progress_at),
    expires_at: toUnixSeconds(Number(row.expires_at)),
    finalizing_at: seconds(row.finalizing_at),
    completed_at: seconds(row.completed_at),
    failed_at: seconds(row.failed_at),
    expired_at: seconds(row.expired_at),
    cancelling_at: seconds(row.cancelling_at),
    cancelled_at: seconds(row.cancelled_at),
    request_counts: counts,
    metadata: row.metadata ? (JSON.parse(row.metadata) as Record<string, string>) : null,
  };
}

/** A line of the output file: the response the line's request got (of any status). */
export function outputLine(id: string, customId: string, response: { status_code: number; body: unknown }): string {
  return JSON.stringify({ id, custom_id: customId, response: { status_code: response.status_code, request_id: id, body: response.body }, error: null });
}

/** A line of the error file for a line that got no response: malformed, interrupted by a crash, or expired. */
export function errorLine(id: string, customId: string | null, code: string, message: string): string {
  return JSON.stringify({ id, custom_id: customId, response: null, error: { code, message } });
}
