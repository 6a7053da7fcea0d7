import { newSecret } from '../core/ids.ts';
import type { SessionsRepo } from '../storage/repos/sessions-repo.ts';
import type { TeamsRepo } from '../storage/repos/teams-repo.ts';
import { hashToken } from './tokens.ts';
import { Operator } from './operator.ts';

/** A new console session: the cookie's value, the CSRF value the console echoes, and its end. */
export interface StartedSession {
  cookie: string;
  csrf: string;
  expiresAt: number;
}

/** A live session as a request finds it. */
export interface LiveSession {
  operator: Operator;
  csrf: string;
}

/** How often lapsed sessions and sign-ins are deleted. */
const SWEEP_EVERY_MS = 10 * 60_000;

/**
 * Console sessions kept in the store: every instance reads the same rows, so a sign-out (the
 * row deleted) ends the session everywhere at once. The cookie's value is kept hashed.
 */
export class ConsoleSessions {
  private timer: NodeJS.Timeout | undefined;

  private readonly repo: SessionsRepo;
  private readonly teams: TeamsRepo;
  private readonly opts: { ttlMs: number; adminUsers: readonly string[]; now?: () => number };

  constructor(
    repo: SessionsRepo,
    teams: TeamsRepo,
    opts: { ttlMs: number; adminUsers: readonly string[]; now?: () => number },
  ) {
    this.repo = repo;
    this.teams = teams;
    this.opts = opts;
  }

  private now(): number {
    return (this.opts.now ?? Date.now)();
  }

  /** Deletes lapsed sessions now and then (an expired one is refused anyway). */
  startSweep(onError: (err: unknown) => void): void {
    this.timer = setInterval(() => void this.repo.deleteExpired(this.now()).catch(onError), SWEEP_EVERY_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Starts a session for a user; `claimsAdmin` when the identity provider's role claim made it an administrator. */
  async start(userId: string, claimsAdmin: boolean): Promise<StartedSession> {
    const cookie = newSecret();
    const csrf = newSecret();
    const now = this.now();
    const expiresAt = now + this.opts.ttlMs;
    await this.repo.insert({ id: hashToken(cookie), user_id: userId, claims_admin: claimsAdmin ? 1 : 0, csrf, created_at: now, expires_at: expiresAt });
    return { cookie, csrf, expiresAt };
  }

  /** The session of a cookie's value while it lasts, with the user's roles as they are now. */
  async find(cookie: string): Promise<LiveSession | undefined> {
    const row = await this.repo.find(hashToken(cookie), this.now());
    if (!row) return undefined;
    const isAdmin = row.claims_admin === 1 || this.opts.adminUsers.includes(row.user_id);
    return { operator: Operator.user(row.user_id, isAdmin, await this.teams.membershipsOf(row.user_id)), csrf: row.csrf };
  }

  async end(cookie: string): Promise<void> {
    await this.repo.delete(hashToken(cookie));
  }
}
