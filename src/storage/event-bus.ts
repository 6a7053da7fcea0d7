import { EventEmitter } from 'node:events';
import type { TaskStatusRecord } from '../core/task-status-record.ts';

/** A status change, published after it was persisted. */
export interface TaskStatusEvent {
  taskId: string;
  ownerId: string;
  /** Only sessions of this client get the push, when the submit named one. */
  clientId: string | null;
  status: string;
  /** The task version the record shows; a consumer may drop an event older than one it has seen. */
  version: number;
  record: TaskStatusRecord;
  /** The stream events written with this change, in the same message: a change is one publish. */
  events: TaskStreamEvent[];
}

/** One event of a task's event stream (GET /v1/tasks/:taskId/events), as task_events stores it. */
export interface TaskStreamEvent {
  /** Its place in the task's sequence: the stream's `id:`. */
  seq: number;
  /** status, progress, preview or output: the stream's `event:`. */
  kind: string;
  /** JSON: the stream's `data:`. */
  data: string;
}

/** Messages the instances of a deployment exchange. */
export interface BusTopics {
  'task.status': TaskStatusEvent;
  /** Events of a task's stream written without a change of the task (paced progress), published after they were persisted. */
  'task.events': { taskId: string; events: TaskStreamEvent[] };
  /** Whoever runs the task stops it (the record is already cancelled). */
  'task.cancel': { taskId: string };
  /** A user's answer to an agent's request for approval. */
  'agent.approval': { taskId: string; userId: string; approved: boolean };
  /** POST /v1/responses/cancel: whoever holds that user's agent stream stops it. */
  'agent.cancel': { requestId: string; ownerId: string };
  /** An API token was deleted: every instance forgets its cached lookup at once. */
  'token.revoked': { tokenId: string };
  /** A channel changed state (cooled down, recovered, disabled, enabled): every instance follows. */
  'channel.state': ChannelStateMessage;
  /** The runtime settings (admin API) reached a new version: every instance reloads them. */
  'config.changed': { version: number; origin: string };
}

/** Where a channel stands, as one instance announces it to the others. */
export interface ChannelStateMessage {
  /** The instance that announces it (it applied the change already). */
  origin: string;
  provider: string;
  name: string;
  state: 'healthy' | 'cooling_down' | 'disabled';
  /** While cooling down: when a probe may go (milliseconds since the epoch), and the cool-down's length. */
  coolingUntil: number;
  cooldownMs: number;
  disabledReason: string | null;
}
export type BusTopic = keyof BusTopics;

/** Publish/subscribe between the parts of one process, or of every instance with Redis. */
export interface EventBus {
  publish<T extends BusTopic>(topic: T, message: BusTopics[T]): Promise<void>;
  /** Answers the function that unsubscribes. */
  subscribe<T extends BusTopic>(topic: T, handler: (message: BusTopics[T]) => void): () => void;
  close(): Promise<void>;
}

/** The embedded default: one process, no network. */
export class InProcessEventBus implements EventBus {
  private readonly emitter = new EventEmitter();

  constructor() {
    // Every sync waiter and realtime gateway listens; the count is not a leak.
    this.emitter.setMaxListeners(0);
  }

  async publish<T extends BusTopic>(topic: T, message: BusTopics[T]): Promise<void> {
    this.emitter.emit(topic, message);
  }

  subscribe<T extends BusTopic>(topic: T, handler: (message: BusTopics[T]) => void): () => void {
    this.emitter.on(topic, handler);
    return () => this.emitter.off(topic, handler);
  }

  async close(): Promise<void> {
    this.emitter.removeAllListeners();
  }
}
