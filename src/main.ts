import pino, { type Logger } from 'pino';
import type { FastifyInstance } from 'fastify';
import type { Settings } from './config/settings.ts';
import { RuntimeConfig } from './config/runtime-config.ts';
import { BUILTIN_CATALOG_PATH, readCatalogDocument } from './catalog/catalog.ts';
import { SecretBox } from './config/secret-box.ts';
import { emptyStoredConfig, mergeConfig } from './config/stored-config.ts';
import { openDb } from './storage/db.ts';
import { openBlobStore } from './storage/blobs/open-blob-store.ts';
import { TokensRepo } from './storage/repos/tokens-repo.ts';
import { SettingsRepo } from './storage/repos/settings-repo.ts';
import { FilesRepo } from './storage/repos/files-repo.ts';
import { TokenService, resolveAdminToken } from './auth/tokens.ts';
import { FileService } from './files/file-service.ts';
import { AssetsRepo } from './storage/repos/assets-repo.ts';
import { AssetService } from './assets/asset-service.ts';
import { buildApp } from './http/app.ts';
import { createMetricsRegistry } from './http/plugins/metrics.ts';
import { TaskMetrics } from './tasks/task-metrics.ts';
import type { AppServices } from './http/services.ts';
import { InProcessEventBus, type EventBus } from './storage/event-bus.ts';
import { TasksRepo } from './storage/repos/tasks-repo.ts';
import { DbTaskQueue } from './tasks/db-task-queue.ts';
import type { TaskQueue } from './tasks/task-queue.ts';
import { TaskService } from './tasks/task-service.ts';
import { TaskRunner } from './tasks/task-runner.ts';
import { TaskOutputStore } from './tasks/task-output-store.ts';
import { TaskEventStreams } from './tasks/task-event-streams.ts';
import { OutputRetention } from './tasks/output-retention.ts';
import { InputReader, ownFileRef } from './tasks/input-reader.ts';
import { OutboundFetcher, type HostResolver } from './tasks/outbound-fetch.ts';
import { OutboundUrlPolicy } from './core/outbound-urls.ts';
import { gracefulCloser } from './core/graceful-close.ts';
import { GenerationService } from './tasks/generation-service.ts';
import { ImageService } from './images/service.ts';
import { VideoService } from './video/service.ts';
import { AudioService } from './audio/service.ts';
import { DigitalHumanGenerations } from './digital-human/digital-human-generations.ts';
import { Mesh3dService } from './mesh3d/service.ts';
import type { EngineRegistry } from './providers/registry.ts';
import { ConversationsRepo } from './storage/repos/conversations-repo.ts';
import { ChatService } from './chat/chat-service.ts';
import { AnthropicMessagesService } from './anthropic/messages-service.ts';
import { AGENT_DEFAULTS, createAgentServices } from './agent/create-agent-services.ts';
import { DigitalHumanRepo } from './storage/repos/digital-human-repo.ts';
import { DigitalHumanService } from './digital-human/digital-human-service.ts';
import { DIGITAL_HUMAN_CREATE } from './endpoints/digital-human-engines.ts';
import { recordCreatedResource } from './digital-human/record-created-resource.ts';
import { CallbacksRepo } from './storage/repos/callbacks-repo.ts';
import { CallbackDispatcher } from './tasks/callback-dispatcher.ts';
import { WsTicketsRepo } from './storage/repos/ws-tickets-repo.ts';
import { WsTicketService } from './realtime/ws-ticket-service.ts';
import { createRealtimeGateway } from './realtime/realtime-gateway.ts';
import { startRealtimeServer } from './realtime/realtime-server.ts';
import { LimitsRepo } from './storage/repos/limits-repo.ts';
import { UsageRepo } from './storage/repos/usage-repo.ts';
import { IdempotencyRepo } from './storage/repos/idempotency-repo.ts';
import { LimitsService } from './limits/limits-service.ts';
import { MemoryLimitCounters } from './limits/counters.ts';
import { IdempotencyService } from './limits/idempotency.ts';
import { UsageLedger } from './limits/usage-ledger.ts';
import { EmbeddingService } from './embeddings/service.ts';
import { RerankService } from './rerank/service.ts';
import { TranscriptionService } from './audio/transcription-service.ts';
import { SpeechAudioService } from './audio/speech-audio.ts';
import { OpenAiResponsesService } from './openai/responses-service.ts';
import { OpenAiResponsesRepo } from './storage/repos/openai-responses-repo.ts';
import { ChannelRouter } from './routing/router.ts';
import { TaskRouting } from './routing/task-routing.ts';
import { RoutedChatModels } from './routing/routed-chat.ts';
import { ChannelsRepo } from './storage/repos/channels-repo.ts';
import { startTracing } from './telemetry/tracing.ts';
import { OpenAiFilesRepo } from './storage/repos/openai-files-repo.ts';
import { BatchesRepo } from './storage/repos/batches-repo.ts';
import { OpenAiFileService } from './batches/openai-files.ts';
import { BatchService } from './batches/batch-service.ts';
import { BatchRunner } from './batches/batch-runner.ts';
import { batchLineExecutor } from './http/batch-lines.ts';
import { ModelList } from './limits/model-list.ts';
import { McpRepo } from './storage/repos/mcp-repo.ts';
import { McpService } from './mcp/mcp-service.ts';
import { GatewayTools } from './mcp/gateway-tools.ts';
import { checkServerUrls, UpstreamServers } from './mcp/upstream-servers.ts';
import { TeamsRepo } from './storage/repos/teams-repo.ts';
import { SessionsRepo } from './storage/repos/sessions-repo.ts';
import { TeamService } from './auth/teams.ts';
import { ConsoleSessions } from './auth/console-sessions.ts';
import { OidcSignIn } from './auth/oidc-sign-in.ts';
import { buildSnapshot, type SnapshotBase } from './runtime-settings/config-snapshot.ts';
import { LiveConfig } from './runtime-settings/live-config.ts';
import { loadInitialSnapshot, RuntimeSettingsService } from './runtime-settings/runtime-settings-service.ts';
import { AuditLog } from './runtime-settings/audit-log.ts';
import { ConfigRecordsRepo } from './storage/repos/config-records-repo.ts';
import { AuditRepo } from './storage/repos/audit-repo.ts';

/** How often waiting tasks are checked against their x-deadline. */
const OVERDUE_SWEEP_MS = 250;
/** Connections queued for accept: the kernel caps it at net.core.somaxconn. */
const LISTEN_BACKLOG = 4096;

export interface RunningServer {
  app: FastifyInstance;
  /** Where the server listens, e.g. http://127.0.0.1:8080. */
  url: string;
  /** The admin token when this start created it (shown once), else undefined. */
  createdAdminToken: string | undefined;
  /** The services behind the app (in-process callers such as the task engine and tests). */
  services: AppServices;
  close(): Promise<void>;
}

/** Parts a caller may supply instead of the ones settings select (tests script engines this way). */
export interface ServerParts {
  engines?: EngineRegistry;
  /** Resolves the host names of URLs fetched for callers (tests answer their own addresses); default the system's DNS. */
  resolveHost?: HostResolver;
}

/** Boots everything from settings: catalog, store, services, HTTP server, workers, background sweepers. */
export async function startServer(settings: Settings, logger: Logger = pino({ level: settings.logLevel }), parts: ServerParts = {}): Promise<RunningServer> {
  // The catalog and GENGATE_CONFIG are checked first so a bad file stops the start before anything is touched.
  const catalogSource = settings.catalogPath ?? BUILTIN_CATALOG_PATH;
  const snapshotBase: SnapshotBase = { document: readCatalogDocument(catalogSource), catalogSource, settings, logger, ...(parts.engines ? { engines: parts.engines } : {}) };
  buildSnapshot(snapshotBase, mergeConfig(settings.config, emptyStoredConfig(), () => ''), 0);
  // Before the app is built: its tracing hooks are added only while tracing is on.
  const tracing = await startTracing(process.env, logger.child({ component: 'telemetry' }));
  const blobs = await openBlobStore(settings.blobStore, settings.dataDir);
  const db = await openDb({ databaseUrl: settings.databaseUrl, dataDir: settings.dataDir, pgSchema: settings.databaseSchema, exclusive: true, logger: logger.child({ component: 'db' }) });
  // The settings stored through the admin API over GENGATE_CONFIG: what every call reads from now on.
  const secrets = new SecretBox(settings.secretKey, settings.secretKeyPrevious);
  const configRecords = new ConfigRecordsRepo(db);
  const live = new LiveConfig(await loadInitialSnapshot(configRecords, snapshotBase, settings.config, secrets).catch(async (err: unknown) => {
    await db.close();
    throw err;
  }));
  const catalog = live.catalog;
  const audit = new AuditLog(new AuditRepo(db), { retentionDays: settings.auditRetentionDays, logger: logger.child({ component: 'audit' }) });
  const admin = resolveAdminToken(settings.dataDir, settings.adminToken);
  const tokens = new TokenService(new TokensRepo(db), admin.hash);
  const runtimeConfig = new RuntimeConfig(new SettingsRepo(db), settings.config.callback);
  let baseUrl = settings.publicBaseUrl ?? `http://${settings.host}:${settings.port}`;
  const files = new FileService(new FilesRepo(db), blobs, { publicBaseUrl: () => baseUrl, retentionMs: settings.fileRetentionMs });
  const urls = new OutboundUrlPolicy({ allowed: settings.fetchAllowHosts, isOwnFile: (url) => ownFileRef(files, url) !== undefined });
  checkServerUrls(settings.mcpServers, urls);

  const assets = new AssetService(new AssetsRepo(db), blobs, {
    sweep: { intervalMs: settings.assetSweepIntervalMs, batchSize: settings.assetSweepBatch },
    logger: logger.child({ component: 'assets' }),
  });

  // With REDIS_URL the instances of a deployment share the queue and every bus message. The Redis
  // clients (ioredis, BullMQ: some 20 MB of memory) are loaded only then.
  const redisBus = settings.redisUrl
    ? await (await import('./storage/redis-event-bus.ts')).RedisEventBus.connect({ url: settings.redisUrl, prefix: settings.redisPrefix, timeoutMs: settings.redisTimeoutMs, logger: logger.child({ component: 'bus' }) })
    : undefined;
  const bus: EventBus = redisBus ?? new InProcessEventBus();
  bus.subscribe('token.revoked', ({ tokenId }) => tokens.forget(tokenId));
  const tasksRepo = new TasksRepo(db);
  const queueLogger = logger.child({ component: 'queue' });
  const heartbeat = { intervalMs: settings.workerHeartbeatMs, ttlMs: settings.workerHeartbeatTtlMs };
  const queue: TaskQueue = settings.redisUrl
    ? new (await import('./tasks/bullmq-task-queue.ts')).BullMqTaskQueue(tasksRepo, { redisUrl: settings.redisUrl, prefix: settings.redisPrefix, timeoutMs: settings.redisTimeoutMs, instanceId: settings.instanceId, heartbeat, logger: queueLogger })
    : new DbTaskQueue(tasksRepo, { instanceId: settings.instanceId, leaseMs: settings.taskLeaseMs, liveness: db.dialect === 'sqlite' ? { sole: true } : { sole: false, ...heartbeat }, logger: queueLogger });
  const metrics = createMetricsRegistry();
  const taskMetrics = new TaskMetrics(metrics);
  const tasks = new TaskService(tasksRepo, bus, queue, runtimeConfig, { instanceId: settings.instanceId, logger: logger.child({ component: 'tasks' }), observe: taskMetrics.observe, outputRetentionMs: settings.outputRetentionMs });
  // Registered first: the domains' end handlers find the stored files in the result.
  tasks.onEnd(() => true, new TaskOutputStore({ files, assets }).onEnd);
  const taskEvents = new TaskEventStreams(tasks, bus, { heartbeatMs: settings.taskEventsHeartbeatMs, logger: logger.child({ component: 'task-events' }) });
  const outputRetention = new OutputRetention({ files, assets, logger });
  const engines = live.engines;
  const findModel = (name: string) => catalog.find(name) ?? engines.findModel?.(name);
  // Limits and the ledger: every task settles in the transaction that ends it. Shared counters with Redis.
  const limitsLogger = logger.child({ component: 'limits' });
  const usageRepo = new UsageRepo(db);
  const limits = new LimitsService(new LimitsRepo(db), usageRepo, bus, {
    counters: settings.redisUrl
      ? await (await import('./limits/redis-counters.ts')).RedisLimitCounters.connect({ url: settings.redisUrl, prefix: settings.redisPrefix, timeoutMs: settings.redisTimeoutMs, logger: limitsLogger })
      : new MemoryLimitCounters(),
    shared: settings.redisUrl !== undefined,
    modelInfo: (name) => {
      const model = findModel(name);
      return model && { alias: model.alias, provider: model.providerCode, pricing: live.current().config.models?.[model.alias]?.pricing };
    },
    // A slot or hold nobody settles (its holder died mid-call) lapses after the longest a call waits.
    holdMs: Math.max(settings.syncTimeoutMs * 2, 24 * 60 * 60 * 1000),
    logger: limitsLogger,
  });
  tasks.onEnd(() => true, limits.onTaskEnd);
  await limits.start();
  const usage = new UsageLedger(usageRepo, { retentionDays: settings.usageRetentionDays, logger: limitsLogger });
  usage.startRetention();
  const idempotency = new IdempotencyService(new IdempotencyRepo(db), { abandonAfterMs: settings.syncTimeoutMs + 60_000 });
  idempotency.startSweep((err) => limitsLogger.error({ err }, 'idempotency key sweep failed'));
  const digitalHumans = new DigitalHumanService(new DigitalHumanRepo(db));
  tasks.onEnd(DIGITAL_HUMAN_CREATE, recordCreatedResource(digitalHumans));
  const generations = new GenerationService({ catalog, engines, tasks, urls, syncTimeoutMs: settings.syncTimeoutMs });
  const routing = new ChannelRouter({
    specs: [...live.current().specs],
    policy: live.current().policy,
    findModel,
    fallbacks: (alias) => live.current().config.models?.[alias]?.fallbacks ?? [],
    modelsOf: (provider) => catalog.models.filter((m) => m.providerCode === provider).map((m) => m.alias),
    bus,
    repo: new ChannelsRepo(db),
    metrics,
    instanceId: settings.instanceId,
    logger: logger.child({ component: 'routing' }),
  });
  await routing.start();
  live.onChange((snapshot) => routing.reconfigure(snapshot.specs, snapshot.policy));
  const runtimeSettings = new RuntimeSettingsService({
    repo: configRecords, live, base: snapshotBase, file: settings.config, secrets, bus, instanceId: settings.instanceId, checkIntervalMs: settings.configCheckIntervalMs, logger: logger.child({ component: 'runtime-settings' }),
  });
  runtimeSettings.start();
  audit.startRetention();
  const images = new ImageService(generations);
  const video = new VideoService(generations);
  const audio = new AudioService(generations);
  const digitalHumanGenerations = new DigitalHumanGenerations({ generations, resources: digitalHumans });
  const mesh3d = new Mesh3dService({ db, generations, tasks, files, assets });
  const chatModels = live.chatModels;
  const conversations = new ConversationsRepo(db);
  const chat = new ChatService({
    models: new RoutedChatModels(routing, chatModels),
    resolveModel: (alias, capabilities) => generations.resolveModel(alias, capabilities),
    files,
    conversations,
    urls,
    maxFileBytes: settings.maxFileBytes,
  });
  const fetcher = new OutboundFetcher({ policy: urls, maxBytes: settings.maxFileBytes, timeoutMs: settings.fetchTimeoutMs, resolve: parts.resolveHost });
  const inputs = new InputReader({ files, assets, blobs, maxBytes: settings.maxFileBytes, fetcher });
  const runner = new TaskRunner({ tasks, catalog, engines, routing: new TaskRouting(routing, engines), files, bus, inputs, instanceId: settings.instanceId, logger: logger.child({ component: 'worker' }) });
  const realtimeLogger = logger.child({ component: 'realtime' });
  const wsTickets = new WsTicketService(new WsTicketsRepo(db), { logger: realtimeLogger });

  const callbacks = new CallbackDispatcher(new CallbacksRepo(db), bus, runtimeConfig, { logger: logger.child({ component: 'callbacks' }), historyMs: settings.callbackHistoryMs });
  const modelList = new ModelList({ catalog, generations, pricingOf: (alias) => live.current().config.models?.[alias]?.pricing, snapshot: () => live.current() });
  const mcpLogger = logger.child({ component: 'mcp' });
  const upstreamMcp = new UpstreamServers({ list: () => live.mcpServers(), find: (name: string) => live.mcpServers().find((s) => s.name === name) }, { fetch: fetcher.fetch, timeoutMs: settings.mcpCallTimeoutMs, logger: mcpLogger });
  const gatewayTools = new GatewayTools({
    images, video, audio, digitalHumans: digitalHumanGenerations, mesh3d, tasks, bus, limits, modelList,
    models: () => [...catalog.list(), ...generations.engineModels()],
    waitMs: settings.mcpCallTimeoutMs,
  });
  const mcp = new McpService({ gateway: gatewayTools, upstream: upstreamMcp, repo: new McpRepo(db), limits, urls, logger: mcpLogger });
  const agents = await createAgentServices({ db, bus, tasks, modalities: { images, video, audio, mesh3d }, chat, conversations, settings, mcp, logger: logger.child({ component: 'agent' }) });
  const syncModels = live.syncModels;
  const resolveModel = generations.resolveModel.bind(generations);
  const embeddings = new EmbeddingService({ models: syncModels.embeddings, resolveModel });
  const rerank = new RerankService({ models: syncModels.rerankers, resolveModel });
  const transcriptions = new TranscriptionService({ models: syncModels.transcriptions, resolveModel });
  const speechAudio = new SpeechAudioService({ audio, files });
  const openaiResponses = new OpenAiResponsesService({ chat, store: new OpenAiResponsesRepo(db), mcp, maxSteps: settings.config.agent?.max_steps ?? AGENT_DEFAULTS.maxSteps });
  const openaiFiles = new OpenAiFileService(new OpenAiFilesRepo(db), blobs);
  const batchesRepo = new BatchesRepo(db);
  // Batches run where tasks run; an API-only instance leaves them to the workers' polls.
  let batchRunner: BatchRunner | undefined;
  const batches = new BatchService(batchesRepo, openaiFiles, { windowMs: settings.batchCompletionWindowMs, wake: () => batchRunner?.kick() });
  const anthropicMessages = new AnthropicMessagesService({ chat, catalog, resolveModel });
  const teamsRepo = new TeamsRepo(db);
  const sessionsRepo = new SessionsRepo(db);
  const teams = new TeamService(teamsRepo);
  const sessions = new ConsoleSessions(sessionsRepo, teamsRepo, { ttlMs: settings.sessionTtlMs, adminUsers: settings.adminUsers });
  sessions.startSweep((err) => logger.error({ err }, 'deleting lapsed console sessions failed'));
  const oidc = settings.oidc && new OidcSignIn(settings.oidc, sessionsRepo, () => `${baseUrl}/console/auth/callback`);
  const services: AppServices = { modelList, mcp, limits, idempotency, usage, redis: redisBus, teams, sessions, oidc,
    settings, logger, metrics, db, blobs, tokens, runtimeConfig, catalog, files, assets, bus, tasks, taskEvents, generations, images, video, audio, digitalHumanGenerations, mesh3d, wsTickets, callbacks, digitalHumans, chat, agents, routing,
    embeddings, rerank, transcriptions, speechAudio, openaiResponses, openaiFiles, batches, anthropicMessages, live, runtimeSettings, audit,
  };
  const app = await buildApp(services);
  const closeApp = gracefulCloser(app.server);
  const realtime = createRealtimeGateway({ bus, tokens, tasks, approvals: agents.approvals, tickets: wsTickets, settings, logger: realtimeLogger });
  // A worker answers /healthz and /metrics only.
  const servesApi = settings.role !== 'worker';
  const runsTasks = settings.role !== 'api';
  if (servesApi) app.server.on('upgrade', realtime.upgradeListener('/realtime'));
  // Node's default backlog (511) drops the connects of a larger burst, which retry a second later.
  await app.listen({ port: settings.port, host: settings.host, backlog: LISTEN_BACKLOG });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : settings.port;
  const url = `http://${settings.host.includes(':') ? `[${settings.host}]` : settings.host}:${port}`;
  if (!settings.publicBaseUrl) baseUrl = url;
  const realtimeServer = settings.realtimePort === undefined || !servesApi ? undefined : await startRealtimeServer(realtime, { host: settings.host, port: settings.realtimePort });
  if (realtimeServer) realtimeLogger.info({ port: realtimeServer.port }, 'realtime gateway listening on its own port');

  const sweep = () => {
    void files.sweep().catch((err: unknown) => logger.error({ err }, 'file sweep failed'));
    void outputRetention.sweep().catch((err: unknown) => logger.error({ err }, 'output retention sweep failed'));
  };
  const shortestRetentionMs = Math.min(settings.fileRetentionMs, settings.outputRetentionMs ?? Infinity);
  const sweepTimer = setInterval(sweep, Math.min(60_000, Math.max(250, Math.floor(shortestRetentionMs / 4))));
  sweepTimer.unref();
  void sweep();
  assets.sweeper.start();
  // Fails waiting tasks past their x-deadline within a second, busy workers or not.
  let overdueSweep: NodeJS.Timeout | undefined;
  if (runsTasks) {
    queue.start(runner.handle, settings.workerConcurrency);
    callbacks.start();
    overdueSweep = setInterval(() => void tasks.failOverdue().catch((err: unknown) => logger.error({ err }, 'failing overdue tasks failed')), OVERDUE_SWEEP_MS);
    overdueSweep.unref();
    batchRunner = new BatchRunner({
      repo: batchesRepo,
      files: openaiFiles,
      execute: batchLineExecutor(services),
      instanceId: settings.instanceId,
      concurrency: settings.batchConcurrency,
      // The lease is the instance's heartbeat for its batches: a dead instance's are taken over after its TTL.
      leaseMs: settings.workerHeartbeatTtlMs,
      renewMs: settings.workerHeartbeatMs,
      sole: db.dialect === 'sqlite',
      logger: logger.child({ component: 'batches' }),
    });
    batchRunner.start();
  }

  return {
    app,
    url,
    createdAdminToken: admin.createdToken,
    services,
    close: async () => {
      clearInterval(sweepTimer);
      clearInterval(overdueSweep);
      await assets.sweeper.stop();
      // WebSocket connections first: the HTTP servers wait for every open connection.
      await realtime.close();
      await realtimeServer?.close();
      // Agent streams end, and synchronous callers still waiting get the async body, so the HTTP server can close.
      agents.close();
      taskEvents.close();
      await mcp.close();
      await upstreamMcp.close();
      tasks.close();
      await closeApp(() => app.close());
      // Before the queue stops: a running image line waits for its task.
      await batchRunner?.stop();
      await queue.stop();
      runner.close();
      routing.close();
      runtimeSettings.close();
      audit.stop();
      await fetcher.close();
      // Before the database closes: the sends in flight get their outcome recorded.
      await callbacks.stop();
      usage.stop();
      sessions.stop();
      idempotency.stopSweep();
      await limits.close();
      await bus.close();
      await db.close();
      blobs.close?.();
      await tracing?.shutdown();
    },
  };
}
