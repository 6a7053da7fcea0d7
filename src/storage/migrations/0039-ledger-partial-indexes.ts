import { sql, type Kysely } from 'kysely';

/** The ledger's indexes of columns that most rows leave null. */
const INDEXES = { batch_id: 'usage_ledger_batch', team_id: 'usage_ledger_team' } as const;

/**
 * The ledger's batch and team indexes hold only the rows that have a batch or a team: most calls
 * have neither, and each index a row goes into costs every call's insert (together a fifth of a
 * ledger row's write on SQLite). Their look-ups (batch_id = ?, team_id = ?) imply IS NOT NULL,
 * which SQLite and PostgreSQL both take as meeting the partial index's condition.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await recreate(db, true);
}

export async function down(db: Kysely<any>): Promise<void> {
  await recreate(db, false);
}

/** Makes each index again, of its column's non-null rows only when `partial`. */
async function recreate(db: Kysely<any>, partial: boolean): Promise<void> {
  for (const [column, name] of Object.entries(INDEXES)) {
    await db.schema.dropIndex(name).execute();
    const index = db.schema.createIndex(name).on('usage_ledger').columns([column, 'created_at', 'id']);
    await (partial ? index.where(sql.ref(column), 'is not', null) : index).execute();
  }
}
