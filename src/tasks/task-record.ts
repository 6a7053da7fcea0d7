import type { DrawResponse, TaskResult, TaskStatusRecord } from '../core/task-status-record.ts';
import type { TaskRow } from '../storage/schema.ts';

export type { DrawResponse, GeneralOutput, QueueStatus, TaskResult, TaskStatusRecord } from '../core/task-status-record.ts';

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
      ...(queue !== undefined ? { queue, queue_position: queue } : {}),
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
