import type { Transaction } from 'kysely';
import type { Db } from '../db.ts';
import type { Database } from '../schema.ts';
import type { ConfigRecord, RecordKind } from '../../config/stored-config.ts';
import { insertAuditRows, type AuditRowInput } from './audit-repo.ts';

/** One change of the stored runtime settings: records written or removed, and its audit rows. */
export interface ConfigChange {
  put: ConfigRecord[];
  remove: { kind: RecordKind; key: string }[];
  audit: AuditRowInput[];
}

/** The providers, channels, models and MCP servers set through the admin API, and their version. */
export class ConfigRecordsRepo {
  private readonly db: Db;

  constructor(db: Db) {
    this.db = db;
  }

  /** Every record with the version they make up, read together. */
  async load(): Promise<{ version: number; records: ConfigRecord[] }> {
    return this.db.kysely.transaction().execute(async (trx) => {
      const version = await readVersion(trx);
      const rows = await trx.selectFrom('config_records').selectAll().orderBy('updated_at').orderBy('kind').orderBy('key').execute();
      return { version, records: rows.map((r) => ({ kind: r.kind as RecordKind, key: r.key, value: JSON.parse(r.value) as unknown })) };
    });
  }

  async version(): Promise<number> {
    return readVersion(this.db.kysely);
  }

  /** Writes the change and its audit rows and raises the version, all in one transaction; answers the new version. */
  async commit(change: ConfigChange): Promise<number> {
    return this.db.kysely.transaction().execute(async (trx) => {
      const now = Date.now();
      for (const record of change.put) {
        const row = { kind: record.kind, key: record.key, value: JSON.stringify(record.value), updated_at: now };
        await trx.insertInto('config_records').values(row)
          .onConflict((oc) => oc.columns(['kind', 'key']).doUpdateSet({ value: row.value, updated_at: row.updated_at }))
          .execute();
      }
      for (const { kind, key } of change.remove) await trx.deleteFrom('config_records').where('kind', '=', kind).where('key', '=', key).execute();
      await insertAuditRows(trx, change.audit);
      const updated = await trx.updateTable('config_version').set((eb) => ({ version: eb('version', '+', 1) })).where('id', '=', 1).returning('version').executeTakeFirstOrThrow();
      return Number(updated.version);
    });
  }

  /** Rewrites record values in place (secrets re-encrypted); the settings they make up are unchanged, so is the version. */
  async rewrite(records: ConfigRecord[]): Promise<void> {
    await this.db.kysely.transaction().execute(async (trx) => {
      for (const record of records) {
        await trx.updateTable('config_records').set({ value: JSON.stringify(record.value) }).where('kind', '=', record.kind).where('key', '=', record.key).execute();
      }
    });
  }
}

async function readVersion(db: Transaction<Database> | Db['kysely']): Promise<number> {
  const row = await db.selectFrom('config_version').select('version').where('id', '=', 1).executeTakeFirst();
  return Number(row?.version ?? 0);
}
