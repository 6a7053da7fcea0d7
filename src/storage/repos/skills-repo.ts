import type { Db } from '../db.ts';
import type { SkillRow } from '../schema.ts';

/** SQL for personal skills: each owner sees only its own. */
export class SkillsRepo {
  private readonly db: Db;

  constructor(db: Db) {
    this.db = db;
  }

  async insert(row: SkillRow): Promise<void> {
    await this.db.kysely.insertInto('skills').values(row).execute();
  }

  /** The owner's skills, newest first. */
  async list(ownerId: string): Promise<SkillRow[]> {
    return this.db.kysely.selectFrom('skills').selectAll().where('owner_id', '=', ownerId).orderBy('created_at', 'desc').orderBy('id').execute();
  }

  /** The owner's skills among `ids` (unknown and other owners' ids are left out). */
  async findMany(ownerId: string, ids: readonly string[]): Promise<SkillRow[]> {
    if (ids.length === 0) return [];
    return this.db.kysely.selectFrom('skills').selectAll().where('owner_id', '=', ownerId).where('id', 'in', ids).execute();
  }

  /** Deletes the owner's skill; false when it has none of that id. */
  async delete(ownerId: string, id: string): Promise<boolean> {
    const result = await this.db.kysely.deleteFrom('skills').where('owner_id', '=', ownerId).where('id', '=', id).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }
}
