/**
 * Body fields every task submit takes besides its endpoint's own (docs/api/tasks.md): they
 * concern the task, not its input, so the shared submit path (http/generation-reply.ts) takes
 * them out of the body before a service turns it into the input.
 */
import { Type } from 'typebox';
import { ApiError } from '../core/errors.ts';
import { TASK_STATUSES, type TaskStatus } from '../core/task-state.ts';

/**
 * Spread into each submit body schema. `callback_events` is checked by callbackEventsOf, not by
 * the schema, so that any bad value (a string, an unknown status) names the field itself.
 */
export const SubmitFields = {
  callback_events: Type.Optional(Type.Unknown({ description: `the statuses the callback announces, a list of ${TASK_STATUSES.join(', ')} (a repeated field in multipart); default all, [] none` })),
};

/** The statuses a submit's callback announces: undefined for all; 400 invalid_parameter naming callback_events for anything but a list of statuses. */
export function callbackEventsOf(value: unknown): TaskStatus[] | undefined {
  if (value === undefined) return undefined;
  const statuses: readonly unknown[] = TASK_STATUSES;
  if (!Array.isArray(value) || !value.every((each) => statuses.includes(each))) {
    throw new ApiError('invalid_parameter', `callback_events must be a list of task statuses (${TASK_STATUSES.join(', ')})`, 'callback_events');
  }
  return [...new Set(value as TaskStatus[])];
}
