/** Shared set-up of the agent-client tests: a catalog with a model served through the Responses API, and Codex CLI's home. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BUILTIN_CATALOG_PATH } from '../../src/catalog/catalog.ts';

/** The model of provider `openai` whose upstream name differs from its alias, and which lists the responses protocol. */
export const RESPONSES_MODEL = { alias: 'codex-gw', upstream: 'gpt-5-codex-upstream' };

/** The built-in catalog plus RESPONSES_MODEL (a copy of gpt-5-mini), written to a temporary file; answers its path. */
export function writeResponsesCatalog(dir: string): string {
  const catalog = JSON.parse(fs.readFileSync(BUILTIN_CATALOG_PATH, 'utf8'));
  const base = catalog.baseModels.find((m: { alias: string }) => m.alias === 'gpt-5-mini');
  catalog.baseModels.push({ ...base, catalogKey: `base:runtime:${RESPONSES_MODEL.alias}`, alias: RESPONSES_MODEL.alias, defaultRealModelName: RESPONSES_MODEL.upstream, displayName: 'Codex through the gateway' });
  const file = path.join(dir, 'catalog.json');
  fs.writeFileSync(file, JSON.stringify(catalog));
  return file;
}

/**
 * A CODEX_HOME whose config.toml sends Codex to the gateway's /openai/v1 over the Responses API,
 * with the key read from GENGATE_API_KEY, and nothing else reaching out (updates, analytics, feedback).
 */
export function codexHome(gatewayUrl: string, model: string): string {
  // Not under /tmp: Codex refuses to put its helper binaries in a temporary directory and warns.
  const home = fs.mkdtempSync(path.join(os.homedir(), '.gengate-codex-test-'));
  fs.writeFileSync(path.join(home, 'config.toml'), [
    `model = "${model}"`,
    'model_provider = "gengate"',
    'check_for_update_on_startup = false',
    '',
    '[model_providers.gengate]',
    'name = "Gengate"',
    `base_url = "${gatewayUrl}/openai/v1"`,
    'wire_api = "responses"',
    'env_key = "GENGATE_API_KEY"',
    'request_max_retries = 0',
    'stream_max_retries = 0',
    '',
    '[analytics]',
    'enabled = false',
    '',
    '[feedback]',
    'enabled = false',
    '',
  ].join('\n'));
  return home;
}
