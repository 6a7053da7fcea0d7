import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { parseCookie, stringifySetCookie } from 'cookie';
import { ApiError } from '../../core/errors.ts';
import { Operator } from '../../auth/operator.ts';
import type { ConsoleSessions } from '../../auth/console-sessions.ts';
import type { TokenService } from '../../auth/tokens.ts';
import { bearerOf } from './auth.ts';

export const SESSION_COOKIE = 'gengate_session';
export const CSRF_COOKIE = 'gengate_csrf';
export const CSRF_HEADER = 'x-csrf-token';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The request's cookies. */
export function cookiesOf(request: FastifyRequest): Record<string, string | undefined> {
  return request.headers.cookie ? parseCookie(request.headers.cookie) : {};
}

/** Adds a Set-Cookie header; Lax, on the whole site, Secure when the gateway is served over https. */
export function setCookie(reply: FastifyReply, name: string, value: string, opts: { httpOnly: boolean; secure: boolean; maxAgeS?: number; path?: string }): void {
  const line = stringifySetCookie({ name, value, httpOnly: opts.httpOnly, secure: opts.secure, sameSite: 'lax', path: opts.path ?? '/', ...(opts.maxAgeS !== undefined ? { maxAge: opts.maxAgeS } : {}) });
  const current = reply.getHeader('set-cookie');
  reply.header('set-cookie', current === undefined ? [line] : [...(Array.isArray(current) ? current : [String(current)]), line]);
}

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Who acts on the routes of `group` (/admin and the console's own): the admin token as a bearer;
 * else, without a bearer, a console session's cookie, whose every changing request must carry
 * the session's CSRF value in x-csrf-token (else 403). An API token stays a 403 here, unless
 * `apiTokens` lets it through (the console's /console/auth/me answers who it is).
 */
export function requireOperator(group: FastifyInstance, deps: { tokens: TokenService; sessions: ConsoleSessions }, opts: { apiTokens: boolean } = { apiTokens: false }): void {
  group.addHook('onRequest', async (request) => {
    const token = bearerOf(request);
    if (token) {
      if (deps.tokens.isAdminToken(token)) {
        request.ctx.operator = Operator.adminToken();
        request.ctx.caller = { userId: 'admin', tokenId: 'admin', isAdmin: true };
        return;
      }
      const principal = await deps.tokens.authenticate(token);
      if (!principal) throw new ApiError('invalid_api_key', 'unknown or revoked token');
      if (!opts.apiTokens) throw new ApiError('admin_required', 'this route needs the admin token');
      request.ctx.caller = principal;
      return;
    }
    const cookie = cookiesOf(request)[SESSION_COOKIE];
    if (!cookie) throw new ApiError('missing_api_key', 'missing bearer token or console session: send Authorization: Bearer <token>, or sign in');
    const session = await deps.sessions.find(cookie);
    if (!session) throw new ApiError('invalid_api_key', 'the console session has ended or expired: sign in again');
    if (!SAFE_METHODS.has(request.method)) {
      const given = request.headers[CSRF_HEADER];
      if (typeof given !== 'string' || !sameSecret(given, session.csrf)) throw new ApiError('csrf_token_invalid', `a change through a console session needs the ${CSRF_HEADER} header (the ${CSRF_COOKIE} cookie's value)`);
    }
    request.ctx.operator = session.operator;
    request.ctx.sessionCsrf = session.csrf;
    request.ctx.caller = { userId: session.operator.userId, tokenId: 'session', isAdmin: session.operator.isAdmin };
  });
}
