import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../core/errors.ts';
import type { TeamRole } from '../storage/schema.ts';

/**
 * What a console caller may do on one route:
 * - `public`: anyone, signed in or not (the sign-in itself);
 * - `signed-in`: anyone signed in, each for itself (who am I, sign out);
 * - `roles`: administrators (the admin token, ADMIN_USERS, the OIDC role claim), and users
 *   holding one of these roles in some team. The route then keeps each caller to what its
 *   roles reach (auth/operator.ts): 403 for a team's objects beyond the role, 404 for another team's.
 */
export type RouteAccess = { kind: 'public' } | { kind: 'signed-in' } | { kind: 'roles'; roles: readonly TeamRole[] };

const ADMINISTRATORS: RouteAccess = { kind: 'roles', roles: [] };
const roles = (...allowed: TeamRole[]): RouteAccess => ({ kind: 'roles', roles: allowed });
const EVERY_ROLE = roles('admin', 'member', 'viewer');

/**
 * THE table of who may call each /admin and console route, keyed `METHOD /route`. A route of
 * the admin group missing here is for administrators only, and test/teams-roles.test.ts fails
 * naming it: every route is declared, so the role table covers it.
 */
export const ROUTE_ACCESS: Readonly<Record<string, RouteAccess>> = {
  'GET /console/auth/options': { kind: 'public' },
  'GET /console/auth/login': { kind: 'public' },
  'GET /console/auth/callback': { kind: 'public' },
  'GET /console/auth/me': { kind: 'signed-in' },
  'POST /console/auth/logout': { kind: 'signed-in' },

  // Routes naming one team or token let every role through to the object's own check, which
  // answers 404 for another team's and 403 for the caller's team beyond its role.
  'POST /admin/teams': ADMINISTRATORS,
  'GET /admin/teams': roles('admin', 'member'),
  'GET /admin/teams/:id': EVERY_ROLE,
  'PATCH /admin/teams/:id': EVERY_ROLE,
  'DELETE /admin/teams/:id': EVERY_ROLE,
  'PUT /admin/teams/:id/members/:user_id': EVERY_ROLE,
  'DELETE /admin/teams/:id/members/:user_id': EVERY_ROLE,

  'POST /admin/tokens': roles('admin', 'member'),
  'GET /admin/tokens': roles('admin', 'member'),
  'PATCH /admin/tokens/:id': EVERY_ROLE,
  'DELETE /admin/tokens/:id': EVERY_ROLE,

  'GET /admin/usage': roles('admin', 'member', 'viewer'),
  'GET /admin/requests': roles('admin', 'member'),
  'GET /admin/tasks': roles('admin', 'member'),
  'GET /admin/tasks/:taskId': roles('admin', 'member'),
  'GET /admin/overview': roles('admin', 'member'),

  'GET /admin/users/:id/limits': ADMINISTRATORS,
  'PUT /admin/users/:id/limits': ADMINISTRATORS,
  'PUT /admin/users/:id/mcp-tools': ADMINISTRATORS,
  'GET /admin/batches': ADMINISTRATORS,
  'GET /admin/files/:file_id/content': ADMINISTRATORS,
  'GET /admin/providers': ADMINISTRATORS,
  'PUT /admin/providers/:code': ADMINISTRATORS,
  'POST /admin/providers/:code/channels': ADMINISTRATORS,
  'PATCH /admin/providers/:code/channels/:name': ADMINISTRATORS,
  'DELETE /admin/providers/:code/channels/:name': ADMINISTRATORS,
  'POST /admin/providers/:code/channels/:name/test': ADMINISTRATORS,
  'GET /admin/models': ADMINISTRATORS,
  'PATCH /admin/models/:alias': ADMINISTRATORS,
  'POST /admin/models': ADMINISTRATORS,
  'DELETE /admin/models/:alias': ADMINISTRATORS,
  'GET /admin/mcp-servers': ADMINISTRATORS,
  'GET /admin/mcp-servers/:name': ADMINISTRATORS,
  'POST /admin/mcp-servers': ADMINISTRATORS,
  'PATCH /admin/mcp-servers/:name': ADMINISTRATORS,
  'DELETE /admin/mcp-servers/:name': ADMINISTRATORS,
  'GET /admin/audit': ADMINISTRATORS,
  'GET /admin/config': ADMINISTRATORS,
  'PUT /admin/config': ADMINISTRATORS,
  'POST /admin/config/test-delivery': ADMINISTRATORS,
  'GET /admin/callbacks': ADMINISTRATORS,
  'POST /admin/callbacks/:deliveryId/retry': ADMINISTRATORS,
  'GET /admin/channels': ADMINISTRATORS,
  'POST /admin/channels/:provider/:name/disable': ADMINISTRATORS,
  'POST /admin/channels/:provider/:name/enable': ADMINISTRATORS,
  'POST /admin/agents': ADMINISTRATORS,
  'GET /admin/agents': ADMINISTRATORS,
  'GET /admin/agents/:id': ADMINISTRATORS,
  'DELETE /admin/agents/:id': ADMINISTRATORS,
  'POST /admin/agents/:id/documents': ADMINISTRATORS,
  'GET /admin/agents/:id/documents': ADMINISTRATORS,
  'DELETE /admin/agents/:id/documents/:docId': ADMINISTRATORS,
};

/** The declaration of a request's route (HEAD answers as its GET); undeclared: administrators only. */
export function accessOf(method: string, url: string | undefined): RouteAccess {
  return ROUTE_ACCESS[`${method === 'HEAD' ? 'GET' : method} ${url}`] ?? ADMINISTRATORS;
}

/**
 * The one check of roles, on every route of `group`, after its auth hook named the operator:
 * 403 permission_denied when none of the caller's roles may call the route.
 */
export function enforceRouteAccess(group: FastifyInstance): void {
  group.addHook('onRequest', (request: FastifyRequest, _reply, done) => {
    const access = accessOf(request.method, request.routeOptions.url);
    const operator = request.ctx.operator;
    if (access.kind !== 'roles' || !operator || operator.mayCall(access.roles)) return done();
    done(new ApiError('permission_denied', `your roles may not call ${request.method} ${request.routeOptions.url}`));
  });
}

const tracked = new WeakMap<FastifyInstance, { method: string; url: string }[]>();

/** Records every route the app registers from now on (method and route), for routesOf. */
export function trackRoutes(app: FastifyInstance): void {
  const routes: { method: string; url: string }[] = [];
  tracked.set(app, routes);
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) if (method !== 'HEAD') routes.push({ method, url: route.url });
  });
}

/** The routes of an app built with trackRoutes: the role table's test covers each. */
export function routesOf(app: FastifyInstance): readonly { method: string; url: string }[] {
  return tracked.get(app) ?? [];
}
