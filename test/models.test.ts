import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startTestServer, tempDataDir, type TestServer } from './support/server.ts';
import { runCli } from './support/cli.ts';

interface CatalogModel {
  alias: string;
  providerCode: string;
  modelTypes: string[];
  status: string;
  description?: string;
  capabilities: Record<string, Record<string, unknown>>;
}
interface PlatformItem {
  name: string;
  alias: string;
  types: string[];
  provider: string;
  enabled: boolean;
  disabled_reason?: string;
  disabled_until?: string;
  capabilities: Record<string, Record<string, unknown>>;
  description?: string;
}

const builtin = JSON.parse(fs.readFileSync('src/catalog/builtin-catalog.json', 'utf8')) as { baseModels: CatalogModel[] };

async function list(srv: TestServer, token: string, type?: string): Promise<{ modelList: PlatformItem[]; count: number }> {
  const res = await srv.fetch(`/v1/models/list${type === undefined ? '' : `?type=${type}`}`, { token });
  assert.equal(res.status, 200);
  return (await res.json()) as { modelList: PlatformItem[]; count: number };
}

describe('model listing with the built-in catalog', () => {
  let srv: TestServer;
  let token: string;
  before(async () => {
    srv = await startTestServer();
    token = await srv.tokenFor('lister');
  });
  after(() => srv.close());

  it('lists every catalog model in the compatibility shape', async () => {
    const res = await srv.fetch('/v1/models', { token });
    assert.equal(res.status, 200);
    const body = (await res.json()) as { success: boolean; data: Record<string, unknown>[] };
    assert.equal(body.success, true);
    assert.deepEqual(body.data.map((m) => m.id), builtin.baseModels.map((m) => m.alias));
    const first = body.data[0] as { object: string; created: number; owned_by: string; root: string; parent: null; permission: Record<string, unknown>[] };
    assert.equal(first.object, 'model');
    assert.equal(first.owned_by, builtin.baseModels[0].providerCode);
    assert.equal(first.root, builtin.baseModels[0].alias);
    assert.equal(first.parent, null);
    assert.ok(Number.isInteger(first.created));
    const permission = first.permission[0];
    assert.equal(permission.object, 'model_permission');
    for (const key of ['allow_create_engine', 'allow_sampling', 'allow_logprobs', 'allow_search_indices', 'allow_view', 'allow_fine_tuning', 'is_blocking']) {
      assert.equal(typeof permission[key], 'boolean', key);
    }
    assert.equal(typeof permission.id, 'string');
    assert.equal(typeof permission.organization, 'string');
    assert.equal(permission.group, null);
  });

  it('maps catalog models to platform items, all or omitted type listing everything', async () => {
    const all = await list(srv, token);
    assert.equal(all.count, builtin.baseModels.length);
    assert.deepEqual(await list(srv, token, 'all'), all);
    for (const [i, model] of builtin.baseModels.entries()) {
      const item = all.modelList[i];
      assert.equal(item.name, model.alias);
      assert.equal(item.alias, model.alias);
      assert.deepEqual(item.types, model.modelTypes);
      assert.equal(item.provider, model.providerCode);
      assert.deepEqual(item.capabilities, model.capabilities);
      assert.equal(item.enabled, model.status !== 'offline');
      assert.equal(item.description, model.description);
    }
  });

  it('filters by capability type: the 3D text models with their capabilities', async () => {
    const text3d = await list(srv, token, 'text_to_model');
    const expected = builtin.baseModels.filter((m) => m.modelTypes.includes('text_to_model')).map((m) => m.alias);
    assert.ok(expected.length >= 4);
    assert.deepEqual(text3d.modelList.map((m) => m.alias), expected);
    assert.equal(text3d.count, expected.length);
    for (const item of text3d.modelList) {
      assert.ok(item.types.includes('text_to_model'));
      assert.equal(item.capabilities.text_to_model.type, 'text_to_model');
    }
    const providers = new Set(text3d.modelList.map((m) => m.provider));
    for (const family of ['hunyuan', 'rodin', 'tripo', 'fal']) assert.ok(providers.has(family), `a ${family} text model is listed`);
    for (const type of ['text_generate', 'image_generate', 'image_edit', 'video_generate', 'audio_generate', 'text_to_speech', 'digital_human_generate', 'mesh_edit', 'image_analysis']) {
      assert.ok((await list(srv, token, type)).count > 0, `some model serves ${type}`);
    }
  });

  it('accepts every listing type, even one no model has', async () => {
    assert.deepEqual(await list(srv, token, 'video_edit'), { modelList: [], count: 0 });
  });

  it('rejects an unknown type naming the parameter', async () => {
    const res = await srv.fetch('/v1/models/list?type=teleport', { token });
    assert.equal(res.status, 400);
    const body = (await res.json()) as { error: { param: string; type: string } };
    assert.equal(body.error.param, 'type');
    assert.equal(body.error.type, 'invalid_request_error');
  });
});

describe('model listing with deployment overrides and a catalog file', () => {
  it('applies GENGATE_CONFIG overrides: live values win, disabled models say why', async () => {
    const text3d = builtin.baseModels.find((m) => m.modelTypes.includes('text_to_model'))!;
    const other = builtin.baseModels.find((m) => m.modelTypes.includes('text_generate'))!;
    const srv = await startTestServer({
      GENGATE_CONFIG: JSON.stringify({
        models: {
          [text3d.alias]: { capabilities: { text_to_model: { face_limit_range: { min: 5000, max: 6000 } } } },
          [other.alias]: { enabled: false, disabled_reason: 'maintenance', disabled_until: '2030-01-01T00:00:00Z' },
        },
      }),
    });
    try {
      const token = await srv.tokenFor('ops');
      const all = await list(srv, token);
      const overridden = all.modelList.find((m) => m.alias === text3d.alias)!;
      assert.deepEqual(overridden.capabilities.text_to_model.face_limit_range, { min: 5000, max: 6000 });
      const disabled = all.modelList.find((m) => m.alias === other.alias)!;
      assert.equal(disabled.enabled, false);
      assert.equal(disabled.disabled_reason, 'maintenance');
      assert.equal(disabled.disabled_until, '2030-01-01T00:00:00Z');
    } finally {
      await srv.close();
    }
  });

  it('marks models of unconfigured providers disabled once a providers config exists', async () => {
    const srv = await startTestServer({ GENGATE_CONFIG: JSON.stringify({ providers: { tripo: { base_url: 'http://127.0.0.1:9', api_key_env: 'TRIPO_KEY' } } }) });
    try {
      const all = await list(srv, await srv.tokenFor('ops'));
      for (const item of all.modelList) {
        if (item.provider === 'tripo') assert.equal(item.enabled, builtin.baseModels.find((m) => m.alias === item.alias)!.status !== 'offline');
        else {
          assert.equal(item.enabled, false, item.alias);
          assert.equal(item.disabled_reason, 'provider not configured');
        }
      }
    } finally {
      await srv.close();
    }
  });

  it('serves the catalog named by CATALOG_PATH', async () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'gengate-catalog-')), 'catalog.json');
    fs.writeFileSync(file, JSON.stringify({
      schemaVersion: 1,
      providers: [{ code: 'acme', name: 'acme', displayName: 'Acme' }],
      baseModels: [{
        catalogKey: 'base:runtime:acme-chat', providerCode: 'acme', displayName: 'Acme Chat', alias: 'acme-chat',
        defaultRealModelName: 'acme-chat-1', modelTypes: ['text_generate'], status: 'active',
        capabilities: { text_generate: { type: 'text_generate', max_context_tokens: 8192 } },
      }],
    }));
    const srv = await startTestServer({ CATALOG_PATH: file });
    try {
      const all = await list(srv, await srv.tokenFor('ops'));
      assert.deepEqual(all, {
        modelList: [{ name: 'acme-chat', alias: 'acme-chat', types: ['text_generate'], capabilities: { text_generate: { type: 'text_generate', max_context_tokens: 8192 } }, provider: 'acme', enabled: true }],
        count: 1,
      });
    } finally {
      await srv.close();
    }
  });

  it('refuses to start on an invalid catalog, printing each error with its JSON path', async () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'gengate-catalog-')), 'bad.json');
    const bad = structuredClone(builtin) as { baseModels: CatalogModel[] };
    bad.baseModels[0].capabilities[bad.baseModels[0].modelTypes[0]].bogus = 1;
    fs.writeFileSync(file, JSON.stringify(bad));
    const dataDir = tempDataDir();
    const result = await runCli(['serve'], { PORT: '0', DATA_DIR: dataDir, CATALOG_PATH: file, LOG_LEVEL: 'silent' });
    assert.equal(result.code, 1);
    assert.match(result.stderr, new RegExp(`\\$\\.baseModels\\[0\\]\\.capabilities\\.${bad.baseModels[0].modelTypes[0]}\\.bogus`));
    assert.ok(!fs.existsSync(path.join(dataDir, 'gengate.db')), 'nothing was set up');
  });
});
