import { Counter, Histogram, type Registry } from 'prom-client';
import { isTerminal } from '../core/task-state.ts';
import type { TaskRow } from '../storage/schema.ts';

/**
 * Prometheus figures of the tasks this process changed: status changes by status and model,
 * and the run time of ended tasks. Counted where a change is written, so instances sharing
 * a bus do not count one change twice.
 */
export class TaskMetrics {
  private readonly changes: Counter<'status' | 'model'>;
  private readonly durations: Histogram<'status' | 'model'>;

  constructor(registry: Registry) {
    this.changes = new Counter({
      name: 'gengate_task_status_changes_total',
      help: 'Task status changes written by this process, by new status and model',
      labelNames: ['status', 'model'] as const,
      registers: [registry],
    });
    this.durations = new Histogram({
      name: 'gengate_task_duration_seconds',
      help: 'Time from submit to the end of tasks ended by this process, by final status and model',
      labelNames: ['status', 'model'] as const,
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800],
      registers: [registry],
    });
  }

  /** Called with each stored version of a task (TaskService's observer). */
  readonly observe = (row: TaskRow): void => {
    const labels = { status: row.status, model: row.model };
    this.changes.inc(labels);
    if (isTerminal(row.status) && row.finished_at !== null) this.durations.observe(labels, (row.finished_at - row.created_at) / 1000);
  };
}
