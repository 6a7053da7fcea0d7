import type { Kysely } from 'kysely';

/**
 * Teams and their members (with a role each), the team a token works for, and the team a task
 * or a ledger row was made for: team limits and team usage count them.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('teams')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    // JSON of the team's limits (limits/limits.ts); null when it has none.
    .addColumn('limits', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('team_members')
    .addColumn('team_id', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull())
    // admin | member | viewer
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('team_members_pk', ['team_id', 'user_id'])
    .execute();
  // A signed-in user's teams, read on every console request.
  await db.schema.createIndex('team_members_user').on('team_members').columns(['user_id']).execute();

  await db.schema.alterTable('api_tokens').addColumn('team_id', 'text').execute();
  await db.schema.createIndex('api_tokens_team').on('api_tokens').columns(['team_id']).execute();
  await db.schema.alterTable('tasks').addColumn('team_id', 'text').execute();
  await db.schema.createIndex('tasks_team').on('tasks').columns(['team_id', 'created_at', 'id']).execute();
  await db.schema.alterTable('usage_ledger').addColumn('team_id', 'text').execute();
  // Team usage and a team's spending read the rows of one team over a time range.
  await db.schema.createIndex('usage_ledger_team').on('usage_ledger').columns(['team_id', 'created_at', 'id']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('usage_ledger_team').execute();
  await db.schema.alterTable('usage_ledger').dropColumn('team_id').execute();
  await db.schema.dropIndex('tasks_team').execute();
  await db.schema.alterTable('tasks').dropColumn('team_id').execute();
  await db.schema.dropIndex('api_tokens_team').execute();
  await db.schema.alterTable('api_tokens').dropColumn('team_id').execute();
  await db.schema.dropTable('team_members').execute();
  await db.schema.dropTable('teams').execute();
}
