import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Type } from 'typebox';
import type { FastifyReply } from 'fastify';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import mime from 'mime-types';
import { ApiError } from '../../core/errors.ts';
import { OverviewService } from '../../overview/overview-service.ts';
import { OverviewRepo } from '../../storage/repos/overview-repo.ts';
import type { AppServices } from '../services.ts';

/** `npm run build` writes the console here; the same path from src/ (tsx) and from dist/. */
export const CONSOLE_DIR = fileURLToPath(new URL('../../../dist/console/', import.meta.url));

const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  // Outputs may be served from a bucket's origin (FILES_DELIVERY=redirect).
  'img-src * data: blob:',
  'media-src * data: blob:',
  'connect-src *',
  'worker-src blob:',
  "frame-ancestors 'none'",
].join('; ');

const security = [{ bearer: [] }];

const OverviewWindow = Type.Object({
  window: Type.Union([Type.Literal('1h'), Type.Literal('24h'), Type.Literal('7d')]),
  requests: Type.Integer({ description: 'calls and tasks begun in the window' }),
  errors: Type.Integer(),
  cost: Type.Number({ description: 'credits' }),
  latency_ms_avg: Type.Union([Type.Integer(), Type.Null()], { description: 'null for 7d (read from the daily aggregate) and for an empty window' }),
  tasks_by_status: Type.Record(Type.String(), Type.Integer(), { description: 'tasks submitted in the window by status' }),
});
const Overview = Type.Object({ windows: Type.Array(OverviewWindow) });

/** A file of the built console, or undefined; never a path outside its folder. */
function consoleFile(relative: string): string | undefined {
  const file = path.resolve(CONSOLE_DIR, relative === '' ? 'index.html' : relative);
  if (!file.startsWith(CONSOLE_DIR)) return undefined;
  try {
    return fs.statSync(file).isFile() ? file : undefined;
  } catch {
    return undefined;
  }
}

/** The web console's pages at /console (public: the pages ask for a token). */
export const consolePageRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const serve = async (wanted: string, reply: FastifyReply) => {
    // Paths without an extension are the app's own pages: the app answers them.
    const file = consoleFile(wanted) ?? (path.extname(wanted) === '' ? consoleFile('') : undefined);
    if (!file) {
      if (!consoleFile('')) throw new ApiError('route_not_found', 'the console is not built: run npm run build');
      throw new ApiError('route_not_found', `no console file ${wanted}`);
    }
    const isIndex = path.basename(file) === 'index.html';
    return reply
      .type(mime.lookup(file) || 'application/octet-stream')
      .header('cache-control', isIndex ? 'no-cache' : 'public, max-age=31536000, immutable')
      .header('content-security-policy', CONSOLE_CSP)
      .header('x-content-type-options', 'nosniff')
      .send(fs.createReadStream(file));
  };
  // Assets are linked as /console/assets/…, so the page works at /console and /console/ alike.
  app.get('/console', { schema: { hide: true } }, async (_request, reply) => serve('', reply));
  app.get('/console/*', { schema: { hide: true } }, async (request, reply) => serve((request.params as { '*': string })['*'], reply));
};

/** The read APIs only the console's admin pages need (the admin group's). */
export const adminConsoleRoutes = (services: AppServices): FastifyPluginAsyncTypebox => async (app) => {
  const overview = new OverviewService(new OverviewRepo(services.db, () => services.usage.written()));

  app.get('/admin/overview', {
    schema: { tags: ['admin'], summary: 'Calls, errors, latency, spend and tasks by status over the last hour, day and week', security, response: { 200: Overview } },
  }, async (request) => {
    // Administrators see everyone's; a console user its own.
    const operator = request.ctx.operatorOrThrow;
    return overview.overview(operator.isAdmin ? undefined : operator.userId);
  });

  app.get('/admin/tasks/:taskId', {
    schema: { tags: ['admin'], summary: "Any user's task status record; 404 task_not_found", security, params: Type.Object({ taskId: Type.String({ minLength: 1, maxLength: 200 }) }) },
  }, async (request) => {
    const row = await services.tasks.load(request.params.taskId);
    // A task the console role does not see is as unknown as one that does not exist.
    if (!row || !request.ctx.operatorOrThrow.sees({ user_id: row.owner_id, team_id: row.team_id }, ['admin'])) throw new ApiError('task_not_found', `no task ${request.params.taskId}`, 'taskId');
    return services.tasks.record(row.owner_id, row.id);
  });
};

/** The caller's own overview, for the console's user pages. */
export const overviewRoutes = (services: AppServices): FastifyPluginAsyncTypebox => async (app) => {
  const overview = new OverviewService(new OverviewRepo(services.db, () => services.usage.written()));

  app.get('/v1/overview', {
    schema: { tags: ['usage'], summary: 'Your calls, errors, latency, spend and tasks by status over the last hour, day and week', security, response: { 200: Overview } },
  }, async (request) => overview.overview(request.ctx.principal.userId));
};
