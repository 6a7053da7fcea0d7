import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../../core/errors.ts';
import type { Principal, TokenService } from '../../auth/tokens.ts';

/** The bearer token of a request's Authorization header. */
export function bearerOf(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (!header) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1] : undefined;
}

/**
 * A group's check of a bearer token: sets the request's caller, or throws the contract's 401/403.
 * Answers a promise only when the token has to be looked up in the store.
 */
type Authorize = (request: FastifyRequest, token: string) => Promise<void> | undefined;

/**
 * Bearer auth on every route of `group`, and only there: the group a route is registered in
 * decides, never the URL (the router decodes the path, so `/%61dmin/…` reaches /admin/…, and a
 * check of the raw URL could be walked around).
 */
function requireBearer(group: FastifyInstance, authorize: Authorize, keyHeader?: string): void {
  group.addHook('onRequest', (request, _reply, done) => {
    let settled: Promise<void> | undefined;
    try {
      const key = keyHeader === undefined ? undefined : request.headers[keyHeader];
      const token = (typeof key === 'string' && key !== '' ? key.trim() : undefined) ?? bearerOf(request);
      if (!token) throw new ApiError('missing_api_key', keyHeader === undefined ? 'missing bearer token: send Authorization: Bearer <token>' : `missing API key: send ${keyHeader}: <token> or Authorization: Bearer <token>`);
      settled = authorize(request, token);
    } catch (err) {
      done(err as Error);
      return;
    }
    // A cached token is decided at once; only a lookup in the store waits.
    if (settled) settled.then(() => done(), done);
    else done();
  });
}

/**
 * The routes of `group` take API tokens (/v1, /openai/v1, /api, /upload); with `keyHeader` also
 * as that header's value (/anthropic's x-api-key), which goes before a bearer token.
 */
export function requireApiToken(group: FastifyInstance, tokens: TokenService, keyHeader?: string): void {
  requireBearer(group, (request, token) => {
    const accept = (principal: Principal | undefined): void => {
      if (!principal) throw new ApiError('invalid_api_key', 'unknown or revoked token');
      request.ctx.caller = principal;
    };
    const cached = tokens.cachedPrincipal(token);
    if (cached === 'miss') return tokens.authenticate(token).then(accept);
    accept(cached);
    return undefined;
  }, keyHeader);
}
