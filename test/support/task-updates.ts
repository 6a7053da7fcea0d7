import type { ReceivedCallback } from '../fakes/callback-receiver.ts';

/**
 * The updates of a task that reached the callback receiver more than once under different
 * webhook ids (a retry keeps its id, so it is no repeat): each as "status progress message".
 */
export function updatesAnnouncedTwice(callbacks: readonly ReceivedCallback[], taskId: string): string[] {
  const seen = new Map<string, string>();
  const repeated: string[] = [];
  for (const callback of callbacks) {
    const q = callback.json?.queue_status;
    if (q?.task_id !== taskId) continue;
    const update = `${q.status} ${q.progress} ${q.message}`;
    const id = seen.get(update);
    if (id !== undefined && id !== callback.id) repeated.push(update);
    seen.set(update, callback.id);
  }
  return repeated;
}
