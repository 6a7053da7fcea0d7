import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { loadCatalog } from '../src/catalog/catalog.ts';
import type { CapabilityName } from '../src/catalog/schema.ts';
import { loadSettings } from '../src/config/settings.ts';
import { LocalChatModel } from '../src/providers/local/chat/local-chat-model.ts';
import { createChatModelRegistry, createEngineRegistry, hasAdapter } from '../src/providers/registry.ts';
import type { Endpoint } from '../src/providers/spec.ts';

/** The task endpoint each generation capability type is served by. */
const TASK_ENDPOINTS: Partial<Record<CapabilityName, Endpoint>> = {
  image_generate: 'images.generations',
  image_edit: 'images.edits',
  video_generate: 'video.generations',
  image_to_video: 'video.generations',
  omni_video: 'video.generations',
  audio_generate: 'song.generations',
  digital_human_generate: 'digital-human.generations',
  text_to_model: 'mesh3d.generate.text',
  image_to_model: 'mesh3d.generate.image',
  multiview_to_model: 'mesh3d.generate.multiview',
};

const CHAT_TYPES: readonly CapabilityName[] = ['text_generate', 'tools_call'];

const catalog = loadCatalog({ config: {} });
const codes = [...new Set(catalog.models.map((m) => m.providerCode))].sort();

/** A gateway configured the way an operator starts: every catalog provider with its key and nothing else. */
function settingsWithEveryProvider() {
  process.env.GENGATE_TEST_CATALOG_KEY = 'key';
  const providers = Object.fromEntries(codes.map((code) => [code, { api_key_env: 'GENGATE_TEST_CATALOG_KEY' }]));
  return loadSettings({ GENGATE_CONFIG: JSON.stringify({ providers }), DATA_DIR: '/nonexistent', LOG_LEVEL: 'silent' });
}

describe('the built-in catalog and the adapters', () => {
  it('every providerCode of the built-in catalog has an adapter', () => {
    assert.ok(codes.length > 10);
    assert.deepEqual(codes.filter((code) => !hasAdapter(code)), []);
  });

  it('each generation model\'s provider adapter serves the endpoints of its capability types', () => {
    const engines = createEngineRegistry(settingsWithEveryProvider(), pino({ level: 'silent' }));
    const missing: string[] = [];
    for (const model of catalog.models) {
      const serves = engines.engineFor(model).serves;
      for (const type of model.modelTypes) {
        const endpoint = TASK_ENDPOINTS[type];
        if (endpoint && serves && !serves[endpoint]) missing.push(`${model.alias} (${model.providerCode}) ${type}: ${endpoint}`);
        if (endpoint && !serves) missing.push(`${model.alias} (${model.providerCode}): its engine declares nothing`);
      }
    }
    assert.deepEqual(missing, []);
  });

  it('each chat model\'s provider answers chat through its upstream when configured with only a key', () => {
    const chats = createChatModelRegistry(settingsWithEveryProvider(), pino({ level: 'silent' }));
    const local = catalog.models
      .filter((model) => model.modelTypes.some((type) => CHAT_TYPES.includes(type)))
      .filter((model) => chats.chatModelOn(model.providerCode, model.providerCode) instanceof LocalChatModel)
      .map((model) => `${model.alias} (${model.providerCode})`);
    assert.deepEqual(local, []);
  });
});
