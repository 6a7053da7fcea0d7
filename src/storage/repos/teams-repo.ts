import type { Db } from '../db.ts';
import type { TeamMemberRow, TeamRole, TeamRow } from '../schema.ts';

/** A user's place in a team, with the team's name. */
export interface Membership {
  team_id: string;
  name: string;
  role: TeamRole;
}

/** SQL for teams and their members. */
export class TeamsRepo {
  private readonly db: Db;

  constructor(db: Db) {
    this.db = db;
  }

  /** Inserts a team; answers false when its id is taken. */
  async insert(row: TeamRow): Promise<boolean> {
    const res = await this.db.kysely.insertInto('teams').values(row).onConflict((oc) => oc.column('id').doNothing()).executeTakeFirst();
    return Number(res.numInsertedOrUpdatedRows ?? 0) === 1;
  }

  find(id: string): Promise<TeamRow | undefined> {
    return this.db.kysely.selectFrom('teams').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** Every team, or only the given ones. */
  list(ids?: readonly string[]): Promise<TeamRow[]> {
    let q = this.db.kysely.selectFrom('teams').selectAll().orderBy('id');
    if (ids) {
      if (ids.length === 0) return Promise.resolve([]);
      q = q.where('id', 'in', [...ids]);
    }
    return q.execute();
  }

  /** Changes a team's name or limits; answers false when the team is unknown. */
  async update(id: string, fields: { name?: string; limits?: string | null }): Promise<boolean> {
    const res = await this.db.kysely.updateTable('teams').set(fields).where('id', '=', id).executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  /** Deletes a team and its members together; answers the ids of the tokens that worked for it, or undefined when unknown. */
  async delete(id: string): Promise<string[] | undefined> {
    return this.db.kysely.transaction().execute(async (trx) => {
      const res = await trx.deleteFrom('teams').where('id', '=', id).executeTakeFirst();
      if (Number(res.numDeletedRows) !== 1) return undefined;
      await trx.deleteFrom('team_members').where('team_id', '=', id).execute();
      return (await trx.selectFrom('api_tokens').select('id').where('team_id', '=', id).execute()).map((t) => t.id);
    });
  }

  members(teamId: string): Promise<TeamMemberRow[]> {
    return this.db.kysely.selectFrom('team_members').selectAll().where('team_id', '=', teamId).orderBy('user_id').execute();
  }

  /** Adds a member or changes its role, creating the user on first use. */
  async setMember(row: TeamMemberRow): Promise<void> {
    await this.db.kysely.transaction().execute(async (trx) => {
      await trx.insertInto('users').values({ id: row.user_id, created_at: row.created_at }).onConflict((oc) => oc.column('id').doNothing()).execute();
      await trx
        .insertInto('team_members')
        .values(row)
        .onConflict((oc) => oc.columns(['team_id', 'user_id']).doUpdateSet({ role: row.role }))
        .execute();
    });
  }

  /** Removes a member; answers the ids of its tokens that worked for the team, or undefined when it was no member. */
  async removeMember(teamId: string, userId: string): Promise<string[] | undefined> {
    return this.db.kysely.transaction().execute(async (trx) => {
      const res = await trx.deleteFrom('team_members').where('team_id', '=', teamId).where('user_id', '=', userId).executeTakeFirst();
      if (Number(res.numDeletedRows) !== 1) return undefined;
      return (await trx.selectFrom('api_tokens').select('id').where('team_id', '=', teamId).where('user_id', '=', userId).execute()).map((t) => t.id);
    });
  }

  /** The teams a user belongs to, with its role in each. */
  membershipsOf(userId: string): Promise<Membership[]> {
    return this.db.kysely
      .selectFrom('team_members')
      .innerJoin('teams', 'teams.id', 'team_members.team_id')
      .select(['team_members.team_id', 'teams.name', 'team_members.role'])
      .where('team_members.user_id', '=', userId)
      .orderBy('team_members.team_id')
      .execute();
  }

  async roleOf(teamId: string, userId: string): Promise<TeamRole | undefined> {
    const row = await this.db.kysely.selectFrom('team_members').select('role').where('team_id', '=', teamId).where('user_id', '=', userId).executeTakeFirst();
    return row?.role;
  }
}
