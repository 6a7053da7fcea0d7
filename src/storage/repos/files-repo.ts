import type { DbHandle } from '../db-handle.ts';
import type { ExpressionBuilder } from 'kysely';
import { insertsInto } from './inserts-into.ts';
import type { Database, FileRow } from '../schema.ts';

/** A live asset record of the file's owner over the file's content, made by a user rather than as a task's output. */
function heldByAsset(eb: ExpressionBuilder<Database, 'files'>) {
  return eb
    .selectFrom('asset_refs')
    .select('asset_refs.id')
    .whereRef('asset_refs.asset_hash', '=', 'files.content_hash')
    .whereRef('asset_refs.owner_id', '=', 'files.user_id')
    .where('asset_refs.deleted_at', 'is', null)
    .where('asset_refs.job_id', 'is', null);
}


/** SQL for temporary uploaded and generated files. */
export class FilesRepo {
  private readonly db: DbHandle;

  constructor(db: DbHandle) {
    this.db = db;
  }

  /** The same queries through `db`, a transaction in progress. */
  in(db: DbHandle): FilesRepo {
    return new FilesRepo(db);
  }

  /** In a batched transaction the row waits for its end, to go in one insert with the other works' files. */
  async insert(row: FileRow): Promise<void> {
    if (this.db.tail) this.db.tail.append(insertFiles, [row]);
    else await this.db.kysely.insertInto('files').values(row).execute();
  }

  /**
   * The file, unless it has expired: a task output past its expiry is still live while its
   * content is also a live asset of its owner that is not a task's output record.
   */
  async findLive(id: string, now: number): Promise<FileRow | undefined> {
    return this.db.kysely
      .selectFrom('files')
      .selectAll()
      .where('id', '=', id)
      .where('expired_at', 'is', null)
      .where((eb) => eb.or([eb('expires_at', '>', now), eb.and([eb('task_id', 'is not', null), eb.exists(heldByAsset(eb))])]))
      .executeTakeFirst();
  }

  /** The task output file with that id, expired or not. */
  async findOutput(id: string): Promise<FileRow | undefined> {
    return this.db.kysely.selectFrom('files').selectAll().where('id', '=', id).where('task_id', 'is not', null).executeTakeFirst();
  }

  /** Up to `limit` expired files other than task outputs, soonest first (the partial index of 0031-task-events.ts). */
  async listExpiredUploads(now: number, limit: number): Promise<FileRow[]> {
    return this.db.kysely
      .selectFrom('files')
      .selectAll()
      .where('task_id', 'is', null)
      .where('expires_at', '<=', now)
      .orderBy('expires_at')
      .limit(limit)
      .execute();
  }

  /** Up to `limit` task outputs not yet retired whose sweep is due, soonest first (the partial index of 0031-task-events.ts). */
  async listDueOutputs(now: number, limit: number): Promise<FileRow[]> {
    return this.db.kysely
      .selectFrom('files')
      .selectAll()
      .where('task_id', 'is not', null)
      .where('expired_at', 'is', null)
      .where('sweep_at', '<=', now)
      .orderBy('sweep_at')
      .limit(limit)
      .execute();
  }

  /** Whether the output's content is also a live asset of its owner other than a task's output record. */
  async isHeldByAsset(id: string): Promise<boolean> {
    const row = await this.db.kysely.selectFrom('files').select('id').where('id', '=', id).where((eb) => eb.exists(heldByAsset(eb))).executeTakeFirst();
    return row !== undefined;
  }

  /** Moves an output's next sweep (an asset keeps it; its expiry stays as it was). */
  async sweepLater(id: string, at: number): Promise<void> {
    await this.db.kysely.updateTable('files').set({ sweep_at: at }).where('id', '=', id).where('expired_at', 'is', null).execute();
  }

  /**
   * Retires an expired output: its URL answers 410 from now on. Answers false when another
   * instance retired it first (the one that did deletes what it leaves behind).
   */
  async retire(id: string, now: number): Promise<boolean> {
    const res = await this.db.kysely.updateTable('files').set({ expired_at: now }).where('id', '=', id).where('expired_at', 'is', null).executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  async delete(id: string): Promise<void> {
    await this.db.kysely.deleteFrom('files').where('id', '=', id).execute();
  }
}

const insertFiles = insertsInto('files');
