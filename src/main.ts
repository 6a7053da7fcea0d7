import path from 'node:path';
import pino, { type Logger } from 'pino';
import type { FastifyInstance } from 'fastify';
import type { Settings } from './config/settings.ts';
import { RuntimeConfig } from './config/runtime-config.ts';
import { loadCatalog } from './catalog/catalog.ts';
import { openDb } from './storage/db.ts';
import { FsBlobStore } from './storage/blobs/fs-blob-store.ts';
import { TokensRepo } from './storage/repos/tokens-repo.ts';
import { SettingsRepo } from './storage/repos/settings-repo.ts';
import { FilesRepo } from './storage/repos/files-repo.ts';
import { TokenService, resolveAdminToken } from './auth/tokens.ts';
import { FileService } from './files/file-service.ts';
import { AssetsRepo } from './storage/repos/assets-repo.ts';
import { AssetService } from './assets/asset-service.ts';
import { buildApp } from './http/app.ts';
import type { AppServices } from './http/services.ts';

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

/** Boots everything from settings: catalog, store, services, HTTP server, background sweepers. */
export async function startServer(settings: Settings, logger: Logger = pino({ level: settings.logLevel })): Promise<RunningServer> {
  // The catalog is checked first so a bad file stops the start before anything is touched.
  const catalog = loadCatalog({ path: settings.catalogPath, config: settings.config });
  const db = await openDb({ databaseUrl: settings.databaseUrl, dataDir: settings.dataDir, pgSchema: settings.databaseSchema });
  const blobs = new FsBlobStore(path.join(settings.dataDir, 'blobs'));
  const admin = resolveAdminToken(settings.dataDir, settings.adminToken);
  const tokens = new TokenService(new TokensRepo(db), admin.hash);
  const runtimeConfig = new RuntimeConfig(new SettingsRepo(db), settings.config.callback);
  let baseUrl = settings.publicBaseUrl ?? `http://${settings.host}:${settings.port}`;
  const files = new FileService(new FilesRepo(db), blobs, { publicBaseUrl: () => baseUrl, retentionMs: settings.fileRetentionMs });

  const assets = new AssetService(new AssetsRepo(db), blobs, { logger: logger.child({ component: 'assets' }) });
  const services: AppServices = { settings, logger, db, blobs, tokens, runtimeConfig, catalog, files, assets };
  const app = await buildApp(services);
  await app.listen({ port: settings.port, host: settings.host });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : settings.port;
  const url = `http://${settings.host.includes(':') ? `[${settings.host}]` : settings.host}:${port}`;
  if (!settings.publicBaseUrl) baseUrl = url;

  const sweep = () => files.sweep().catch((err: unknown) => logger.error({ err }, 'file sweep failed'));
  const sweepTimer = setInterval(sweep, Math.min(60_000, Math.max(250, Math.floor(settings.fileRetentionMs / 4))));
  sweepTimer.unref();
  void sweep();

  return {
    app,
    url,
    createdAdminToken: admin.createdToken,
    services,
    close: async () => {
      clearInterval(sweepTimer);
      await app.close();
      await db.close();
    },
  };
}
