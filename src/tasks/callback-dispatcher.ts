import type { Logger } from 'pino';
import { ApiError } from '../core/errors.ts';
import { newId } from '../core/ids.ts';
import type { CallbackConfig, RuntimeConfig } from '../config/runtime-config.ts';
import type { CallbacksRepo, DeliveryOutcome, RecordedAttempt } from '../storage/repos/callbacks-repo.ts';
import type { CallbackAttemptRow, CallbackDeliveryRow } from '../storage/schema.ts';
import { CallbackSender, type CallbackResponse } from './callback-sender.ts';
import type { EventBus } from '../storage/event-bus.ts';
import { OutagePace, retryWhileDatabaseUnavailable } from '../storage/database-unavailable.ts';

export interface CallbackDispatcherOptions {
  logger: Logger;
  /** Deliveries sent at once, across tasks; a task never has more than one in flight. */
  concurrency?: number;
  /** How often the outbox is read without a wake-up: retries that fell due, deliveries other instances wrote. */
  pollMs?: number;
  /** How long ended deliveries (and their tries) stay listed in GET /admin/callbacks. */
  historyMs?: number;
}

export const CALLBACK_DISPATCHER_DEFAULTS = { concurrency: 64, pollMs: 500, historyMs: 7 * 24 * 60 * 60 * 1000 };
/** Ended deliveries are looked for at most this often. */
const PRUNE_INTERVAL_MS = 60 * 60 * 1000;

/**
 * Task events wake the dispatcher this long after the first of them, so a burst of status
 * changes is claimed in one query rather than one query each.
 */
const EVENT_WAKE_DELAY_MS = 5;

/** A lease outlives the send it covers by this much, so a slow database write does not let another dispatcher in. */
const LEASE_MARGIN_MS = 10_000;

/** One delivery and its tries, as the admin API shows them. */
export interface DeliveryHistory {
  delivery: CallbackDeliveryRow;
  attempts: CallbackAttemptRow[];
}

/**
 * Sends the callback outbox: every task status update the task service stored
 * is POSTed to the callback address, each task's updates in order and one at a time, many
 * tasks in parallel. Wakes on task events and on a short poll; all state is in the database,
 * so what was due when a process stopped goes out from the next one.
 */
export class CallbackDispatcher {
  private readonly concurrency: number;
  private readonly minClaim: number;
  private readonly pollMs: number;
  private readonly sender: CallbackSender;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly retryTimers = new Set<NodeJS.Timeout>();
  private toRecord: RecordedAttempt[] = [];
  private recording: Promise<void> | undefined;
  private pumping: Promise<void> | undefined;
  private pumpAgain = false;
  private started = false;
  private stopped = false;
  /** Ends the waits for the database of tries sent but not yet recorded, when the dispatcher stops. */
  private readonly stopping = new AbortController();
  private readonly claimPace = new OutagePace();
  private pollTimer: NodeJS.Timeout | undefined;
  private pruneTimer: NodeJS.Timeout | undefined;
  private eventWakeTimer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;

  private readonly repo: CallbacksRepo;
  private readonly bus: EventBus;
  private readonly runtimeConfig: RuntimeConfig;
  private readonly opts: CallbackDispatcherOptions;

  constructor(
    repo: CallbacksRepo,
    bus: EventBus,
    runtimeConfig: RuntimeConfig,
    opts: CallbackDispatcherOptions,
  ) {
    this.repo = repo;
    this.bus = bus;
    this.runtimeConfig = runtimeConfig;
    this.opts = opts;
    this.concurrency = opts.concurrency ?? CALLBACK_DISPATCHER_DEFAULTS.concurrency;
    this.pollMs = opts.pollMs ?? CALLBACK_DISPATCHER_DEFAULTS.pollMs;
    // Under load a claim waits for a few free slots: one query then feeds several sends.
    this.minClaim = Math.max(1, Math.floor(this.concurrency / 8));
    this.sender = new CallbackSender(this.concurrency);
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    // A change announced without a callback address wrote no delivery: nothing to send.
    this.unsubscribe = this.bus.subscribe('task.status', (event) => {
      if (event.record.callback_url) this.wakeAfterEvent();
    });
    this.pollTimer = setInterval(() => this.wake(), this.pollMs);
    this.pollTimer.unref();
    this.wake();
    const historyMs = this.opts.historyMs ?? CALLBACK_DISPATCHER_DEFAULTS.historyMs;
    this.pruneTimer = setInterval(() => void this.prune(historyMs), Math.min(PRUNE_INTERVAL_MS, Math.max(this.pollMs, historyMs)));
    this.pruneTimer.unref();
  }

  /** Forgets deliveries that ended longer than the history time ago, so the outbox does not grow without end. */
  private async prune(historyMs: number): Promise<void> {
    try {
      const pruned = await this.repo.pruneEnded(Date.now() - historyMs);
      if (pruned > 0) this.opts.logger.debug({ pruned }, 'pruned ended callback deliveries');
    } catch (err) {
      this.opts.logger.warn({ err }, 'pruning ended callback deliveries failed');
    }
  }

  /** Stops taking deliveries and waits for the sends in flight (each bounded by the callback timeout) to be recorded. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.stopping.abort();
    this.unsubscribe?.();
    clearInterval(this.pollTimer);
    clearInterval(this.pruneTimer);
    clearTimeout(this.eventWakeTimer);
    for (const timer of this.retryTimers) clearTimeout(timer);
    this.retryTimers.clear();
    await this.pumping;
    while (this.inFlight.size > 0 || this.recording) {
      await Promise.all([...this.inFlight]);
      await this.recording;
    }
    this.sender.close();
  }

  /** A task's deliveries in status order with their tries; undefined for an unknown task. */
  async history(taskId: string): Promise<DeliveryHistory[] | undefined> {
    // Deliveries first, their tries after: a try and its delivery's new state commit together, so a
    // delivery read as settled has its try in the second read (read side by side, on two
    // PostgreSQL connections, the tries could be read before that commit and the state after it).
    const deliveries = await this.repo.deliveriesOf(taskId);
    const attempts = await this.repo.attemptsOf(taskId);
    if (deliveries.length === 0 && !(await this.repo.taskExists(taskId))) return undefined;
    return deliveries.map((delivery) => ({ delivery, attempts: attempts.filter((a) => a.delivery_id === delivery.id) }));
  }

  /**
   * Sends a delivery again now, whatever its retries left: a failed one gets one more try.
   * 404 delivery_not_found; 409 delivery_not_retryable when it was delivered or is being sent.
   */
  async retryNow(deliveryId: string): Promise<DeliveryHistory> {
    const existing = await this.repo.deliveryById(deliveryId);
    if (!existing) throw new ApiError('delivery_not_found', `no callback delivery ${deliveryId}`, 'deliveryId');
    const due = await this.repo.makeDueNow(deliveryId, Date.now());
    if (!due) throw new ApiError('delivery_not_retryable', `callback delivery ${deliveryId} was delivered or is being sent`, 'deliveryId');
    this.wake();
    const attempts = (await this.repo.attemptsOf(due.task_id)).filter((a) => a.delivery_id === deliveryId);
    return { delivery: due, attempts };
  }

  /**
   * POSTs a sample task status record to the configured callback address, signed like every
   * delivery, so an operator can check a receiver; nothing is stored. 400 callback_url_not_set.
   */
  async sendTest(): Promise<CallbackResponse & { url: string; id: string }> {
    const config = await this.runtimeConfig.callback();
    if (!config.callback_url) throw new ApiError('callback_url_not_set', 'set callback_url first (PUT /admin/config)', 'callback_url');
    const id = newId('test');
    const now = Date.now();
    const body = JSON.stringify({
      test: true,
      queue_status: { task_id: id, status: 'success', progress: 100, message: 'a test delivery from the console', created_at: new Date(now).toISOString() },
    });
    const response = await this.sender.send({ url: config.callback_url, id, body, secret: config.callback_secret, timeoutMs: config.callback_timeout_ms, timestamp: Math.floor(now / 1000) });
    return { ...response, url: config.callback_url, id };
  }

  private wakeAfterEvent(): void {
    this.eventWakeTimer ??= setTimeout(() => {
      this.eventWakeTimer = undefined;
      this.wake();
    }, EVENT_WAKE_DELAY_MS);
  }

  /** Claims and sends what is due; calls made while a claim runs fold into one more round. */
  private wake(): void {
    if (this.stopped) return;
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    if (this.claimPace.holding()) return;
    this.pumping = this.pump().finally(() => {
      this.pumping = undefined;
      // A wake-up that came after the last round's check still gets its round.
      if (this.pumpAgain) this.wake();
    });
  }

  private async pump(): Promise<void> {
    try {
      do {
        this.pumpAgain = false;
        const free = this.concurrency - this.inFlight.size;
        // Each finished send wakes the dispatcher again.
        if (free <= 0 || (free < this.minClaim && this.inFlight.size > 0)) return;
        const config = await this.runtimeConfig.callback();
        const now = Date.now();
        const claimed = await this.repo.claimDue(now, now + config.callback_timeout_ms + LEASE_MARGIN_MS, free);
        this.claimPace.succeeded();
        // Claimed even while stopping: stop() waits for these sends too.
        for (const delivery of claimed) this.dispatch(delivery, config);
        if (claimed.length === free) this.pumpAgain = true;
      } while (this.pumpAgain && !this.stopped);
    } catch (err) {
      // The poll tries again (not at once: the database may be down); the outbox loses nothing.
      this.pumpAgain = false;
      if (this.claimPace.failed(err)) this.opts.logger.error({ err }, 'claiming due callback deliveries failed');
    }
  }

  private dispatch(delivery: CallbackDeliveryRow, config: CallbackConfig): void {
    const sending = this.deliver(delivery, config).then(
      (recorded) => this.record(recorded),
      (err: unknown) => this.opts.logger.error({ err, taskId: delivery.task_id, deliveryId: delivery.id }, 'sending a callback failed'),
    );
    this.inFlight.add(sending);
    void sending.finally(() => this.inFlight.delete(sending));
  }

  private async deliver(delivery: CallbackDeliveryRow, config: CallbackConfig): Promise<RecordedAttempt> {
    const attemptNumber = delivery.attempts + 1;
    const at = Date.now();
    const response = await this.sender.send({
      url: delivery.url,
      id: delivery.id,
      body: delivery.body,
      secret: config.callback_secret,
      timeoutMs: config.callback_timeout_ms,
      timestamp: Math.floor(at / 1000),
    });
    const now = Date.now();
    const outcome = outcomeOf(response, attemptNumber, config.callback_retry_delays_ms, now);
    const log = this.opts.logger.child({ taskId: delivery.task_id, deliveryId: delivery.id, attempt: attemptNumber });
    if (outcome.state === 'failed') log.warn({ response }, 'callback not delivered; retries used up');
    // Each try is in the admin API's history; the log keeps only the give-ups above debug.
    else if (outcome.state === 'pending') log.debug({ response, retryAt: new Date(outcome.nextAttemptAt).toISOString() }, 'callback not delivered; will retry');
    else log.debug({ durationMs: response.durationMs }, 'callback delivered');
    return {
      attempt: {
        id: newId('cba'),
        delivery_id: delivery.id,
        task_id: delivery.task_id,
        attempt: attemptNumber,
        at,
        http_status: 'status' in response ? response.status : null,
        error: 'error' in response ? response.error : null,
        duration_ms: response.durationMs,
      },
      outcome,
      heldLease: delivery.lease_until!,
      now,
    };
  }

  /** Queues a finished try; tries finishing in the same turn of the event loop are written in one transaction. */
  private record(recorded: RecordedAttempt): void {
    this.toRecord.push(recorded);
    this.recording ??= new Promise((resolve) => setImmediate(resolve)).then(() => this.writeRecorded());
  }

  private async writeRecorded(): Promise<void> {
    while (this.toRecord.length > 0) {
      const batch = this.toRecord;
      this.toRecord = [];
      try {
        // Sent but not recorded, a delivered update would go out again once its lease ran out:
        // through a database outage the record waits for the database instead (the lease holds).
        await retryWhileDatabaseUnavailable(() => this.repo.recordAttempts(batch), {
          signal: this.stopping.signal,
          onRetry: (err, attempt) => {
            if (attempt === 1) this.opts.logger.warn({ err, count: batch.length }, 'the database is unavailable; callback attempts wait to be recorded');
          },
        });
        for (const { outcome } of batch) if (outcome.state === 'pending') this.wakeAt(outcome.nextAttemptAt);
      } catch (err) {
        // Unrecorded tries are made again once their leases run out.
        this.opts.logger.error({ err, count: batch.length }, 'recording callback attempts failed');
      }
      // A recorded outcome frees the task's next delivery.
      this.wake();
    }
    this.recording = undefined;
  }

  /** Retries are due at their own time, sooner than the next poll. */
  private wakeAt(time: number): void {
    if (this.stopped) return;
    const timer = setTimeout(() => {
      this.retryTimers.delete(timer);
      this.wake();
    }, Math.max(0, time - Date.now()));
    timer.unref();
    this.retryTimers.add(timer);
  }
}

/** Only 200 counts as delivered; the n-th failed try waits retryDelays[n-1], past the last it gives up. */
function outcomeOf(response: CallbackResponse, attemptNumber: number, retryDelays: readonly number[], now: number): DeliveryOutcome {
  if ('status' in response && response.status === 200) return { state: 'delivered' };
  const delay = retryDelays[attemptNumber - 1];
  return delay === undefined ? { state: 'failed' } : { state: 'pending', nextAttemptAt: now + delay };
}
