import type { DbHandle } from '../db-handle.ts';
import type { OpenAiFileRow } from '../schema.ts';

/** SQL for the files of OpenAI's Files API (/openai/v1/files). */
export class OpenAiFilesRepo {
  private readonly db: DbHandle;

  constructor(db: DbHandle) {
    this.db = db;
  }

  /** The same queries through `db`, a transaction in progress. */
  in(db: DbHandle): OpenAiFilesRepo {
    return new OpenAiFilesRepo(db);
  }

  async insert(row: OpenAiFileRow): Promise<void> {
    await this.db.kysely.insertInto('openai_files').values(row).execute();
  }

  /** The user's file with that id; undefined for an unknown id or another user's. */
  async find(userId: string, id: string): Promise<OpenAiFileRow | undefined> {
    return this.db.kysely.selectFrom('openai_files').selectAll().where('id', '=', id).where('user_id', '=', userId).executeTakeFirst();
  }

  /** Any user's file (the admin's reads). */
  async get(id: string): Promise<OpenAiFileRow | undefined> {
    return this.db.kysely.selectFrom('openai_files').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** The user's files, newest first, after the file `after` (a cursor), of a purpose if given. */
  async list(userId: string, opts: { limit: number; after?: OpenAiFileRow; purpose?: string }): Promise<OpenAiFileRow[]> {
    let q = this.db.kysely.selectFrom('openai_files').selectAll().where('user_id', '=', userId);
    if (opts.purpose !== undefined) q = q.where('purpose', '=', opts.purpose);
    const after = opts.after;
    if (after) q = q.where((eb) => eb.or([eb('created_at', '<', after.created_at), eb.and([eb('created_at', '=', after.created_at), eb('id', '<', after.id)])]));
    return q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(opts.limit).execute();
  }

  /** Deletes the user's file; answers whether there was one. */
  async delete(userId: string, id: string): Promise<boolean> {
    const res = await this.db.kysely.deleteFrom('openai_files').where('id', '=', id).where('user_id', '=', userId).executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }
}
