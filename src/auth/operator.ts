import { ApiError } from '../core/errors.ts';
import type { TeamRole } from '../storage/schema.ts';
import type { Membership } from '../storage/repos/teams-repo.ts';

/** Who made a change, as the audit log names it: the admin token is `admin`. */
export interface Actor {
  type: 'admin_token' | 'user';
  id: string;
}

/** Rows a non-administrator may read: those of the given teams, or the user's own. */
export interface ReadScope {
  teamIds: string[];
  /** The user's own rows too; absent when its roles show it none. */
  userId?: string;
  /** Of these, only the rows of this team (the console's team switcher). */
  teamId?: string;
}

/** What a console caller may reach of a token: its owner and team. */
export interface TokenOwner {
  user_id: string;
  team_id: string | null;
}

/**
 * Whoever acts on /admin: the admin token, or a user signed in to the console with its teams and
 * roles. Routes ask it what the caller may see and change; it answers 403 permission_denied for a
 * team's objects beyond the caller's role there, 404 for another team's (never telling they exist).
 */
export class Operator {
  private readonly roles: Map<string, TeamRole>;

  readonly kind: 'admin_token' | 'user';
  readonly userId: string;
  readonly isAdmin: boolean;
  readonly memberships: readonly Membership[];

  private constructor(
    kind: 'admin_token' | 'user',
    userId: string,
    /** The admin token, a user of ADMIN_USERS or one the identity provider's role claim names administrator. */
    isAdmin: boolean,
    memberships: readonly Membership[],
  ) {
    this.kind = kind;
    this.userId = userId;
    this.isAdmin = isAdmin;
    this.memberships = memberships;
    this.roles = new Map(memberships.map((m) => [m.team_id, m.role]));
  }

  static adminToken(): Operator {
    return new Operator('admin_token', 'admin', true, []);
  }

  static user(userId: string, isAdmin: boolean, memberships: readonly Membership[]): Operator {
    return new Operator('user', userId, isAdmin, memberships);
  }

  get actor(): Actor {
    return { type: this.kind, id: this.userId };
  }

  roleIn(teamId: string): TeamRole | undefined {
    return this.roles.get(teamId);
  }

  /** Administrators may call anything; another user a route that one of its team roles may call. */
  mayCall(roles: readonly TeamRole[]): boolean {
    return this.isAdmin || this.memberships.some((m) => roles.includes(m.role));
  }

  /** The teams where the caller holds one of `roles`. */
  teamsAs(...roles: TeamRole[]): string[] {
    return this.memberships.filter((m) => roles.includes(m.role)).map((m) => m.team_id);
  }

  /** Whether the caller has its own tokens and data to manage: a member or admin of some team. */
  private get managesOwn(): boolean {
    return this.memberships.some((m) => m.role !== 'viewer');
  }

  /** A team the caller must hold one of `roles` in: 404 team_not_found outside it, 403 with too little a role. */
  checkTeam(teamId: string, roles: readonly TeamRole[], param: string | null = 'id'): void {
    if (this.isAdmin) return;
    const role = this.roles.get(teamId);
    if (!role) throw new ApiError('team_not_found', `no team ${teamId}`, param);
    if (!roles.includes(role)) throw new ApiError('permission_denied', `your role in team ${teamId} (${role}) may not do this`, param);
  }

  /**
   * A token the caller changes or revokes: its team's admins, and its owner while a member of its
   * team (or of any team, for a token of none) may; 403 within the caller's teams, else 404.
   */
  checkToken(token: TokenOwner & { id: string }): void {
    if (this.isAdmin) return;
    const role = token.team_id === null ? undefined : this.roles.get(token.team_id);
    if (role === 'admin') return;
    if (token.user_id === this.userId && (token.team_id === null ? this.managesOwn : role === 'member')) return;
    if (role !== undefined || token.user_id === this.userId) throw new ApiError('permission_denied', `your role may not change token ${token.id}`, 'id');
    throw new ApiError('token_not_found', `no token ${token.id}`, 'id');
  }

  /** A token the caller creates for `owner`: as checkToken, naming the body's fields. */
  checkNewToken(owner: TokenOwner): void {
    if (this.isAdmin) return;
    if (owner.team_id !== null) {
      const role = this.roles.get(owner.team_id);
      if (!role) throw new ApiError('team_not_found', `no team ${owner.team_id}`, 'team_id');
      if (role === 'admin') return;
      if (role === 'viewer') throw new ApiError('permission_denied', `a viewer of team ${owner.team_id} may not create its tokens`, 'team_id');
    } else if (!this.managesOwn) throw new ApiError('permission_denied', 'your roles give you no tokens to manage', null);
    if (owner.user_id !== this.userId) throw new ApiError('permission_denied', 'you may create tokens for yourself only', 'user_id');
  }

  /**
   * Rows the caller reads, undefined for everything (administrators). `teamRoles` are the roles
   * that see a team's rows; a member or admin sees its own rows too. A `teamId` narrows the
   * answer to that team (404 team_not_found when it is none of the caller's).
   */
  readScope(teamRoles: readonly TeamRole[], teamId?: string): ReadScope | undefined {
    if (this.isAdmin) return undefined;
    if (teamId !== undefined && !this.roles.has(teamId)) throw new ApiError('team_not_found', `no team ${teamId}`, 'team_id');
    const teamIds = this.teamsAs(...teamRoles).filter((id) => teamId === undefined || id === teamId);
    return { teamIds, ...(this.managesOwn ? { userId: this.userId } : {}), ...(teamId !== undefined ? { teamId } : {}) };
  }

  /** Whether a row of `owner` is within what readScope lets the caller see. */
  sees(owner: TokenOwner, teamRoles: readonly TeamRole[]): boolean {
    const scope = this.readScope(teamRoles);
    return !scope || (owner.team_id !== null && scope.teamIds.includes(owner.team_id)) || owner.user_id === scope.userId;
  }
}
