import type { TaskStatusEvent } from '../storage/event-bus.ts';
import { DRAW_CHANNEL } from './realtime-protocol.ts';

/** What the registry needs to know of an authenticated session. */
export interface RegisteredSession {
  readonly channel: string;
  readonly clientId: string | null;
}

/**
 * Ready, authenticated sessions indexed by user and by subscribed task, so finding who gets
 * a task update costs the number of that user's sessions, not of every session.
 */
export class SessionRegistry<S extends RegisteredSession> {
  private readonly byUser = new Map<string, Set<S>>();
  private readonly byTask = new Map<string, Set<S>>();

  add(userId: string, session: S): void {
    addTo(this.byUser, userId, session);
  }

  /** Forgets the session and its task subscriptions. */
  remove(userId: string, session: S, subscribedTaskIds: Iterable<string>): void {
    removeFrom(this.byUser, userId, session);
    for (const taskId of subscribedTaskIds) removeFrom(this.byTask, taskId, session);
  }

  subscribe(taskId: string, session: S): void {
    addTo(this.byTask, taskId, session);
  }

  unsubscribe(taskId: string, session: S): void {
    removeFrom(this.byTask, taskId, session);
  }

  /**
   * Who gets a task update, each session once: the owner's sessions on the draw channel (only
   * those of the submitting client when the task names one) and the task's subscribers.
   */
  recipientsOf(event: TaskStatusEvent): Set<S> {
    const recipients = new Set<S>();
    for (const session of this.byUser.get(event.ownerId) ?? []) {
      if (session.channel !== DRAW_CHANNEL) continue;
      if (event.clientId !== null && session.clientId !== event.clientId) continue;
      recipients.add(session);
    }
    for (const session of this.byTask.get(event.taskId) ?? []) recipients.add(session);
    return recipients;
  }
}

function addTo<S>(index: Map<string, Set<S>>, key: string, session: S): void {
  let set = index.get(key);
  if (!set) {
    set = new Set();
    index.set(key, set);
  }
  set.add(session);
}

function removeFrom<S>(index: Map<string, Set<S>>, key: string, session: S): void {
  const set = index.get(key);
  if (!set) return;
  set.delete(session);
  if (set.size === 0) index.delete(key);
}
