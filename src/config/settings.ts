import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Type, type Static } from 'typebox';
import { Value } from 'typebox/value';
import { AllowedHosts } from '../core/outbound-urls.ts';

/**
 * One channel of a provider: its own endpoint and key, and how calls are spread over the
 * provider's channels. Fields left out take the provider's own settings.
 */
export const ChannelSettings = Type.Object({
  /** Names the channel in /admin/channels, metrics and generate_info.routing; unique within its provider. */
  name: Type.String({ minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9._-]+$' }),
  base_url: Type.Optional(Type.String({ minLength: 1 })),
  api_key_env: Type.Optional(Type.String({ minLength: 1 })),
  /** Share of the calls within its priority tier (default 1). */
  weight: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
  /** Lower numbers are tried first (default 0). */
  priority: Type.Optional(Type.Integer()),
  /** Catalog aliases the channel serves (default: every model of the provider). */
  models: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { minItems: 1 })),
  /** Concurrent upstream requests on this channel (default: the provider's). */
  concurrency: Type.Optional(Type.Integer({ minimum: 1 })),
  /** Adapter options merged over the provider's. */
  options: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
}, { additionalProperties: false });
export type ChannelSettings = Static<typeof ChannelSettings>;

/** Connection and behaviour of one upstream provider, from GENGATE_CONFIG. */
export const ProviderSettings = Type.Object({
  /** Which adapter speaks to this provider (default: the provider code), e.g. `openai` for any OpenAI-compatible server, or `local`. */
  adapter: Type.Optional(Type.String({ minLength: 1 })),
  /** Upstream base URL, e.g. https://api.openai.com/v1. */
  base_url: Type.Optional(Type.String({ minLength: 1 })),
  /** Name of the environment variable that holds the API key (never the key itself). */
  api_key_env: Type.Optional(Type.String({ minLength: 1 })),
  /** Per-request timeout towards the upstream. */
  timeout_ms: Type.Optional(Type.Integer({ minimum: 1 })),
  /** Concurrent upstream requests allowed for this provider. */
  concurrency: Type.Optional(Type.Integer({ minimum: 1 })),
  /** How often a running upstream task is polled. */
  poll_interval_ms: Type.Optional(Type.Integer({ minimum: 1 })),
  /** A task still running upstream after this long fails. */
  max_wait_ms: Type.Optional(Type.Integer({ minimum: 1 })),
  /** Adapter-specific settings (e.g. a region, an app id, a workflows folder). */
  options: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  /** Retries of transient upstream failures (connection errors, 429, 5xx). */
  retry: Type.Optional(Type.Object({
    attempts: Type.Optional(Type.Integer({ minimum: 0 })),
    base_delay_ms: Type.Optional(Type.Integer({ minimum: 0 })),
    max_delay_ms: Type.Optional(Type.Integer({ minimum: 0 })),
  }, { additionalProperties: false })),
  /** Endpoints and keys calls are spread over; without it the provider's own settings are its one channel. */
  channels: Type.Optional(Type.Array(ChannelSettings, { minItems: 1 })),
}, { additionalProperties: false });
export type ProviderSettings = Static<typeof ProviderSettings>;

/** Prices of a model in credits (limits/pricing.ts computes what a call costs under them). */
const price = (description: string) => Type.Optional(Type.Number({ minimum: 0, description }));

export const ModelPricing = Type.Object({
  input_per_million: price('credits per million input tokens'),
  cached_input_per_million: price('credits per million input tokens read from the upstream\'s prompt cache; default input_per_million'),
  cache_write_per_million: price('credits per million input tokens written to the upstream\'s prompt cache; default input_per_million'),
  output_per_million: price('credits per million output tokens'),
  per_image: price('credits per image made'),
  per_second: price('credits per second of video or audio'),
  per_1k_characters: price('credits per thousand characters of text read out'),
  per_request: price('credits per call or task'),
}, { additionalProperties: false });
export type ModelPricing = Static<typeof ModelPricing>;

/** Deployment override of one catalog model, keyed by alias; live values win over the catalog. */
export const ModelOverride = Type.Object({
  enabled: Type.Optional(Type.Boolean()),
  disabled_reason: Type.Optional(Type.String()),
  disabled_until: Type.Optional(Type.String()),
  /** Capability values merged over the catalog's, per capability key. */
  capabilities: Type.Optional(Type.Record(Type.String(), Type.Record(Type.String(), Type.Unknown()))),
  /** Prices in credits: what calls of this model cost (GET /v1/models/list shows them as billing_mode). */
  pricing: Type.Optional(ModelPricing),
  /** Aliases a call or task moves to, in order, when every channel of this model failed. */
  fallbacks: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
}, { additionalProperties: false });
export type ModelOverride = Static<typeof ModelOverride>;

/** The task callback. */
export const CallbackSettings = Type.Object({
  callback_url: Type.Optional(Type.String()),
  callback_secret: Type.Optional(Type.String()),
  callback_timeout_ms: Type.Optional(Type.Integer({ minimum: 1 })),
  callback_retry_delays_ms: Type.Optional(Type.Array(Type.Integer({ minimum: 0 }))),
}, { additionalProperties: false });
export type CallbackSettings = Static<typeof CallbackSettings>;

/** How calls move between channels and how a failing channel is rested. */
export const RoutingSettings = Type.Object({
  /** Channels one model's call tries before it moves to the next model (default 3). */
  max_attempts: Type.Optional(Type.Integer({ minimum: 1 })),
  /** Failures in a row that cool a channel down (default 5). */
  failure_threshold: Type.Optional(Type.Integer({ minimum: 1 })),
  /** The first cool-down; it doubles on each failed probe up to max_cooldown_ms (default 30000). */
  cooldown_ms: Type.Optional(Type.Integer({ minimum: 1 })),
  /** The longest cool-down (default 600000). */
  max_cooldown_ms: Type.Optional(Type.Integer({ minimum: 1 })),
}, { additionalProperties: false });
export type RoutingSettings = Static<typeof RoutingSettings>;

/** An MCP server's header value: `env:VAR` reads the variable, anything else is the value itself (a secret). */
export const McpHeaderValue = Type.String({ minLength: 1, maxLength: 8192 });

/** One upstream MCP server (Streamable HTTP) whose tools the gateway lists and forwards. */
export const McpServerSettings = Type.Object({
  /** Names the server in tool names (`<name>__<tool>`) and in /mcp/<name>; `gengate` is the gateway's own. */
  name: Type.String({ minLength: 1, maxLength: 64, pattern: '^[a-z0-9_-]+$' }),
  url: Type.String({ minLength: 1, maxLength: 2048, pattern: '^https?://' }),
  headers: Type.Optional(Type.Record(Type.String({ minLength: 1, maxLength: 200, pattern: '^[A-Za-z0-9!#$%&\'*+.^_`|~-]+$' }), McpHeaderValue)),
  /** The only tools of the server listed and callable (default all). */
  tools: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 200 }))),
}, { additionalProperties: false });
export type McpServerSettings = Static<typeof McpServerSettings>;

/** The JSON document in GENGATE_CONFIG. */
export const GengateConfig = Type.Object({
  providers: Type.Optional(Type.Record(Type.String(), ProviderSettings)),
  models: Type.Optional(Type.Record(Type.String(), ModelOverride)),
  /** The model a request naming none gets, by capability type (e.g. `image_generate`: an alias); checked against the catalog at start. */
  default_models: Type.Optional(Type.Record(Type.String(), Type.String({ minLength: 1 }))),
  callback: Type.Optional(CallbackSettings),
  routing: Type.Optional(RoutingSettings),
  limits: Type.Optional(Type.Object({
    /** Largest accepted file, in bytes (default 20 MB). */
    max_file_bytes: Type.Optional(Type.Integer({ minimum: 1 })),
    /** Largest accepted JSON body, in bytes. */
    max_json_bytes: Type.Optional(Type.Integer({ minimum: 1 })),
    /** How long uploaded files live, in milliseconds (default 24 h). */
    file_retention_ms: Type.Optional(Type.Integer({ minimum: 1 })),
  }, { additionalProperties: false })),
  /** The /v1/responses agent: tools that wait for the user's agent.approval, how long, and model calls per run. */
  agent: Type.Optional(Type.Object({
    approval_tools: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
    approval_timeout_ms: Type.Optional(Type.Integer({ minimum: 1 })),
    max_steps: Type.Optional(Type.Integer({ minimum: 1, maximum: 64 })),
  }, { additionalProperties: false })),
  /** Upstream MCP servers; also managed through /admin/mcp-servers. */
  mcp_servers: Type.Optional(Type.Array(McpServerSettings)),
}, { additionalProperties: false });
export type GengateConfig = Static<typeof GengateConfig>;

/** Which parts of the gateway a process runs. */
export const ROLES = ['all', 'api', 'worker'] as const;
export type Role = (typeof ROLES)[number];

/** Where uploads, task outputs and asset contents live (BLOB_STORE). */
export type BlobStoreSettings =
  | { kind: 'fs' }
  | { kind: 's3'; bucket: string; endpoint: string | undefined; region: string; forcePathStyle: boolean };

/** Every setting of the process, read from the environment once at boot. */
export interface Settings {
  port: number;
  host: string;
  realtimePort: number | undefined;
  dataDir: string;
  databaseUrl: string | undefined;
  redisUrl: string | undefined;
  /** PUBLIC_BASE_URL when set; otherwise the listening address is used. */
  publicBaseUrl: string | undefined;
  /** PostgreSQL schema (DATABASE_SCHEMA) holding the tables; default the connection's search path. */
  databaseSchema: string | undefined;
  adminToken: string | undefined;
  catalogPath: string | undefined;
  config: GengateConfig;
  localEngineMinDurationMs: number;
  syncTimeoutMs: number;
  maxFileBytes: number;
  maxJsonBytes: number;
  fileRetentionMs: number;
  /** FETCH_TIMEOUT_MS: how long fetching one URL a caller handed in may take, redirects and body included. */
  fetchTimeoutMs: number;
  /** FETCH_ALLOW_HOSTS: hosts, addresses and CIDR ranges exempt from the outbound URL policy. */
  fetchAllowHosts: AllowedHosts;
  logLevel: string;
  /** Names this process in task records (queue_status.server) and queue leases. */
  instanceId: string;
  /** Tasks one process runs at once. */
  workerConcurrency: number;
  /** Lines of one batch (/openai/v1/batches) running at once (BATCH_CONCURRENCY). */
  batchConcurrency: number;
  /** How long a batch's 24h completion window really lasts (BATCH_COMPLETION_WINDOW_MS); shortened only to test expiry. */
  batchCompletionWindowMs: number;
  /** How long a worker's claim on a task lasts without renewal before another worker may take it over. */
  taskLeaseMs: number;
  /** How often an instance sharing the store or Redis tells the others it is alive (WORKER_HEARTBEAT_MS). */
  workerHeartbeatMs: number;
  /** An instance silent this long is dead and its running tasks are taken over (WORKER_HEARTBEAT_TTL_MS). */
  workerHeartbeatTtlMs: number;
  /** Prefix of every Redis key and channel, so deployments (and tests) can share one Redis. */
  redisPrefix: string;
  /** REDIS_TIMEOUT_MS: the longest a call waits for Redis (a command, a connection attempt) before it goes on without it. */
  redisTimeoutMs: number;
  /** session.challenge.timeoutMs: the whole realtime handshake must finish within it. */
  realtimeHandshakeTimeoutMs: number;
  /** Interval of realtime heartbeats; a connection that misses one is dropped. */
  realtimeHeartbeatMs: number;
  /** How long delivered and given-up callback deliveries stay listed in GET /admin/callbacks. */
  callbackHistoryMs: number;
  /** session.challenge.authRequired: realtime sessions must authenticate before they are ready. */
  realtimeAuthRequired: boolean;
  /** ASSET_SWEEP_INTERVAL_MS: time between two batches of the missing-content sweep of the asset registry; 0 turns it off. */
  assetSweepIntervalMs: number;
  /** ASSET_SWEEP_BATCH: asset contents the sweep checks per batch. */
  assetSweepBatch: number;
  /** ROLE: `api` serves HTTP and realtime and queues tasks, `worker` runs tasks and callbacks, `all` both. */
  role: Role;
  blobStore: BlobStoreSettings;
  /** FILES_DELIVERY: /files/… bytes streamed through the gateway, or a 302 to a presigned URL of the store. */
  filesDelivery: 'proxy' | 'redirect';
  /** FILES_REDIRECT_TTL_SECONDS: how long a presigned URL of a redirect works. */
  filesRedirectTtlSeconds: number;
  /** USAGE_RETENTION_DAYS: usage ledger rows older than this are deleted (daily sums stay); 0 keeps them. */
  usageRetentionDays: number;
  /** OUTPUT_RETENTION_DAYS in milliseconds: how long task outputs are kept; undefined keeps them forever. */
  outputRetentionMs: number | undefined;
  /** TASK_EVENTS_HEARTBEAT_MS: a task event stream sends a comment line when no event went for this long. */
  taskEventsHeartbeatMs: number;
  /** GENGATE_CONFIG.mcp_servers with their header values read from the environment. */
  mcpServers: McpServer[];
  /** MCP_CALL_TIMEOUT_MS: how long an MCP tools/call waits for its task before answering its current status. */
  mcpCallTimeoutMs: number;
  /** ADMIN_USERS: user ids that administer everything when signed in to the console. */
  adminUsers: string[];
  /** SESSION_TTL_HOURS: how long a console sign-in lasts. */
  sessionTtlMs: number;
  /** Console sign-in with OpenID Connect, when OIDC_ISSUER is set. */
  oidc: OidcSettings | undefined;
  /** GENGATE_SECRET_KEY: the AES-256 key stored secrets (API keys, MCP header values) are encrypted under. */
  secretKey: Buffer | undefined;
  /** GENGATE_SECRET_KEY_PREVIOUS: an older key secrets stored before a rotation are still read with. */
  secretKeyPrevious: Buffer | undefined;
  /** AUDIT_RETENTION_DAYS: audit log rows older than this are deleted; 0 keeps them. */
  auditRetentionDays: number;
  /** CONFIG_CHECK_INTERVAL_MS: how often an instance compares its runtime settings' version with the store's. */
  configCheckIntervalMs: number;
}

/** An upstream MCP server as the gateway connects to it: its headers' values resolved. */
export interface McpServer {
  name: string;
  url: string;
  headers: Record<string, string>;
  tools: string[] | undefined;
}

/** The identity provider of the console's sign-in. */
export interface OidcSettings {
  /** OIDC_ISSUER: its issuer URL (http only for a local issuer). */
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** OIDC_SCOPES, space-separated. */
  scopes: string;
  /** OIDC_USER_CLAIM: the claim holding the user id. */
  userClaim: string;
  /** OIDC_ROLE_CLAIM: a claim (a string or an array) whose value gengate-admin makes an administrator. */
  roleClaim: string | undefined;
}

export class SettingsError extends Error {}

function intSetting(env: NodeJS.ProcessEnv, name: string, fallback: number, min = 0): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new SettingsError(`${name}: expected an integer >= ${min}, got "${raw}"`);
  return n;
}

/** A positive number of days (fractions allowed) as milliseconds; unset: undefined. */
function daysSetting(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return undefined;
  const days = Number(raw);
  if (!Number.isFinite(days) || days <= 0) throw new SettingsError(`${name}: expected a positive number of days (fractions allowed), got "${raw}"`);
  return Math.max(1, Math.round(days * 24 * 60 * 60 * 1000));
}

function boolSetting(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new SettingsError(`${name}: expected true, false, 1 or 0, got "${raw}"`);
}

function choiceSetting<T extends string>(env: NodeJS.ProcessEnv, name: string, choices: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!(choices as readonly string[]).includes(raw)) throw new SettingsError(`${name}: expected one of ${choices.join(', ')}, got "${raw}"`);
  return raw as T;
}

function oidcSettings(env: NodeJS.ProcessEnv): OidcSettings | undefined {
  const issuer = env.OIDC_ISSUER;
  if (!issuer) return undefined;
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    throw new SettingsError(`OIDC_ISSUER: not a URL, got "${issuer}"`);
  }
  const local = ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && local)) throw new SettingsError(`OIDC_ISSUER: must be https (http only for a local issuer), got "${issuer}"`);
  if (!env.OIDC_CLIENT_ID) throw new SettingsError('OIDC_CLIENT_ID: required with OIDC_ISSUER');
  if (!env.OIDC_CLIENT_SECRET) throw new SettingsError('OIDC_CLIENT_SECRET: required with OIDC_ISSUER');
  return {
    issuer,
    clientId: env.OIDC_CLIENT_ID,
    clientSecret: env.OIDC_CLIENT_SECRET,
    scopes: env.OIDC_SCOPES || 'openid email profile',
    userClaim: env.OIDC_USER_CLAIM || 'email',
    roleClaim: env.OIDC_ROLE_CLAIM || undefined,
  };
}

function sessionTtlMs(env: NodeJS.ProcessEnv): number {
  const raw = env.SESSION_TTL_HOURS;
  if (raw === undefined || raw === '') return 12 * 3_600_000;
  const hours = Number(raw);
  if (!Number.isFinite(hours) || hours <= 0) throw new SettingsError(`SESSION_TTL_HOURS: expected a number of hours > 0, got "${raw}"`);
  return Math.round(hours * 3_600_000);
}

function blobStoreSettings(env: NodeJS.ProcessEnv): BlobStoreSettings {
  if (choiceSetting(env, 'BLOB_STORE', ['fs', 's3'], 'fs') === 'fs') return { kind: 'fs' };
  if (!env.S3_BUCKET) throw new SettingsError('S3_BUCKET: required with BLOB_STORE=s3');
  return {
    kind: 's3',
    bucket: env.S3_BUCKET,
    endpoint: env.S3_ENDPOINT || undefined,
    region: env.S3_REGION || env.AWS_REGION || 'us-east-1',
    forcePathStyle: boolSetting(env, 'S3_FORCE_PATH_STYLE', false),
  };
}

/**
 * Split roles share everything through the services: tasks and events through Redis, records
 * through PostgreSQL. Refused without them: an api instance would queue tasks no worker sees.
 */
function roleSetting(env: NodeJS.ProcessEnv): Role {
  const role = choiceSetting(env, 'ROLE', ROLES, 'all');
  if (role !== 'all' && (!env.REDIS_URL || !env.DATABASE_URL)) throw new SettingsError(`ROLE=${role}: needs REDIS_URL and DATABASE_URL (PostgreSQL), shared with the other instances`);
  // A worker serves no /files: the URLs of the outputs it stores must name the api instances.
  if (role === 'worker' && !env.PUBLIC_BASE_URL) throw new SettingsError('ROLE=worker: needs PUBLIC_BASE_URL, the address of the api instances, for the URLs of task outputs');
  return role;
}

/** A 32-byte key given as base64; SettingsError naming the variable otherwise. */
function secretKeySetting(env: NodeJS.ProcessEnv, name: string): Buffer | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  const key = Buffer.from(raw.trim(), 'base64');
  if (key.length !== 32 || !/^[A-Za-z0-9+/_-]+={0,2}$/.test(raw.trim())) throw new SettingsError(`${name}: expected 32 bytes in base64 (e.g. \`openssl rand -base64 32\`), got ${key.length} bytes`);
  return key;
}

function allowedHostsSetting(env: NodeJS.ProcessEnv): AllowedHosts {
  try {
    return AllowedHosts.parse(env.FETCH_ALLOW_HOSTS);
  } catch (err) {
    throw new SettingsError(`FETCH_ALLOW_HOSTS: ${(err as Error).message}`);
  }
}

/** GENGATE_CONFIG holds the JSON itself, or the path of a file holding it. */
function parseConfig(raw: string | undefined): GengateConfig {
  if (raw === undefined || raw.trim() === '') return {};
  let text = raw;
  if (!raw.trimStart().startsWith('{')) {
    try {
      text = fs.readFileSync(raw.trim(), 'utf8');
    } catch (err) {
      throw new SettingsError(`GENGATE_CONFIG: neither JSON nor a readable file (${(err as Error).message})`);
    }
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw new SettingsError(`GENGATE_CONFIG: not valid JSON (${(err as Error).message})`);
  }
  const errors = [...Value.Errors(GengateConfig, data)];
  if (errors.length > 0) {
    // An extra key is reported twice (at the key and at its object); keep the line naming the key.
    const lines = errors
      .filter((e) => e.keyword !== 'additionalProperties')
      .map((e) => `GENGATE_CONFIG${e.instancePath.replaceAll('/', '.')}: ${e.message === 'schema is false' ? 'unknown key' : e.message}`);
    throw new SettingsError([...new Set(lines)].join('\n'));
  }
  return data as GengateConfig;
}

/** Reads and checks the settings; throws SettingsError naming the bad variable. */
export function loadSettings(env: NodeJS.ProcessEnv = process.env): Settings {
  const port = intSetting(env, 'PORT', 8080);
  const host = env.HOST || '127.0.0.1';
  const config = parseConfig(env.GENGATE_CONFIG);
  const realtimePort = env.REALTIME_PORT ? intSetting(env, 'REALTIME_PORT', 0) : undefined;
  const workerHeartbeatMs = intSetting(env, 'WORKER_HEARTBEAT_MS', 1000, 10);
  const workerHeartbeatTtlMs = intSetting(env, 'WORKER_HEARTBEAT_TTL_MS', 5000, 10);
  // A TTL within one interval would declare every instance dead between two beats.
  if (workerHeartbeatTtlMs < 2 * workerHeartbeatMs) throw new SettingsError(`WORKER_HEARTBEAT_TTL_MS: must be at least twice WORKER_HEARTBEAT_MS (${workerHeartbeatMs}), got ${workerHeartbeatTtlMs}`);
  const blobStore = blobStoreSettings(env);
  const filesDelivery = choiceSetting(env, 'FILES_DELIVERY', ['proxy', 'redirect'], 'proxy');
  // Local disk has no URL of its own to send a client to.
  if (filesDelivery === 'redirect' && blobStore.kind !== 's3') throw new SettingsError('FILES_DELIVERY=redirect: needs BLOB_STORE=s3 (files on local disk are served through the gateway)');
  return {
    port,
    host,
    realtimePort,
    dataDir: path.resolve(env.DATA_DIR || './data'),
    databaseUrl: env.DATABASE_URL || undefined,
    redisUrl: env.REDIS_URL || undefined,
    publicBaseUrl: env.PUBLIC_BASE_URL ? env.PUBLIC_BASE_URL.replace(/\/+$/, '') : undefined,
    databaseSchema: env.DATABASE_SCHEMA || undefined,
    adminToken: env.ADMIN_TOKEN || undefined,
    catalogPath: env.CATALOG_PATH || undefined,
    config,
    localEngineMinDurationMs: intSetting(env, 'LOCAL_ENGINE_MIN_DURATION_MS', 0),
    syncTimeoutMs: intSetting(env, 'SYNC_TIMEOUT_MS', 300_000, 1),
    maxFileBytes: config.limits?.max_file_bytes ?? 20 * 1024 * 1024,
    maxJsonBytes: config.limits?.max_json_bytes ?? 32 * 1024 * 1024,
    fileRetentionMs: config.limits?.file_retention_ms ?? 24 * 60 * 60 * 1000,
    fetchTimeoutMs: intSetting(env, 'FETCH_TIMEOUT_MS', 30_000, 1),
    fetchAllowHosts: allowedHostsSetting(env),
    logLevel: env.LOG_LEVEL || 'info',
    instanceId: env.INSTANCE_ID || `${os.hostname()}-${process.pid}`,
    workerConcurrency: intSetting(env, 'WORKER_CONCURRENCY', 16, 1),
    batchConcurrency: intSetting(env, 'BATCH_CONCURRENCY', 8, 1),
    batchCompletionWindowMs: intSetting(env, 'BATCH_COMPLETION_WINDOW_MS', 24 * 60 * 60 * 1000, 1000),
    taskLeaseMs: intSetting(env, 'TASK_LEASE_MS', 30_000, 100),
    workerHeartbeatMs,
    workerHeartbeatTtlMs,
    redisPrefix: env.REDIS_PREFIX || 'gengate',
    redisTimeoutMs: intSetting(env, 'REDIS_TIMEOUT_MS', 1000, 10),
    realtimeHandshakeTimeoutMs: intSetting(env, 'REALTIME_HANDSHAKE_TIMEOUT_MS', 10_000, 1),
    realtimeHeartbeatMs: intSetting(env, 'REALTIME_HEARTBEAT_MS', 30_000, 10),
    callbackHistoryMs: intSetting(env, 'CALLBACK_HISTORY_MS', 7 * 24 * 60 * 60 * 1000, 1),
    realtimeAuthRequired: boolSetting(env, 'REALTIME_AUTH_REQUIRED', true),
    assetSweepIntervalMs: intSetting(env, 'ASSET_SWEEP_INTERVAL_MS', 60_000),
    assetSweepBatch: intSetting(env, 'ASSET_SWEEP_BATCH', 500, 1),
    role: roleSetting(env),
    blobStore,
    filesDelivery,
    filesRedirectTtlSeconds: intSetting(env, 'FILES_REDIRECT_TTL_SECONDS', 900, 1),
    usageRetentionDays: intSetting(env, 'USAGE_RETENTION_DAYS', 90),
    outputRetentionMs: daysSetting(env, 'OUTPUT_RETENTION_DAYS'),
    taskEventsHeartbeatMs: intSetting(env, 'TASK_EVENTS_HEARTBEAT_MS', 15_000, 10),
    mcpServers: mcpServersSetting(config.mcp_servers ?? [], env),
    mcpCallTimeoutMs: intSetting(env, 'MCP_CALL_TIMEOUT_MS', 120_000, 1),
    adminUsers: (env.ADMIN_USERS ?? '').split(',').map((id) => id.trim()).filter((id) => id !== ''),
    sessionTtlMs: sessionTtlMs(env),
    oidc: oidcSettings(env),
    secretKey: secretKeySetting(env, 'GENGATE_SECRET_KEY'),
    secretKeyPrevious: secretKeySetting(env, 'GENGATE_SECRET_KEY_PREVIOUS'),
    auditRetentionDays: intSetting(env, 'AUDIT_RETENTION_DAYS', 365),
    configCheckIntervalMs: intSetting(env, 'CONFIG_CHECK_INTERVAL_MS', 1000, 50),
  };
}

/** The name of the gateway's own tools on /mcp (`gengate__<tool>` in permission patterns); no upstream server may take it. */
export const GATEWAY_MCP_SERVER = 'gengate';

/** GENGATE_CONFIG.mcp_servers checked (names unique, `gengate` reserved) with `env:VAR` header values read. */
function mcpServersSetting(servers: readonly McpServerSettings[], env: NodeJS.ProcessEnv): McpServer[] {
  const seen = new Set<string>();
  return servers.map((server, i) => {
    const where = `GENGATE_CONFIG.mcp_servers[${i}]`;
    if (server.name === GATEWAY_MCP_SERVER) throw new SettingsError(`${where}.name: "${GATEWAY_MCP_SERVER}" is reserved for the gateway's own tools`);
    if (seen.has(server.name)) throw new SettingsError(`${where}.name: "${server.name}" is named twice`);
    seen.add(server.name);
    try {
      const url = new URL(server.url);
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('not http(s)');
    } catch {
      throw new SettingsError(`${where}.url: expected an http or https URL, got "${server.url}"`);
    }
    const headers: Record<string, string> = {};
    for (const [header, value] of Object.entries(server.headers ?? {})) {
      if (!value.startsWith('env:')) {
        headers[header] = value;
        continue;
      }
      const variable = value.slice('env:'.length);
      const read = env[variable];
      if (read === undefined) throw new SettingsError(`${variable}: unset, and ${where}.headers.${header} reads it`);
      headers[header] = read;
    }
    return { name: server.name, url: server.url, headers, tools: server.tools };
  });
}

/**
 * Refuses a `providers` entry whose key is neither a provider code of the catalog nor served by
 * an adapter with models of its own (ComfyUI workflows): a misspelled code would otherwise leave
 * every model of the intended provider disabled as "provider not configured".
 */
export function checkProviderCodes(config: GengateConfig, catalogCodes: readonly string[], selfServingAdapters: readonly string[]): void {
  const known = new Set(catalogCodes);
  const lines = Object.entries(config.providers ?? {})
    .filter(([code, provider]) => !known.has(code) && !selfServingAdapters.includes(provider.adapter ?? code))
    .map(([code]) => `GENGATE_CONFIG.providers.${code}: unknown provider code "${code}"; the catalog's provider codes are ${[...known].sort().join(', ')}`
      + ` (a provider serving workflows names its adapter, e.g. "adapter": "${selfServingAdapters[0]}")`);
  if (lines.length > 0) throw new SettingsError(lines.join('\n'));
}
