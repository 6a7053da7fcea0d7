import type { Logger } from 'pino';
import { ApiError } from '../core/errors.ts';
import { isTerminal } from '../core/task-state.ts';
import type { EventBus, TaskStreamEvent } from '../storage/event-bus.ts';
import type { TaskStatusRecord } from './task-record.ts';
import { PROGRESS_EVENT_SPACING_MS, type TaskService } from './task-service.ts';

/** Where a stream's events go: a server-sent-events response (http/routes/tasks.ts). */
export interface TaskEventSink {
  /** Sends one event; undefined while the connection takes more, else a promise that resolves when it can. */
  send(event: { id: number; event: string; data: string }): Promise<void> | undefined;
  /** Sends a comment line, which keeps idle connections open through proxies. */
  comment(text: string): void;
  end(): void;
  /** Called once when the client goes away. */
  onClose(listener: () => void): void;
}

export interface TaskEventStreamsOptions {
  /** TASK_EVENTS_HEARTBEAT_MS: a comment line goes out when no event went for this long. */
  heartbeatMs: number;
  logger: Logger;
}

/** Events read from the table per query while a stream catches up. */
const PAGE = 200;

/**
 * The event streams of tasks (GET /v1/tasks/:taskId/events). Events are written to the store
 * with their sequence numbers before they are published (task-service.ts), so a stream
 * subscribes to the bus first, then reads where it starts from the store, and from then on takes
 * the bus's events in sequence order: one it has sent is dropped, and a gap (an event published
 * by another instance not yet arrived, or lost with Redis) is filled from the store.
 */
export class TaskEventStreams {
  private readonly open = new Set<() => void>();

  private readonly tasks: TaskService;
  private readonly bus: EventBus;
  private readonly opts: TaskEventStreamsOptions;

  constructor(
    tasks: TaskService,
    bus: EventBus,
    opts: TaskEventStreamsOptions,
  ) {
    this.tasks = tasks;
    this.bus = bus;
    this.opts = opts;
  }

  /**
   * Streams the owner's task to `sink` until its terminal status (or the client leaves).
   * `lastEventId` undefined: from the current record on; a number: every event after that one.
   * The task is checked first, so a 404 comes before the stream opens.
   */
  async follow(ownerId: string, taskId: string, lastEventId: number | undefined, startSink: () => TaskEventSink): Promise<void> {
    const incoming: TaskStreamEvent[] = [];
    // Wakes the stream while it waits: an event came in, or the stream is to stop.
    let wake = (): void => undefined;
    // A change of the task brings its events on task.status; paced progress comes on task.events.
    // An instance of an earlier version sends a change's events on task.events alone (rolling upgrade).
    const take = (message: { taskId: string; events?: TaskStreamEvent[] }) => {
      if (message.taskId !== taskId || !message.events?.length) return;
      incoming.push(...message.events);
      wake();
    };
    const unsubscribeChanges = this.bus.subscribe('task.status', take);
    const unsubscribeEvents = this.bus.subscribe('task.events', take);
    const unsubscribe = () => {
      unsubscribeChanges();
      unsubscribeEvents();
    };
    let stopped = false;
    const stop = () => {
      stopped = true;
      wake();
    };
    try {
      // After subscribing: whatever is written from here on arrives on the bus or is in the store.
      const snapshot = await this.tasks.snapshot(ownerId, taskId);
      // Events are stored before anyone sees them: an id past the last stored one was never sent.
      if (lastEventId !== undefined && lastEventId > snapshot.seq) throw new ApiError('invalid_parameter', `Last-Event-ID ${lastEventId} is past the last event of task ${taskId} (${snapshot.seq})`, 'Last-Event-ID');
      const sink = startSink();
      this.open.add(stop);
      sink.onClose(stop);
      let last = lastEventId ?? snapshot.seq;
      let lastSentAt = Date.now();
      let lastProgressAt = 0;
      // A stream without Last-Event-ID follows the task live: its progress events keep their spacing.
      const paced = lastEventId === undefined;
      // Resumed after the terminal status: nothing comes after it.
      let ended = lastEventId !== undefined && snapshot.ended && snapshot.seq <= lastEventId;
      const pause = (ms: number) =>
        new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, ms);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        }).finally(() => (wake = () => undefined));

      const deliver = async (event: TaskStreamEvent): Promise<void> => {
        if (paced && event.kind === 'progress') {
          // A pause also ends when an event comes in: the time is checked again.
          for (let wait = lastProgressAt + PROGRESS_EVENT_SPACING_MS - Date.now(); wait > 0 && !stopped; wait = lastProgressAt + PROGRESS_EVENT_SPACING_MS - Date.now()) await pause(wait);
          if (stopped) return;
          lastProgressAt = Date.now();
        }
        await sink.send({ id: event.seq, event: event.kind, data: event.data });
        last = event.seq;
        lastSentAt = Date.now();
        if (event.kind === 'status' && isTerminal((JSON.parse(event.data) as TaskStatusRecord).queue_status.status)) ended = true;
      };
      /** Sends what the store has after `last`; answers whether it found anything. */
      const catchUp = async (): Promise<boolean> => {
        let found = false;
        for (;;) {
          const page = await this.tasks.eventsAfter(taskId, last, PAGE);
          for (const event of page) {
            if (stopped || ended) return true;
            await deliver(event);
            found = true;
          }
          if (page.length < PAGE) return found;
        }
      };

      try {
        if (lastEventId === undefined) {
          await deliver({ seq: snapshot.seq, kind: 'status', data: JSON.stringify(snapshot.record) });
          ended ||= snapshot.ended;
        } else if (!ended) await catchUp();
        while (!stopped && !ended) {
          const next = incoming.shift();
          if (next) {
            if (next.seq === last + 1) await deliver(next);
            else if (next.seq > last) await catchUp();
            continue;
          }
          const quietFor = Date.now() - lastSentAt;
          if (quietFor < this.opts.heartbeatMs) {
            await pause(this.opts.heartbeatMs - quietFor);
            continue;
          }
          // Quiet for a heartbeat: what the bus lost is read from the store, else a comment keeps the line open.
          if (!(await catchUp())) {
            sink.comment('keep-alive');
            lastSentAt = Date.now();
          }
        }
      } catch (err) {
        if (!stopped) this.opts.logger.warn({ err, taskId }, 'task event stream failed');
      } finally {
        sink.end();
      }
    } finally {
      this.open.delete(stop);
      unsubscribe();
    }
  }

  /** Ends every open stream (the server is stopping). */
  close(): void {
    for (const stop of [...this.open]) stop();
  }
}
