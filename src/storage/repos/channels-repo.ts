import type { Db } from '../db.ts';
import type { ChannelDisableRow } from '../schema.ts';

/** Disabled channels (provider, name) with their reason. */
export class ChannelsRepo {
  private readonly db: Db;

  constructor(db: Db) {
    this.db = db;
  }

  async disabled(): Promise<ChannelDisableRow[]> {
    return this.db.kysely.selectFrom('channel_disables').selectAll().execute();
  }

  async disable(provider: string, name: string, reason: string): Promise<void> {
    const row = { provider, name, reason, disabled_at: Date.now() };
    await this.db.kysely
      .insertInto('channel_disables')
      .values(row)
      .onConflict((oc) => oc.columns(['provider', 'name']).doUpdateSet({ reason: row.reason, disabled_at: row.disabled_at }))
      .execute();
  }

  async enable(provider: string, name: string): Promise<void> {
    await this.db.kysely.deleteFrom('channel_disables').where('provider', '=', provider).where('name', '=', name).execute();
  }
}
