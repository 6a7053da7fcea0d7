import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../../core/errors.ts';
import type { Principal, TokenService } from '../../auth/tokens.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set on every authenticated route; routes there can rely on it. */
    principal: Principal;
  }
}

const PROTECTED_PREFIXES = ['/v1/', '/api/', '/upload/'];

function bearerOf(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (!header) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1] : undefined;
}

/** Bearer auth on /v1, /api, /upload (API tokens) and /admin (the admin token only), CONTRACT §2. */
export function registerAuth(app: FastifyInstance, tokens: TokenService): void {
  app.decorateRequest('principal', null as unknown as Principal);
  app.addHook('onRequest', async (request) => {
    // Decide on the matched route pattern, never the raw URL: the router decodes the path
    // (`/%61dmin/…` reaches /admin/…), so a raw-URL check could be walked around.
    const url = request.routeOptions.url;
    if (url === undefined) return; // no route: the not-found handler answers
    const isAdminRoute = url.startsWith('/admin/') || url === '/admin';
    if (!isAdminRoute && !PROTECTED_PREFIXES.some((p) => url.startsWith(p))) return;
    const token = bearerOf(request);
    if (!token) throw new ApiError('missing_api_key', 'missing bearer token: send Authorization: Bearer <token>');
    if (isAdminRoute) {
      if (tokens.isAdminToken(token)) {
        request.principal = { userId: 'admin', tokenId: 'admin', isAdmin: true };
        return;
      }
      if (await tokens.authenticate(token)) throw new ApiError('admin_required', 'this route needs the admin token');
      throw new ApiError('invalid_api_key', 'unknown or revoked token');
    }
    const principal = await tokens.authenticate(token);
    if (!principal) throw new ApiError('invalid_api_key', 'unknown or revoked token');
    request.principal = principal;
  });
}
