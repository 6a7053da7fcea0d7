import type { DbHandle } from '../db-handle.ts';
import type { FileRow } from '../schema.ts';

/** SQL for temporary uploaded and generated files. */
export class FilesRepo {
  constructor(private readonly db: DbHandle) {}

  /** The same queries through `db`, a transaction in progress. */
  in(db: DbHandle): FilesRepo {
    return new FilesRepo(db);
  }

  async insert(row: FileRow): Promise<void> {
    await this.db.kysely.insertInto('files').values(row).execute();
  }

  /** The file, unless it has expired. */
  async findLive(id: string, now: number): Promise<FileRow | undefined> {
    return this.db.kysely
      .selectFrom('files')
      .selectAll()
      .where('id', '=', id)
      .where('expires_at', '>', now)
      .executeTakeFirst();
  }

  async listExpired(now: number, limit: number): Promise<FileRow[]> {
    return this.db.kysely
      .selectFrom('files')
      .selectAll()
      .where('expires_at', '<=', now)
      .orderBy('expires_at')
      .limit(limit)
      .execute();
  }

  async delete(id: string): Promise<void> {
    await this.db.kysely.deleteFrom('files').where('id', '=', id).execute();
  }
}
