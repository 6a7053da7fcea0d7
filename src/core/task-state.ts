/** Task statuses and the one function every status change goes through. */

export const TASK_STATUSES = ['submitted', 'started', 'process', 'success', 'failed', 'rejected', 'cancelled'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

export const TERMINAL_STATUSES: ReadonlySet<TaskStatus> = new Set<TaskStatus>(['success', 'failed', 'rejected', 'cancelled']);

export function isTerminal(status: string): boolean {
  return TERMINAL_STATUSES.has(status as TaskStatus);
}

/** submitted -> started -> process* -> success | failed; submitted -> rejected; any live state -> cancelled | failed. */
const NEXT: Record<TaskStatus, readonly TaskStatus[]> = {
  submitted: ['started', 'rejected', 'cancelled', 'failed'],
  started: ['process', 'success', 'failed', 'cancelled'],
  process: ['process', 'success', 'failed', 'cancelled'],
  success: [],
  failed: [],
  rejected: [],
  cancelled: [],
};

/** The parts of a task a status change touches. */
export interface TaskState {
  status: TaskStatus;
  progress: number;
  message: string | null;
  errorMessage: string | null;
  startedAt: number | null;
  finishedAt: number | null;
}

/** A requested change: the new status and what comes with it. */
export interface TaskChange {
  status: TaskStatus;
  progress?: number;
  message?: string | null;
  errorMessage?: string | null;
}

export type TransitionOutcome =
  | { ok: true; next: TaskState; changed: boolean }
  | { ok: false; reason: 'terminal' | 'not_allowed'; current: TaskStatus };

/**
 * Applies a change to a task's state. Nothing leaves a terminal state; progress never
 * decreases and is 100 at success; started_at is set on start, finished_at on the end.
 * `changed` is false for a repeated `process` update that brings nothing new.
 */
export function transition(state: TaskState, change: TaskChange, now: number): TransitionOutcome {
  if (isTerminal(state.status)) return { ok: false, reason: 'terminal', current: state.status };
  if (!NEXT[state.status].includes(change.status)) return { ok: false, reason: 'not_allowed', current: state.status };
  const requested = change.status === 'success' ? 100 : clampProgress(change.progress ?? state.progress);
  const next: TaskState = {
    status: change.status,
    progress: Math.max(state.progress, requested),
    message: change.message !== undefined ? change.message : state.message,
    errorMessage: change.errorMessage !== undefined ? change.errorMessage : state.errorMessage,
    startedAt: state.startedAt ?? (change.status === 'started' || change.status === 'process' ? now : null),
    finishedAt: TERMINAL_STATUSES.has(change.status) ? now : null,
  };
  const changed = next.status !== state.status || next.progress !== state.progress || next.message !== state.message || next.errorMessage !== state.errorMessage;
  return { ok: true, next, changed };
}

function clampProgress(p: number): number {
  return Math.min(100, Math.max(0, Math.round(p)));
}
