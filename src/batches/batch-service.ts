/**
 * OpenAI's Batch API: creating a batch over an uploaded input file, reading batches (with the
 * counts of their lines while they run), listing and cancelling them. The lines run in the
 * batch runner (batch-runner.ts) of whichever instance holds the batch's lease.
 */
import type { Principal } from '../auth/tokens.ts';
import { ApiError } from '../core/errors.ts';
import { newId } from '../core/ids.ts';
import type { BatchesRepo } from '../storage/repos/batches-repo.ts';
import type { BatchRow } from '../storage/schema.ts';
import { isBatchEndpoint } from './batch-input.ts';
import { batchObject, TERMINAL_BATCH, type BatchObject } from './batch-object.ts';
import type { OpenAiFileService } from './openai-files.ts';

export interface CreateBatchBody {
  input_file_id: string;
  endpoint: string;
  completion_window: string;
  metadata?: Record<string, string> | null;
}

export interface BatchList {
  object: 'list';
  /** The batches; with their owner's user_id in the admin's listing of every user's. */
  data: (BatchObject & { user_id?: string })[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

export interface BatchServiceOptions {
  /** How long the 24h completion window lasts (BATCH_COMPLETION_WINDOW_MS; shorter only in tests). */
  windowMs: number;
  /** Tells this instance's runner a batch is waiting, so it need not wait for its next poll. */
  wake(): void;
  now?: () => number;
}

const notFound = (id: string) => new ApiError('batch_not_found', `No batch found with id '${id}'.`, 'batch_id');

export class BatchService {
  private readonly repo: BatchesRepo;
  private readonly files: OpenAiFileService;
  private readonly opts: BatchServiceOptions;

  constructor(
    repo: BatchesRepo,
    files: OpenAiFileService,
    opts: BatchServiceOptions,
  ) {
    this.repo = repo;
    this.files = files;
    this.opts = opts;
  }

  private now(): number {
    return (this.opts.now ?? Date.now)();
  }

  async create(principal: Principal, body: CreateBatchBody): Promise<BatchObject> {
    if (!isBatchEndpoint(body.endpoint)) {
      throw new ApiError('invalid_parameter', 'endpoint must be one of /v1/chat/completions, /v1/embeddings, /v1/responses, /v1/images/generations', 'endpoint');
    }
    const input = await this.files.find(principal.userId, body.input_file_id).catch((err: unknown) => {
      throw err instanceof ApiError && err.code === 'file_not_found' ? new ApiError('file_not_found', err.message, 'input_file_id') : err;
    });
    if (input.purpose !== 'batch') throw new ApiError('invalid_parameter', `file ${input.id} has purpose ${input.purpose}; a batch reads a file of purpose batch`, 'input_file_id');
    const now = this.now();
    const row: BatchRow = {
      id: newId('batch'),
      user_id: principal.userId,
      token_id: principal.isAdmin ? null : principal.tokenId,
      endpoint: body.endpoint,
      input_file_id: input.id,
      completion_window: body.completion_window,
      metadata: body.metadata ? JSON.stringify(body.metadata) : null,
      status: 'validating',
      errors: null,
      output_file_id: null,
      error_file_id: null,
      request_total: 0,
      request_completed: 0,
      request_failed: 0,
      created_at: now,
      expires_at: now + this.opts.windowMs,
      in_progress_at: null,
      finalizing_at: null,
      completed_at: null,
      failed_at: null,
      expired_at: null,
      cancelling_at: null,
      cancelled_at: null,
      lease_owner: null,
      lease_until: null,
    };
    await this.repo.insert(row);
    this.opts.wake();
    return batchObject(row, undefined);
  }

  /** The object of a stored batch: the counts of its lines while it runs. */
  private async objectOf(row: BatchRow): Promise<BatchObject> {
    const ended = (TERMINAL_BATCH as readonly string[]).includes(row.status);
    return batchObject(row, ended || row.status === 'validating' ? undefined : await this.repo.countLines(row.id));
  }

  async retrieve(userId: string, id: string): Promise<BatchObject> {
    const row = await this.repo.find(userId, id);
    if (!row) throw notFound(id);
    return this.objectOf(row);
  }

  /** The user's batches (every user's without one: the console), newest first, after the batch `after`. */
  async list(userId: string | undefined, query: { after?: string; limit?: number }): Promise<BatchList> {
    const limit = query.limit ?? 20;
    let after: BatchRow | undefined;
    if (query.after !== undefined) {
      after = userId === undefined ? await this.repo.get(query.after) : await this.repo.find(userId, query.after);
      if (!after) throw new ApiError('batch_not_found', `No batch found with id '${query.after}'.`, 'after');
    }
    const rows = await this.repo.list(userId, limit + 1, after);
    const data = await Promise.all(rows.slice(0, limit).map(async (row) => (userId === undefined ? { ...(await this.objectOf(row)), user_id: row.user_id } : this.objectOf(row))));
    return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: rows.length > limit };
  }

  /**
   * Cancels a batch of the user: it goes to cancelling, its runner starts no more lines, lets the
   * running ones finish and then ends it as cancelled. A batch already cancelling or cancelled is
   * answered as it is; one that ended otherwise is 409.
   */
  async cancel(userId: string, id: string): Promise<BatchObject> {
    const row = await this.repo.cancel(userId, id, this.now());
    if (!row) throw notFound(id);
    if (row.status !== 'cancelling' && row.status !== 'cancelled') {
      throw new ApiError('batch_not_cancellable', `batch ${id} is ${row.status} and cannot be cancelled`, 'batch_id');
    }
    this.opts.wake();
    return this.objectOf(row);
  }
}
