import * as oidc from 'openid-client';
import { ApiError } from '../core/errors.ts';
import type { OidcSettings } from '../config/settings.ts';
import type { SessionsRepo } from '../storage/repos/sessions-repo.ts';

/** The value of the role claim that makes a user an administrator. */
export const ADMIN_ROLE_CLAIM_VALUE = 'gengate-admin';
/** How long a sign-in may take between the redirect to the identity provider and the callback. */
export const SIGN_IN_TTL_MS = 10 * 60_000;

/** Who signed in, from the identity provider's claims. */
export interface SignedInUser {
  userId: string;
  /** The role claim holds gengate-admin. */
  claimsAdmin: boolean;
}

/**
 * The console's sign-in with OpenID Connect: the authorization code flow with PKCE (S256), state
 * and nonce. What a sign-in under way must remember (state, nonce, PKCE verifier) is in the store,
 * so its callback may land on any instance; each is used once.
 */
export class OidcSignIn {
  private configuration: Promise<oidc.Configuration> | undefined;

  private readonly settings: OidcSettings;
  private readonly repo: SessionsRepo;
  private readonly redirectUri: () => string;
  private readonly now: () => number;

  constructor(
    settings: OidcSettings,
    repo: SessionsRepo,
    /** The callback's address as the identity provider knows it (PUBLIC_BASE_URL + /console/auth/callback). */
    redirectUri: () => string,
    now: () => number = Date.now,
  ) {
    this.settings = settings;
    this.repo = repo;
    this.redirectUri = redirectUri;
    this.now = now;
  }

  /** The issuer's metadata, discovered at the first sign-in (the issuer need not be up when the gateway starts). */
  private config(): Promise<oidc.Configuration> {
    this.configuration ??= oidc
      .discovery(new URL(this.settings.issuer), this.settings.clientId, this.settings.clientSecret, undefined, {
        // Settings admit http for a local issuer only (config/settings.ts oidcSettings).
        ...(new URL(this.settings.issuer).protocol === 'http:' ? { execute: [oidc.allowInsecureRequests] } : {}),
      })
      .catch((err: unknown) => {
        this.configuration = undefined;
        throw new ApiError('sign_in_failed', `the identity provider cannot be reached: ${(err as Error).message}`);
      });
    return this.configuration;
  }

  /** Starts a sign-in: answers the identity provider's authorization URL and the state the browser must bring back. */
  async begin(): Promise<{ url: string; state: string }> {
    const config = await this.config();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const verifier = oidc.randomPKCECodeVerifier();
    await this.repo.insertLogin({ state, nonce, code_verifier: verifier, expires_at: this.now() + SIGN_IN_TTL_MS });
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: this.redirectUri(),
      scope: this.settings.scopes,
      response_type: 'code',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    return { url: url.href, state };
  }

  /**
   * Ends a sign-in at the callback: the state must be the one this browser started with (its
   * cookie) and one under way; the code is exchanged with the PKCE verifier and the ID token's
   * nonce checked. 401 sign_in_failed otherwise.
   */
  async finish(query: string, browserState: string | undefined): Promise<SignedInUser> {
    const params = new URLSearchParams(query);
    const state = params.get('state');
    if (params.has('error')) throw new ApiError('sign_in_failed', `the identity provider refused the sign-in: ${params.get('error')} ${params.get('error_description') ?? ''}`.trim());
    if (!state || !browserState || state !== browserState) throw new ApiError('sign_in_failed', 'the sign-in state does not match the one this browser started');
    const login = await this.repo.takeLogin(state, this.now());
    if (!login) throw new ApiError('sign_in_failed', 'no sign-in under way with this state (used already, or expired)');
    const config = await this.config();
    const current = new URL(this.redirectUri());
    current.search = query;
    let claims: Record<string, unknown>;
    try {
      const tokens = await oidc.authorizationCodeGrant(config, current, { pkceCodeVerifier: login.code_verifier, expectedState: login.state, expectedNonce: login.nonce, idTokenExpected: true });
      claims = { ...tokens.claims() };
      const needed = [this.settings.userClaim, this.settings.roleClaim].filter((c): c is string => c !== undefined);
      // Providers put profile claims in the userinfo answer rather than the ID token.
      if (needed.some((c) => claims[c] === undefined)) claims = { ...(await oidc.fetchUserInfo(config, tokens.access_token, String(claims.sub))), ...claims };
    } catch (err) {
      throw new ApiError('sign_in_failed', `the sign-in failed its checks: ${(err as Error).message}`);
    }
    const userId = claims[this.settings.userClaim];
    if (typeof userId !== 'string' || userId === '') throw new ApiError('sign_in_failed', `the identity provider sent no ${this.settings.userClaim} claim`);
    return { userId, claimsAdmin: this.settings.roleClaim !== undefined && holdsAdminRole(claims[this.settings.roleClaim]) };
  }
}

function holdsAdminRole(value: unknown): boolean {
  return Array.isArray(value) ? value.includes(ADMIN_ROLE_CLAIM_VALUE) : value === ADMIN_ROLE_CLAIM_VALUE;
}
