/**
 * Runs batches durably. An instance takes a batch's lease (a compare-and-set on the batch row, as
 * the task queue claims tasks), renews it while it works, and drives the batch from where its row
 * and lines say it is: validating (the input file read line by line into batch lines), in
 * progress (pending lines started, at most `concurrency` at once; each marked running before it
 * is sent and done with its output line after), then its end (output and error files assembled
 * from the stored lines). A line found running when an instance takes a batch over was running
 * at a crash: its request may have reached the upstream, so it is not sent again but goes to the
 * error file as `interrupted`.
 */
import readline from 'node:readline';
import { Readable } from 'node:stream';
import type { Logger } from 'pino';
import type { Principal } from '../auth/tokens.ts';
import { newId } from '../core/ids.ts';
import type { BatchesRepo } from '../storage/repos/batches-repo.ts';
import type { BatchLineRow, BatchRow, OpenAiFileRow } from '../storage/schema.ts';
import { parseLine, type BatchEndpoint, type BatchValidationError } from './batch-input.ts';
import { errorLine, outputLine } from './batch-object.ts';
import type { OpenAiFileService } from './openai-files.ts';

/** One line's request, as the executor runs it through the services of its endpoint. */
export interface BatchLineCall {
  batchId: string;
  endpoint: BatchEndpoint;
  body: Record<string, unknown>;
  /** The batch's creator, whose limits the line counts against. */
  principal: Principal;
  /** The line's request id: its output line's id and request_id, and its ledger row's id. */
  requestId: string;
  signal: AbortSignal;
}

/** The answer a line's request got, as the direct call would have answered it. */
export interface BatchLineResponse {
  status_code: number;
  body: unknown;
}

export type BatchLineExecutor = (call: BatchLineCall) => Promise<BatchLineResponse>;

export interface BatchRunnerOptions {
  repo: BatchesRepo;
  files: OpenAiFileService;
  execute: BatchLineExecutor;
  /** This process, as the holder of batch leases. */
  instanceId: string;
  /** Lines of one batch running at once (BATCH_CONCURRENCY). */
  concurrency: number;
  /** A lease lasts this long unless renewed; a dead holder's batch is taken over after it. */
  leaseMs: number;
  /** How often the leases held are renewed: a beat of this instance, for each of its batches. */
  renewMs: number;
  /** No other process uses the store (embedded SQLite): leases found at start are an earlier life's. */
  sole: boolean;
  logger: Logger;
  /** How often an idle runner looks for batches (created elsewhere, or left by a dead instance). */
  pollMs?: number;
  now?: () => number;
}

/** Batches one instance drives at once. */
const MAX_BATCHES = 4;
/** Lines read or written per statement. */
const PAGE = 500;
/** How often a batch whose lines are all running looks at its window's end and the abort of its lease. */
const TICK_MS = 250;
/** How long a stopping instance lets running lines finish before it aborts them. */
const STOP_GRACE_MS = 10_000;

type Stop = 'drained' | 'cancelling' | 'expired' | 'lost' | 'stopping';

interface HeldBatch {
  controller: AbortController;
  done: Promise<void>;
}

function principalOf(batch: BatchRow): Principal {
  return { userId: batch.user_id, tokenId: batch.token_id ?? 'admin', isAdmin: batch.token_id === null };
}

export class BatchRunner {
  private readonly held = new Map<string, HeldBatch>();
  private stopped = true;
  private stopping = false;
  private polling = false;
  private pollAgain = false;
  private started: Promise<void> = Promise.resolve();
  private pollTimer: NodeJS.Timeout | undefined;
  private renewTimer: NodeJS.Timeout | undefined;

  private readonly opts: BatchRunnerOptions;

  constructor(opts: BatchRunnerOptions) {
    this.opts = opts;
  }

  private now(): number {
    return (this.opts.now ?? Date.now)();
  }

  start(): void {
    this.stopped = false;
    if (this.opts.sole) {
      this.started = this.opts.repo.releaseAllLeases().then(
        (n) => void (n > 0 && this.opts.logger.info({ batches: n }, 'took back the batches of the previous run')),
        (err: unknown) => this.opts.logger.error({ err }, 'taking back the batches of the previous run failed'),
      );
    }
    this.pollTimer = setInterval(() => this.kick(), this.opts.pollMs ?? 500);
    this.renewTimer = setInterval(() => void this.renew(), this.opts.renewMs);
    this.kick();
  }

  /** Stops taking batches; running lines get a grace period to finish, then the leases are given back. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.stopping = true;
    clearInterval(this.pollTimer);
    const grace = setTimeout(() => {
      for (const batch of this.held.values()) batch.controller.abort(new Error('the server is shutting down'));
    }, STOP_GRACE_MS);
    await Promise.allSettled([...this.held.values()].map((b) => b.done));
    clearTimeout(grace);
    clearInterval(this.renewTimer);
  }

  /** Looks for batches to take now. */
  kick(): void {
    if (this.stopped) return;
    if (this.polling) {
      this.pollAgain = true;
      return;
    }
    this.polling = true;
    void (async () => {
      try {
        await this.started;
        do {
          this.pollAgain = false;
          while (!this.stopped && this.held.size < MAX_BATCHES) {
            const now = this.now();
            const row = await this.opts.repo.claim(this.opts.instanceId, now, now + this.opts.leaseMs, [...this.held.keys()]);
            if (!row) break;
            this.drive(row);
          }
        } while (this.pollAgain && !this.stopped);
      } catch (err) {
        this.opts.logger.error({ err }, 'claiming batches failed');
      } finally {
        this.polling = false;
      }
    })();
  }

  private drive(row: BatchRow): void {
    const controller = new AbortController();
    const log = this.opts.logger.child({ batchId: row.id });
    const done = this.run(row, controller.signal, log)
      .catch((err: unknown) => log.error({ err }, 'running a batch failed; retried'))
      .finally(async () => {
        this.held.delete(row.id);
        await this.opts.repo.release(this.opts.instanceId, row.id).catch((err: unknown) => log.warn({ err }, 'releasing a batch failed'));
        this.kick();
      });
    this.held.set(row.id, { controller, done });
  }

  private async renew(): Promise<void> {
    for (const [id, batch] of this.held) {
      try {
        if (!(await this.opts.repo.renew(this.opts.instanceId, id, this.now() + this.opts.leaseMs))) batch.controller.abort(new Error('another instance took the batch over'));
      } catch (err) {
        this.opts.logger.warn({ err, batchId: id }, 'renewing a batch lease failed');
      }
    }
  }

  private async run(claimed: BatchRow, signal: AbortSignal, log: Logger): Promise<void> {
    let batch = claimed;
    if (batch.status === 'validating') {
      const next = await this.validate(batch, signal, log);
      if (!next) return;
      batch = next;
    }
    if (batch.status === 'finalizing') return this.end(batch, 'completed', ['finalizing']);
    await this.settleRunning(batch, 'interrupted', 'the line was running when its instance stopped; it was not sent again');
    const stop = await this.runLines(batch, signal);
    if (stop === 'lost' || stop === 'stopping') return;
    // A line still running ended when its runner was aborted: it too was not answered.
    await this.settleRunning(batch, 'interrupted', 'the line was running when the batch stopped');
    if (stop === 'cancelling') return this.end(batch, 'cancelled', ['cancelling']);
    if (stop === 'expired') {
      await this.settle(batch, 'pending', 'batch_expired', 'This request could not be executed before the completion window expired.');
      return this.end(batch, 'expired', ['in_progress']);
    }
    if (await this.opts.repo.update(this.opts.instanceId, batch.id, ['in_progress'], { status: 'finalizing', finalizing_at: this.now() })) return this.end(batch, 'completed', ['finalizing']);
    // Cancelled after its last line started: its lines are all done.
    if ((await this.opts.repo.get(batch.id))?.status === 'cancelling') await this.end(batch, 'cancelled', ['cancelling']);
  }

  /**
   * Reads the input file line by line into the batch's lines (a malformed line done at once, for
   * the error file), then moves the batch on: in progress, or failed with the validation errors.
   * Answers the batch to go on with, or undefined when it ended.
   */
  private async validate(batch: BatchRow, signal: AbortSignal, log: Logger): Promise<BatchRow | undefined> {
    const { repo } = this.opts;
    await repo.deleteLines(batch.id);
    let error: BatchValidationError | undefined;
    let total = 0;
    let objects = 0;
    const input = await this.opts.files.find(batch.user_id, batch.input_file_id).catch(() => undefined);
    const stream = input && (await this.opts.files.open(input));
    if (!stream) error = { code: 'input_file_unreadable', message: `the input file ${batch.input_file_id} is gone`, param: 'input_file_id', line: null };
    else {
      const seen = new Set<string>();
      let rows: BatchLineRow[] = [];
      const lines = readline.createInterface({ input: stream, crlfDelay: Infinity });
      let lineNo = 0;
      try {
        for await (const text of lines) {
          signal.throwIfAborted();
          lineNo += 1;
          const parsed = parseLine(text, lineNo, batch.endpoint as BatchEndpoint);
          if (parsed.kind === 'blank') continue;
          if (parsed.kind === 'batch_error') {
            error = parsed.error;
            break;
          }
          const customId = parsed.customId;
          if (customId !== null) {
            if (seen.has(customId)) {
              error = { code: 'duplicate_custom_id', message: `line ${lineNo}: custom_id ${JSON.stringify(customId)} is used by an earlier line; each line needs its own`, param: 'custom_id', line: lineNo };
              break;
            }
            seen.add(customId);
          }
          total += 1;
          if (parsed.kind === 'request') {
            objects += 1;
            rows.push({ batch_id: batch.id, line_no: lineNo, custom_id: customId, body: JSON.stringify(parsed.body), state: 'pending', result: null, failed: 0 });
          } else {
            if (parsed.code === 'invalid_request') objects += 1;
            rows.push({ batch_id: batch.id, line_no: lineNo, custom_id: customId, body: null, state: 'done', result: errorLine(newId('batch_req'), customId, parsed.code, parsed.message), failed: 1 });
          }
          if (rows.length >= PAGE) {
            await repo.insertLines(rows);
            rows = [];
          }
        }
        if (!error) await repo.insertLines(rows);
      } finally {
        lines.close();
        stream.destroy();
      }
      if (!error && objects === 0) error = { code: 'empty_file', message: 'no line of the input file is a JSON object', param: null, line: null };
    }
    if (error) {
      log.info({ code: error.code }, 'batch failed validation');
      await repo.deleteLines(batch.id);
      await repo.end(this.opts.instanceId, batch.id, ['validating', 'cancelling'], { patch: { status: 'failed', failed_at: this.now(), errors: JSON.stringify([error]) }, files: [] });
      return undefined;
    }
    const now = this.now();
    if (await repo.update(this.opts.instanceId, batch.id, ['validating'], { status: 'in_progress', in_progress_at: now, request_total: total })) {
      return { ...batch, status: 'in_progress', in_progress_at: now, request_total: total };
    }
    // Cancelled while it was read: no line is started.
    await repo.update(this.opts.instanceId, batch.id, ['cancelling'], { request_total: total });
    const current = await repo.get(batch.id);
    return current?.status === 'cancelling' ? current : undefined;
  }

  /** Gives every line of the batch still in `state` an error line with `code` (they got no response). */
  private async settle(batch: BatchRow, state: 'pending' | 'running', code: string, message: string): Promise<void> {
    for (;;) {
      const lines = await this.opts.repo.linesIn(batch.id, state, 0, PAGE);
      if (lines.length === 0) return;
      await this.opts.repo.finishLines(batch.id, state, lines.map((line) => ({ lineNo: line.line_no, result: errorLine(newId('batch_req'), line.custom_id, code, message), failed: true })));
    }
  }

  private settleRunning(batch: BatchRow, code: string, message: string): Promise<void> {
    return this.settle(batch, 'running', code, message);
  }

  /** Starts the pending lines, `concurrency` at a time, until none is left, the batch is cancelled or expires, or the lease is lost. */
  private async runLines(batch: BatchRow, signal: AbortSignal): Promise<Stop> {
    const { repo, concurrency } = this.opts;
    const running = new Set<Promise<void>>();
    const results = new LineResults(repo, batch.id, (err) => this.opts.logger.error({ err, batchId: batch.id }, 'writing the results of batch lines failed; those lines count as interrupted'));
    let stop: Stop | undefined;
    // Set when a line ends or a tick passes; the loop waits only while it is not.
    let woken = false;
    let waker: (() => void) | undefined;
    const wake = () => {
      woken = true;
      waker?.();
    };
    const tick = setInterval(wake, TICK_MS);
    try {
      for (;;) {
        if (signal.aborted) stop = 'lost';
        else if (this.stopping) stop = 'stopping';
        else if (this.now() >= Number(batch.expires_at)) stop = 'expired';
        if (stop) break;
        const free = concurrency - running.size;
        if (free > 0) {
          const { status, lines } = await repo.startLines(this.opts.instanceId, batch.id, free);
          if (status === undefined) stop = 'lost';
          else if (status === 'cancelling') stop = 'cancelling';
          if (stop) break;
          for (const line of lines) {
            const job: Promise<void> = this.runLine(batch, line, signal, results).finally(() => {
              running.delete(job);
              wake();
            });
            running.add(job);
          }
          if (lines.length === 0 && running.size === 0) {
            stop = 'drained';
            break;
          }
        }
        // Until a line ends, or the next tick.
        if (!woken) await new Promise<void>((resolve) => (waker = resolve));
        woken = false;
        waker = undefined;
      }
      await Promise.allSettled([...running]);
      return stop;
    } finally {
      clearInterval(tick);
      await results.flush();
    }
  }

  private async runLine(batch: BatchRow, line: BatchLineRow, signal: AbortSignal, results: LineResults): Promise<void> {
    const requestId = newId('batch_req');
    let result: string;
    let failed: boolean;
    try {
      const response = await this.opts.execute({
        batchId: batch.id,
        endpoint: batch.endpoint as BatchEndpoint,
        body: JSON.parse(line.body ?? '{}') as Record<string, unknown>,
        principal: principalOf(batch),
        requestId,
        signal,
      });
      // Aborted (lease lost, shutdown): the line stays running, and is settled as interrupted.
      if (signal.aborted) return;
      result = outputLine(requestId, line.custom_id ?? '', response);
      failed = response.status_code >= 400;
    } catch (err) {
      if (signal.aborted) return;
      this.opts.logger.error({ err, batchId: batch.id, line: line.line_no }, 'a batch line failed');
      result = errorLine(requestId, line.custom_id, 'internal_error', 'the line could not be run');
      failed = true;
    }
    results.add({ lineNo: line.line_no, result, failed });
  }

  /**
   * Ends the batch: its output and error files streamed from the stored lines (first lines
   * first), registered with the terminal status and counts in one transaction. The files' ids
   * follow from the batch's, so an end written again after a crash replaces the same bytes.
   */
  private async end(batch: BatchRow, status: 'completed' | 'cancelled' | 'expired', from: readonly string[]): Promise<void> {
    const { repo } = this.opts;
    const counts = await repo.countLines(batch.id);
    const files: OpenAiFileRow[] = [];
    const base = batch.id.replace(/^batch_/, '');
    const fileFor = async (failed: boolean): Promise<string | null> => {
      if ((failed ? counts.failed : counts.done) === 0) return null;
      const written = await this.opts.files.write(Readable.from(this.resultLines(batch.id, failed)), `file_${base}_${failed ? 'errors' : 'output'}`);
      files.push(this.opts.files.rowOf(batch.user_id, written, `${batch.id}_${failed ? 'error' : 'output'}.jsonl`, 'batch_output', this.now()));
      return written.id;
    };
    const outputFileId = await fileFor(false);
    const errorFileId = await fileFor(true);
    const now = this.now();
    await repo.end(this.opts.instanceId, batch.id, from, {
      patch: { status, [`${status}_at`]: now, output_file_id: outputFileId, error_file_id: errorFileId, request_completed: counts.done, request_failed: counts.failed },
      files,
    });
  }

  private async *resultLines(batchId: string, failed: boolean): AsyncGenerator<string> {
    let after = 0;
    for (;;) {
      const page = await this.opts.repo.results(batchId, failed, after, PAGE);
      if (page.length === 0) return;
      yield page.map((r) => `${r.result}\n`).join('');
      after = page.at(-1)!.line_no;
    }
  }
}

/**
 * Results of lines, written together: those ending in one turn of the event loop go in one
 * transaction. A result not yet written at a crash leaves its line running, so it is reported
 * as interrupted, never sent again.
 */
class LineResults {
  private pending: { lineNo: number; result: string; failed: boolean }[] = [];
  private writing: Promise<void> = Promise.resolve();
  private scheduled = false;

  private readonly repo: BatchesRepo;
  private readonly batchId: string;
  private readonly failed: (err: unknown) => void;

  constructor(
    repo: BatchesRepo,
    batchId: string,
    failed: (err: unknown) => void,
  ) {
    this.repo = repo;
    this.batchId = batchId;
    this.failed = failed;
  }

  add(line: { lineNo: number; result: string; failed: boolean }): void {
    this.pending.push(line);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  /** Writes the results waiting now, after the writes before; settles once they are stored (or failed). */
  flush(): Promise<void> {
    const lines = this.pending;
    this.pending = [];
    this.writing = this.writing.then(() => this.repo.finishLines(this.batchId, 'running', lines)).catch(this.failed);
    return this.writing;
  }
}
