import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import multipart from '@fastify/multipart';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ApiError } from '../core/errors.ts';
import { newUuid } from '../core/ids.ts';
import { TurnPacer } from '../core/turn-pacer.ts';
import { bodyValidators, textValidators } from '../core/schema-validators.ts';
import { registerErrorHandling } from './plugins/errors.ts';
import { requireApiToken } from './plugins/auth.ts';
import { requireOperator } from './plugins/console-auth.ts';
import { enforceRouteAccess, trackRoutes } from './route-access.ts';
import { teamRoutes } from './routes/teams.ts';
import { consoleSessionRoutes, consoleSignInRoutes } from './routes/console-auth.ts';
import { registerRequestContext } from './request-context.ts';
import { registerMetrics } from './plugins/metrics.ts';
import { registerTracing } from './plugins/tracing.ts';
import { tracingEnabled } from '../telemetry/tracing.ts';
import { registerAdmission } from './plugins/admission.ts';
import { registerBodyChecks } from './plugins/body-checks.ts';
import { adminUsageRoutes, usageRoutes } from './routes/usage.ts';
import { adminRoutes } from './routes/admin.ts';
import { adminChannelRoutes } from './routes/admin-channels.ts';
import { adminCallbackRoutes } from './routes/admin-callbacks.ts';
import { adminRuntimeSettingsRoutes } from './routes/admin-runtime-settings.ts';
import { registerAudit } from './plugins/audit.ts';
import { adminConsoleRoutes, consolePageRoutes, overviewRoutes } from './routes/console.ts';
import { healthRoutes } from './routes/health.ts';
import { modelRoutes } from './routes/models.ts';
import { fileUploadRoutes, servedFileRoutes } from './routes/files.ts';
import { assetRoutes } from './routes/assets.ts';
import { realtimeRoutes } from './routes/realtime.ts';
import { taskRoutes } from './routes/tasks.ts';
import { chatRoutes } from './routes/chat.ts';
import { responseRoutes } from './routes/responses.ts';
import { skillRoutes } from './routes/skills.ts';
import { agentRoutes } from './routes/agents.ts';
import { generationRoutes } from './routes/generations.ts';
import { videoRoutes } from './routes/video.ts';
import { digitalHumanRoutes } from './routes/digital-human.ts';
import { mesh3dRoutes } from './routes/mesh3d.ts';
import { audioRoutes } from './routes/audio.ts';
import { imageEditRoutes } from './routes/image-edits.ts';
import { embeddingRoutes, rerankRoutes } from './routes/embeddings.ts';
import { openAiAudioRoutes } from './routes/audio-openai.ts';
import { OPENAI_PREFIX, openAiRoutes } from './routes/openai.ts';
import { adminBatchRoutes } from './routes/openai-batches.ts';
import { ANTHROPIC_KEY_HEADER, ANTHROPIC_PREFIX, anthropicRoutes } from './routes/anthropic.ts';
import { mcpRoutes } from './routes/mcp.ts';
import type { AppServices } from './services.ts';

const REQUEST_ID = /^[\w.:-]{1,128}$/;
/**
 * How long new calls may be set up in one turn of the event loop before later ones wait for the
 * next: short enough that streams under way are relayed between, long enough that a steady load
 * (a few dozen calls a turn) never waits.
 */
const CALL_SETUP_BUDGET_MS = 10;

/** One access-log line per request, when it completes (not two, as Fastify's default writes). */
class AccessLog extends LogController {
  constructor() {
    super({ requestIdLogLabel: 'request_id' });
  }

  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const line = { method: request.method, url: request.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime * 10) / 10 };
    if (error) reply.log.error({ ...line, err: error }, 'request errored');
    else reply.log.info(line, 'request');
  }
}

function containsNul(value: unknown): boolean {
  if (typeof value === 'string') return value.includes('\0');
  if (Array.isArray(value)) return value.some(containsNul);
  if (value && typeof value === 'object') return Object.entries(value).some(([k, v]) => k.includes('\0') || containsNul(v));
  return false;
}

/** Builds the HTTP application over the given services; does not listen. */
export async function buildApp(services: AppServices): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: services.logger as FastifyBaseLogger,
    logController: new AccessLog(),
    bodyLimit: services.settings.maxJsonBytes,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : newUuid();
    },
    routerOptions: { ignoreTrailingSlash: true },
  }).withTypeProvider<TypeBoxTypeProvider>();

  // Bodies are JSON or multipart only; a text/plain body is a wrong content type, not a string.
  app.removeContentTypeParser('text/plain');
  // NUL characters are refused at the edge: PostgreSQL cannot store them and SQLite can, so
  // letting them in would make the two stores answer differently.
  const parseJson = app.getDefaultJsonParser('error', 'ignore');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    parseJson(request, body as string, (err, value) => {
      if (!err && (body as string).includes('\\u0000') && containsNul(value)) done(new ApiError('invalid_parameter', 'text values cannot contain NUL characters'), undefined);
      else done(err, value);
    });
  });
  // First of all hooks: every later hook, even of a request refused at once, reads its context.
  registerRequestContext(app);
  trackRoutes(app);
  // Callback-style hooks on every request: no promise per hook on the hot path.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done(request.url.includes('%00') ? new ApiError('invalid_parameter', 'the URL cannot contain NUL characters') : undefined);
  });

  // Bodies are taken as sent (a string is never a number); query and path values are text and get coerced.
  app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === 'body' ? bodyValidators : textValidators).compile(schema));

  registerErrorHandling(app);
  registerMetrics(app, services.metrics);
  if (tracingEnabled()) registerTracing(app);
  app.addHook('onClose', async () => services.metrics.clear());
  // A worker (ROLE=worker) answers its health and metrics, nothing else.
  if (services.settings.role === 'worker') {
    await app.register(healthRoutes(services));
    return app;
  }
  await app.register(multipart, {
    limits: {
      fileSize: services.settings.maxFileBytes,
      // A base64 `file` field carries up to 4/3 of the byte limit plus a data-URI prefix.
      fieldSize: Math.ceil((services.settings.maxFileBytes * 4) / 3) + 1024,
      files: 32,
      fields: 64,
    },
    throwFileSizeLimit: true,
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Gengate API', version: '1', description: 'One API in front of many generative-AI providers and workflow engines.' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs', staticCSP: true });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  // Each route is registered in the group whose hooks it needs; the group decides, never the URL.
  // Public: health, the console's pages, served files, the docs and the OpenAPI document.
  await app.register(healthRoutes(services));
  await app.register(consolePageRoutes);
  await app.register(consoleSignInRoutes(services));
  await app.register(servedFileRoutes(services));

  // One pacer for every admitted call, whichever API it came by.
  const pacer = new TurnPacer(CALL_SETUP_BUDGET_MS);
  // API tokens on /v1, /openai/v1, /mcp, /api and /upload; admission on /v1 and /openai/v1 (and /anthropic, below).
  await app.register(async (api) => {
    requireApiToken(api, services.tokens);
    await api.register(async (admitted) => {
      registerAdmission(admitted, { ...services, pacer });
      // After admission: a refused body still counts against the caller's rate, and is in the ledger.
      registerBodyChecks(admitted, { bareWritesTakeObjects: false });
      await admitted.register(overviewRoutes(services));
      await admitted.register(modelRoutes(services));
      await admitted.register(fileUploadRoutes(services));
      await admitted.register(realtimeRoutes(services));
      await admitted.register(generationRoutes(services));
      await admitted.register(videoRoutes(services));
      await admitted.register(digitalHumanRoutes(services));
      await admitted.register(mesh3dRoutes(services));
      await admitted.register(audioRoutes(services));
      await admitted.register(imageEditRoutes(services));
      await admitted.register(taskRoutes(services));
      await admitted.register(chatRoutes(services));
      await admitted.register(responseRoutes(services));
      await admitted.register(skillRoutes(services));
      await admitted.register(agentRoutes(services, '/v1/agents'));
      await admitted.register(usageRoutes(services));
      await admitted.register(embeddingRoutes(services), { prefix: '/v1' });
      await admitted.register(openAiAudioRoutes(services), { prefix: '/v1' });
      await admitted.register(rerankRoutes(services));
      await admitted.register(openAiRoutes(services), { prefix: OPENAI_PREFIX });
    });
    // MCP: API tokens, no admission (a gateway tool's call is admitted as a request of its endpoint).
    await api.register(async (mcp) => {
      // A client that must authenticate learns how (RFC 6750).
      mcp.addHook('onSend', (_request, reply, payload, done) => {
        if (reply.statusCode === 401) reply.header('www-authenticate', 'Bearer');
        done(null, payload);
      });
      await mcp.register(mcpRoutes(services));
    });
    await api.register(async (assets) => {
      registerBodyChecks(assets, { bareWritesTakeObjects: false });
      await assets.register(assetRoutes(services));
    });
  });

  // Anthropic's API on /anthropic: API tokens as x-api-key or bearer, the same admission as /v1,
  // Anthropic's error shape and its request-id header on every answer (a refused token's too).
  await app.register(async (anthropic) => {
    anthropic.addHook('onRequest', (request, reply, done) => {
      reply.header('request-id', request.id);
      done();
    });
    anthropic.addHook('onRoute', (route) => {
      route.config = { ...route.config, errorShape: 'anthropic' };
    });
    requireApiToken(anthropic, services.tokens, ANTHROPIC_KEY_HEADER);
    registerAdmission(anthropic, { ...services, pacer });
    registerBodyChecks(anthropic, { bareWritesTakeObjects: false });
    await anthropic.register(anthropicRoutes(services));
  }, { prefix: ANTHROPIC_PREFIX });

  // The console's own: who the caller is, and its sign-out (a session, the admin token or an API token).
  await app.register(async (console) => {
    requireOperator(console, services, { apiTokens: true });
    enforceRouteAccess(console);
    await console.register(consoleSessionRoutes(services));
  });

  // The admin token, or a console session within its roles (route-access.ts), on /admin.
  await app.register(async (admin) => {
    requireOperator(admin, services);
    enforceRouteAccess(admin);
    registerBodyChecks(admin, { bareWritesTakeObjects: true });
    await admin.register(teamRoutes(services));
    registerAudit(admin, services.audit);
    await admin.register(adminRoutes(services));
    await admin.register(adminRuntimeSettingsRoutes(services));
    await admin.register(adminCallbackRoutes(services));
    await admin.register(adminConsoleRoutes(services));
    await admin.register(adminChannelRoutes(services));
    await admin.register(agentRoutes(services, '/admin/agents'));
    await admin.register(adminUsageRoutes(services));
    await admin.register(adminBatchRoutes(services));
  });
  return app;
}
