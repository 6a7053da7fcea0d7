import { parseArgs } from 'node:util';
import pino from 'pino';
import { loadSettings, SettingsError, type Role } from './config/settings.ts';
import { CatalogError } from './catalog/catalog.ts';
import { runCatalogValidate } from './catalog/validate-command.ts';
import { openDb } from './storage/db.ts';
import { TokensRepo } from './storage/repos/tokens-repo.ts';
import { TokenService, adminTokenFile, resolveAdminToken, rotateAdminToken } from './auth/tokens.ts';
import { applyPatch, CREDIT_PERIODS, type LimitsPatch } from './limits/limits.ts';
import { SecretBox } from './config/secret-box.ts';
import { ConfigRecordsRepo } from './storage/repos/config-records-repo.ts';
import { rotateSecrets } from './runtime-settings/rotate-secrets.ts';

const USAGE = `usage:
  gengate serve [--role all|api|worker]         serve the API (settings from the environment; --role overrides ROLE)
  gengate token create --user ID [--name NAME]  create an API token for a user (printed once)
      [--rpm N] [--tpm N] [--concurrent N]      with limits: requests and tokens per minute, tasks at once
      [--credits N] [--credits-period day|month|total]   credits the period may spend (default day)
  gengate admin-token rotate                    replace the admin token kept in DATA_DIR (printed once)
  gengate catalog validate FILE                 check a model catalog file
  gengate secrets rotate                        re-encrypt every stored secret under GENGATE_SECRET_KEY
                                                (older ones read with GENGATE_SECRET_KEY_PREVIOUS)`;

const out = (line: string) => process.stdout.write(line + '\n');
const err = (line: string) => process.stderr.write(line + '\n');

/** What each role of `serve` runs, for the start-up line. */
const ROLE_LINES: Record<Role, string | undefined> = {
  all: undefined,
  api: 'Role api: serving HTTP and realtime and queueing tasks; workers run them.',
  worker: 'Role worker: running tasks and callbacks; serving /healthz and /metrics only.',
};

async function serve(args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { role: { type: 'string' } } });
  const settings = loadSettings(values.role === undefined ? process.env : { ...process.env, ROLE: values.role });
  const logger = pino({ level: settings.logLevel });
  // The server's modules load only for `serve`: the other commands start in a fraction of the time.
  const { startServer } = await import('./main.ts');
  const server = await startServer(settings, logger);
  const providers = Object.keys(settings.config.providers ?? {});
  out(`Gengate listening on ${server.url}`);
  const roleLine = ROLE_LINES[settings.role];
  if (roleLine) out(roleLine);
  if (settings.blobStore.kind === 's3') out(`Files in S3 bucket ${settings.blobStore.bucket} at ${settings.blobStore.endpoint ?? 'AWS S3'}; /files delivered by ${settings.filesDelivery}.`);
  out(providers.length === 0
    ? 'No providers configured: every catalog model is served by the built-in local engine (offline).'
    : `Providers configured: ${providers.join(', ')}.`);
  if (server.createdAdminToken) {
    out(`Admin token (shown once; its hash is kept in ${adminTokenFile(settings.dataDir)}): ${server.createdAdminToken}`);
    out(`Try: curl -H "Authorization: Bearer ${server.createdAdminToken}" "${server.url}/v1/models/list?type=text_to_model"`);
  } else if (!settings.adminToken) {
    out(`The admin token is the one printed at the first start (its hash is kept in ${adminTokenFile(settings.dataDir)}); \`gengate admin-token rotate\` replaces it.`);
  }
  out(`Server process ${process.pid}: stop it with Ctrl-C or \`kill ${process.pid}\`.`);
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    server.close().then(() => process.exit(0), (e: unknown) => {
      logger.error({ err: e }, 'shutdown failed');
      process.exit(1);
    });
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

async function createToken(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      user: { type: 'string' },
      name: { type: 'string' },
      rpm: { type: 'string' },
      tpm: { type: 'string' },
      concurrent: { type: 'string' },
      credits: { type: 'string' },
      'credits-period': { type: 'string' },
    },
  });
  if (!values.user) {
    err('token create: --user ID is required');
    return 2;
  }
  const patch: LimitsPatch = {};
  for (const [flag, field] of [['rpm', 'requests_per_minute'], ['tpm', 'tokens_per_minute'], ['concurrent', 'concurrent_tasks']] as const) {
    const raw = values[flag];
    if (raw === undefined) continue;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1) {
      err(`token create: --${flag} must be a whole number of at least 1`);
      return 2;
    }
    patch[field] = n;
  }
  if (values.credits !== undefined) {
    const n = Number(values.credits);
    if (!Number.isFinite(n) || n < 0) {
      err('token create: --credits must be a number of at least 0');
      return 2;
    }
    patch.credits = n;
  }
  const period = values['credits-period'];
  if (period !== undefined) {
    if (!(CREDIT_PERIODS as readonly string[]).includes(period)) {
      err(`token create: --credits-period must be one of ${CREDIT_PERIODS.join(', ')}`);
      return 2;
    }
    patch.credits_period = period as LimitsPatch['credits_period'];
  }
  const limits = applyPatch(undefined, patch);
  const settings = loadSettings();
  const db = await openDb({ databaseUrl: settings.databaseUrl, dataDir: settings.dataDir, pgSchema: settings.databaseSchema });
  try {
    const tokens = new TokenService(new TokensRepo(db), resolveAdminToken(settings.dataDir, settings.adminToken).hash);
    const created = await tokens.create(values.user, values.name, limits ? JSON.stringify(limits) : null);
    out(JSON.stringify({ ...created, limits: limits ?? {} }));
    return 0;
  } finally {
    await db.close();
  }
}

/** Writes a new admin token's hash into DATA_DIR and prints the token once; a running server takes it at its next start. */
function rotateAdminTokenCommand(): number {
  const settings = loadSettings();
  if (settings.adminToken) {
    err('admin-token rotate: ADMIN_TOKEN is set, so the admin token is its value; change the variable instead');
    return 1;
  }
  const token = rotateAdminToken(settings.dataDir);
  out(`Admin token (shown once; its hash is kept in ${adminTokenFile(settings.dataDir)}): ${token}`);
  out('A running server keeps the previous admin token until it restarts.');
  return 0;
}

/**
 * Re-encrypts the secrets stored through the admin API under GENGATE_SECRET_KEY, reading older
 * ones with GENGATE_SECRET_KEY_PREVIOUS; safe while instances run (the secrets' values do not
 * change). Exits 1 naming the secrets neither key reads.
 */
async function rotateSecretsCommand(): Promise<number> {
  const settings = loadSettings();
  const db = await openDb({ databaseUrl: settings.databaseUrl, dataDir: settings.dataDir, pgSchema: settings.databaseSchema });
  try {
    const { rotated, unreadable } = await rotateSecrets(new ConfigRecordsRepo(db), new SecretBox(settings.secretKey, settings.secretKeyPrevious));
    out(`secrets rotate: ${rotated} secret(s) re-encrypted under GENGATE_SECRET_KEY`);
    if (unreadable.length === 0) return 0;
    err(`secrets rotate: neither GENGATE_SECRET_KEY nor GENGATE_SECRET_KEY_PREVIOUS reads: ${unreadable.join(', ')}`);
    return 1;
  } finally {
    await db.close();
  }
}

async function main(argv: string[]): Promise<number | undefined> {
  const [command, sub, ...rest] = argv;
  if (command === 'serve' || command === undefined) {
    await serve(argv.slice(1));
    return undefined;
  }
  if (command === 'token' && sub === 'create') return createToken(rest);
  if (command === 'admin-token' && sub === 'rotate' && rest.length === 0) return rotateAdminTokenCommand();
  if (command === 'catalog' && sub === 'validate' && rest.length === 1) return runCatalogValidate(rest[0], out);
  if (command === 'secrets' && sub === 'rotate' && rest.length === 0) return rotateSecretsCommand();
  err(USAGE);
  return 2;
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code !== undefined) process.exitCode = code;
  },
  (e: unknown) => {
    if (e instanceof CatalogError) {
      err('the model catalog is invalid; refusing to start:');
      for (const line of e.lines) err(line);
    } else if (e instanceof SettingsError) err(`invalid settings: ${e.message}`);
    else err(`gengate: ${e instanceof Error ? e.stack : String(e)}`);
    process.exitCode = 1;
  },
);
