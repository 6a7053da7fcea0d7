import type { DbHandle } from '../db-handle.ts';
import type { DigitalHumanRow } from '../schema.ts';

/** SQL for digital-human resources. */
export class DigitalHumanRepo {
  private readonly db: DbHandle;

  constructor(db: DbHandle) {
    this.db = db;
  }

  /** The same queries through `db`, a transaction in progress. */
  in(db: DbHandle): DigitalHumanRepo {
    return new DigitalHumanRepo(db);
  }

  async insert(row: DigitalHumanRow): Promise<void> {
    await this.db.kysely.insertInto('digital_humans').values(row).execute();
  }

  /** The resource with this id when `ownerId` owns it; another user's resource is not found. */
  async findOwned(ownerId: string, id: string): Promise<DigitalHumanRow | undefined> {
    return this.db.kysely.selectFrom('digital_humans').selectAll().where('id', '=', id).where('owner_id', '=', ownerId).executeTakeFirst();
  }
}
