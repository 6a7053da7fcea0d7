import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ApiError } from '../../core/errors.ts';
import { SIGN_IN_TTL_MS } from '../../auth/oidc-sign-in.ts';
import { cookiesOf, CSRF_COOKIE, SESSION_COOKIE, setCookie } from '../plugins/console-auth.ts';
import type { AppServices } from '../services.ts';

/** The cookie binding a sign-in under way to the browser that started it. */
const STATE_COOKIE = 'gengate_oidc_state';
const STATE_PATH = '/console/auth';

const Identity = Type.Object({
  user_id: Type.String(),
  admin: Type.Boolean({ description: 'manages everything' }),
  via: Type.Union([Type.Literal('admin_token'), Type.Literal('session'), Type.Literal('api_token')]),
  teams: Type.Array(Type.Object({ id: Type.String(), name: Type.String(), role: Type.String() })),
});

/** The console's sign-in with OpenID Connect (public: it is how one signs in). */
export const consoleSignInRoutes = (services: AppServices): FastifyPluginAsyncTypebox => async (app) => {
  const secure = services.settings.publicBaseUrl?.startsWith('https://') ?? false;

  app.get('/console/auth/options', {
    schema: { tags: ['console'], summary: 'How one may sign in to the console', response: { 200: Type.Object({ sso: Type.Boolean({ description: 'OpenID Connect sign-in is configured' }) }) } },
  }, async () => ({ sso: services.oidc !== undefined }));

  app.get('/console/auth/login', {
    schema: { tags: ['console'], summary: 'Starts an OpenID Connect sign-in: a redirect to the identity provider' },
  }, async (_request, reply) => {
    if (!services.oidc) throw new ApiError('sign_in_not_configured', 'sign-in with OpenID Connect is not configured (OIDC_ISSUER)');
    const { url, state } = await services.oidc.begin();
    setCookie(reply, STATE_COOKIE, state, { httpOnly: true, secure, maxAgeS: SIGN_IN_TTL_MS / 1000, path: STATE_PATH });
    return reply.redirect(url, 302);
  });

  app.get('/console/auth/callback', {
    schema: { tags: ['console'], summary: 'Ends an OpenID Connect sign-in: sets the session and CSRF cookies and goes to the console' },
  }, async (request, reply) => {
    if (!services.oidc) throw new ApiError('sign_in_not_configured', 'sign-in with OpenID Connect is not configured (OIDC_ISSUER)');
    const query = request.url.includes('?') ? request.url.slice(request.url.indexOf('?') + 1) : '';
    // The state is used once, whatever the outcome.
    setCookie(reply, STATE_COOKIE, '', { httpOnly: true, secure, maxAgeS: 0, path: STATE_PATH });
    const user = await services.oidc.finish(query, cookiesOf(request)[STATE_COOKIE]);
    const session = await services.sessions.start(user.userId, user.claimsAdmin);
    const maxAgeS = Math.floor((session.expiresAt - Date.now()) / 1000);
    setCookie(reply, SESSION_COOKIE, session.cookie, { httpOnly: true, secure, maxAgeS });
    setCookie(reply, CSRF_COOKIE, session.csrf, { httpOnly: false, secure, maxAgeS });
    request.log.info({ user_id: user.userId }, 'console sign-in');
    return reply.redirect('/console/', 302);
  });
};

/** Who the console's caller is, and its sign-out (a session, the admin token or an API token). */
export const consoleSessionRoutes = (services: AppServices): FastifyPluginAsyncTypebox => async (app) => {
  const secure = services.settings.publicBaseUrl?.startsWith('https://') ?? false;

  app.get('/console/auth/me', {
    schema: { tags: ['console'], summary: 'The console caller: its user, whether it administers everything, and its teams with its role in each', response: { 200: Identity } },
  }, async (request) => {
    const operator = request.ctx.operator;
    if (!operator) return { user_id: request.ctx.principal.userId, admin: false, via: 'api_token' as const, teams: [] };
    return {
      user_id: operator.userId,
      admin: operator.isAdmin,
      via: operator.kind === 'admin_token' ? ('admin_token' as const) : ('session' as const),
      teams: operator.memberships.map((m) => ({ id: m.team_id, name: m.name, role: m.role })),
    };
  });

  app.post('/console/auth/logout', {
    schema: { tags: ['console'], summary: 'Ends the console session on every instance (with the x-csrf-token header)' },
  }, async (request, reply) => {
    const cookie = cookiesOf(request)[SESSION_COOKIE];
    if (cookie && request.ctx.sessionCsrf !== undefined) await services.sessions.end(cookie);
    setCookie(reply, SESSION_COOKIE, '', { httpOnly: true, secure, maxAgeS: 0 });
    setCookie(reply, CSRF_COOKIE, '', { httpOnly: false, secure, maxAgeS: 0 });
    return reply.code(204).send();
  });
};
