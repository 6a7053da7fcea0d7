import type { Db } from '../db.ts';

/** Key/value operator settings stored as JSON text. */
export class SettingsRepo {
  private readonly db: Db;

  constructor(db: Db) {
    this.db = db;
  }

  async get<T>(key: string): Promise<T | undefined> {
    const row = await this.db.kysely.selectFrom('settings').select('value').where('key', '=', key).executeTakeFirst();
    return row ? (JSON.parse(row.value) as T) : undefined;
  }

  async put(key: string, value: unknown): Promise<void> {
    const row = { key, value: JSON.stringify(value), updated_at: Date.now() };
    await this.db.kysely
      .insertInto('settings')
      .values(row)
      .onConflict((oc) => oc.column('key').doUpdateSet({ value: row.value, updated_at: row.updated_at }))
      .execute();
  }
}
