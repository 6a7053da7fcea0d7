import fs from 'node:fs';
import path from 'node:path';
import { hash, timingSafeEqual } from 'node:crypto';
import { newId, newSecret } from '../core/ids.ts';
import { ApiError } from '../core/errors.ts';
import type { TokenScope, TokensRepo, TokenSummary } from '../storage/repos/tokens-repo.ts';

/** Who a request acts for. The admin token acts as the user `admin` outside /admin. */
export interface Principal {
  userId: string;
  tokenId: string;
  isAdmin: boolean;
  /** The team the token works for: its limits and usage count the call. */
  teamId?: string | null;
}

export interface CreatedToken extends TokenSummary {
  token: string;
}

export const ADMIN_USER_ID = 'admin';
const TOKEN_PREFIX = 'gg-';
/** How long a known token is trusted without the database; bounds how late another instance sees a delete. */
const POSITIVE_TTL_MS = 60_000;
/** Unknown tokens are remembered briefly so a flood of bad tokens does not reach the database. */
const NEGATIVE_TTL_MS = 5_000;
const MAX_CACHE_ENTRIES = 100_000;

export function hashToken(token: string): string {
  return hash('sha256', token);
}

interface CacheEntry {
  principal: Principal | undefined;
  expiresAt: number;
}

/** API tokens: created once in plain text, stored hashed, looked up through a cache. */
export class TokenService {
  private readonly cache = new Map<string, CacheEntry>();

  private readonly repo: TokensRepo;
  private readonly adminTokenHash: string;

  constructor(
    repo: TokensRepo,
    adminTokenHash: string,
  ) {
    this.repo = repo;
    this.adminTokenHash = adminTokenHash;
  }

  /** `limits` is the token's limits as stored (JSON), or null; a team's member is checked by the caller. */
  async create(userId: string, name?: string, limits: string | null = null, teamId: string | null = null): Promise<CreatedToken> {
    const token = TOKEN_PREFIX + newSecret();
    const row = { id: newId('tok'), user_id: userId, name: name ?? null, token_hash: hashToken(token), created_at: Date.now(), limits, team_id: teamId };
    await this.repo.insert(row);
    return { id: row.id, user_id: row.user_id, name: row.name, created_at: row.created_at, limits, team_id: teamId, token };
  }

  /** Every token, or those of a scope (a team's, a user's own). */
  list(scope?: TokenScope): Promise<TokenSummary[]> {
    return this.repo.list(scope);
  }

  /** A token without its hash, or 404 token_not_found. */
  async get(id: string): Promise<TokenSummary> {
    const token = await this.repo.find(id);
    if (!token) throw new ApiError('token_not_found', `no token ${id}`, 'id');
    return token;
  }

  /** Moves a token to a team or out of any; its cached lookups here are dropped. */
  async setTeam(id: string, teamId: string | null): Promise<void> {
    await this.repo.setTeam(id, teamId);
    this.forget(id);
  }

  /** Deletes a token and forgets it at once in this process; answers false when unknown. */
  async delete(id: string): Promise<boolean> {
    const hash = await this.repo.delete(id);
    if (hash === undefined) return false;
    this.cache.delete(hash);
    return true;
  }

  /** Drops the cached lookups of a token deleted through another instance. */
  forget(tokenId: string): void {
    for (const [hash, entry] of this.cache) if (entry.principal?.tokenId === tokenId) this.cache.delete(hash);
  }

  isAdminToken(token: string): boolean {
    const a = Buffer.from(hashToken(token), 'hex');
    return timingSafeEqual(a, Buffer.from(this.adminTokenHash, 'hex'));
  }

  /**
   * The cached lookup of a bearer token, answered without waiting: its principal, undefined when
   * it is known to be unknown, or `miss` when only authenticate() can say.
   */
  cachedPrincipal(token: string): Principal | undefined | 'miss' {
    return this.cachedByHash(hashToken(token));
  }

  private cachedByHash(hash: string): Principal | undefined | 'miss' {
    const cached = this.cache.get(hash);
    return cached && cached.expiresAt > Date.now() ? cached.principal : 'miss';
  }

  /** The principal of a bearer token, or undefined when it is unknown. */
  async authenticate(token: string): Promise<Principal | undefined> {
    const hash = hashToken(token);
    const cached = this.cachedByHash(hash);
    if (cached !== 'miss') return cached;
    const now = Date.now();
    let principal: Principal | undefined;
    if (hash === this.adminTokenHash) principal = { userId: ADMIN_USER_ID, tokenId: 'admin', isAdmin: true };
    else {
      const row = await this.repo.findByHash(hash);
      // A token out of its team works again once its user is back: not remembered as unknown.
      if (row && !row.in_team) return undefined;
      principal = row ? { userId: row.user_id, tokenId: row.id, isAdmin: false, teamId: row.team_id } : undefined;
    }
    if (this.cache.size >= MAX_CACHE_ENTRIES) this.cache.clear();
    this.cache.set(hash, { principal, expiresAt: now + (principal ? POSITIVE_TTL_MS : NEGATIVE_TTL_MS) });
    return principal;
  }
}

/** Where the admin token's hash is kept when ADMIN_TOKEN is not set. */
export function adminTokenFile(dataDir: string): string {
  return path.join(dataDir, 'admin-token.sha256');
}

/** A new admin token: its hash replaces the kept one (written whole, then renamed); the plain value is returned once. */
export function rotateAdminToken(dataDir: string): string {
  const token = 'gg-admin-' + newSecret();
  const file = adminTokenFile(dataDir);
  fs.mkdirSync(dataDir, { recursive: true });
  fs.writeFileSync(`${file}.new`, hashToken(token) + '\n', { mode: 0o600 });
  fs.renameSync(`${file}.new`, file);
  return token;
}

/**
 * The admin token: ADMIN_TOKEN when set; otherwise generated on first start, its hash kept
 * in DATA_DIR, and the plain value handed back once so it can be printed.
 */
export function resolveAdminToken(dataDir: string, configured: string | undefined): { hash: string; createdToken?: string } {
  if (configured) return { hash: hashToken(configured) };
  try {
    return { hash: fs.readFileSync(adminTokenFile(dataDir), 'utf8').trim() };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const token = rotateAdminToken(dataDir);
  return { hash: hashToken(token), createdToken: token };
}
