import { ApiError } from '../core/errors.ts';
import type { TeamMemberRow, TeamRole, TeamRow } from '../storage/schema.ts';
import type { Membership, TeamsRepo } from '../storage/repos/teams-repo.ts';

/** Teams and their members. Limits of a team are the limits service's; this keeps the rows. */
export class TeamService {
  private readonly repo: TeamsRepo;
  private readonly now: () => number;

  constructor(
    repo: TeamsRepo,
    now: () => number = Date.now,
  ) {
    this.repo = repo;
    this.now = now;
  }

  /** Creates a team; 409 team_exists when the id is taken. */
  async create(id: string, name: string, limits: string | null): Promise<TeamRow> {
    const row: TeamRow = { id, name, limits, created_at: this.now() };
    if (!(await this.repo.insert(row))) throw new ApiError('team_exists', `a team ${id} exists already`, 'id');
    return row;
  }

  /** A team, or 404 team_not_found. */
  async get(id: string): Promise<TeamRow> {
    const team = await this.repo.find(id);
    if (!team) throw new ApiError('team_not_found', `no team ${id}`, 'id');
    return team;
  }

  list(ids?: readonly string[]): Promise<TeamRow[]> {
    return this.repo.list(ids);
  }

  members(id: string): Promise<TeamMemberRow[]> {
    return this.repo.members(id);
  }

  async rename(id: string, name: string): Promise<void> {
    if (!(await this.repo.update(id, { name }))) throw new ApiError('team_not_found', `no team ${id}`, 'id');
  }

  /** Deletes a team and its members; answers the tokens that worked for it (they stop working). */
  async delete(id: string): Promise<string[]> {
    const tokens = await this.repo.delete(id);
    if (!tokens) throw new ApiError('team_not_found', `no team ${id}`, 'id');
    return tokens;
  }

  async setMember(teamId: string, userId: string, role: TeamRole): Promise<TeamMemberRow> {
    await this.get(teamId);
    const row: TeamMemberRow = { team_id: teamId, user_id: userId, role, created_at: this.now() };
    await this.repo.setMember(row);
    return row;
  }

  /** Removes a member; answers its tokens of the team (they stop working). */
  async removeMember(teamId: string, userId: string): Promise<string[]> {
    const tokens = await this.repo.removeMember(teamId, userId);
    if (!tokens) throw new ApiError('member_not_found', `${userId} is no member of team ${teamId}`, 'user_id');
    return tokens;
  }

  membershipsOf(userId: string): Promise<Membership[]> {
    return this.repo.membershipsOf(userId);
  }

  /** 400 naming `team_id` unless the user is a member of the team. */
  async checkMember(teamId: string, userId: string): Promise<void> {
    if (!(await this.repo.roleOf(teamId, userId))) throw new ApiError('invalid_parameter', `${userId} is no member of team ${teamId}`, 'team_id');
  }
}
