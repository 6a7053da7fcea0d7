import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../../core/errors.ts';
import type { Principal, TokenService } from '../../auth/tokens.ts';

const PROTECTED_PREFIXES = ['/v1/', '/openai/v1/', '/api/', '/upload/'];

function bearerOf(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (!header) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1] : undefined;
}

/** Bearer auth on /v1, /openai/v1, /api, /upload (API tokens) and /admin (the admin token only). */
export function registerAuth(app: FastifyInstance, tokens: TokenService): void {
  app.addHook('onRequest', (request, _reply, done) => {
    let settled: Promise<void> | undefined;
    try {
      settled = authorize(request, tokens);
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
 * Sets the request's caller, or throws the contract's 401/403. Answers a promise only when
 * the token has to be looked up in the store.
 */
function authorize(request: FastifyRequest, tokens: TokenService): Promise<void> | undefined {
  // Decide on the matched route pattern, never the raw URL: the router decodes the path
  // (`/%61dmin/…` reaches /admin/…), so a raw-URL check could be walked around.
  const url = request.routeOptions.url;
  if (url === undefined) return undefined; // no route: the not-found handler answers
  const isAdminRoute = url.startsWith('/admin/') || url === '/admin';
  if (!isAdminRoute && !PROTECTED_PREFIXES.some((p) => url.startsWith(p))) return undefined;
  const token = bearerOf(request);
  if (!token) throw new ApiError('missing_api_key', 'missing bearer token: send Authorization: Bearer <token>');
  if (isAdminRoute) {
    if (tokens.isAdminToken(token)) {
      request.ctx.caller = { userId: 'admin', tokenId: 'admin', isAdmin: true };
      return undefined;
    }
    return tokens.authenticate(token).then((principal) => {
      throw principal ? new ApiError('admin_required', 'this route needs the admin token') : new ApiError('invalid_api_key', 'unknown or revoked token');
    });
  }
  const accept = (principal: Principal | undefined): void => {
    if (!principal) throw new ApiError('invalid_api_key', 'unknown or revoked token');
    request.ctx.caller = principal;
  };
  const cached = tokens.cachedPrincipal(token);
  if (cached === 'miss') return tokens.authenticate(token).then(accept);
  accept(cached);
  return undefined;
}
