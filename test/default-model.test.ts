import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { CatalogError } from '../src/catalog/catalog.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { eventually } from './support/wait.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/** An operator's catalog: one provider `acme`, whose only image model is `image`. */
const OPERATOR_CATALOG = fileURLToPath(new URL('./fixtures/catalog/every-field.json', import.meta.url));
const LEGACY_BODY = { params: { prompt: 'a legacy fox', width: 32, height: 16, seed: 3 } };

/** Submits to the deprecated endpoint without a model; answers the status and the body. */
async function submitWithoutModel(srv: TestServer, token: string): Promise<{ status: number; body: Json }> {
  const res = await srv.fetch('/v1/ai/generations', { method: 'POST', token, json: LEGACY_BODY });
  return { status: res.status, body: await res.json() };
}

/** The model that ran the task, once it succeeded. */
async function modelOfTask(srv: TestServer, token: string, taskId: string): Promise<string> {
  const record: Json = await eventually(`task ${taskId} to succeed`, async () => {
    const body: Json = await (await srv.fetch(`/v1/ai/result/${taskId}`, { token })).json();
    return body.queue_status.status === 'success' ? body : undefined;
  });
  return record.generate_info.workflow._id;
}

async function withServer(env: Record<string, string>, use: (srv: TestServer, token: string) => Promise<void>): Promise<void> {
  const srv = await startTestServer(env);
  try {
    await use(srv, await srv.tokenFor('alice'));
  } finally {
    await srv.close();
  }
}

describe('POST /v1/ai/generations without a model', () => {
  it('runs the first enabled image model of an operator\'s catalog (CATALOG_PATH)', async () => {
    await withServer({ CATALOG_PATH: OPERATOR_CATALOG }, async (srv, token) => {
      const { status, body } = await submitWithoutModel(srv, token);
      assert.equal(status, 200, JSON.stringify(body));
      assert.equal(await modelOfTask(srv, token, body.task_id), 'image');
    });
  });

  it('takes the first image model still enabled after the config\'s overrides', async () => {
    const config = { models: { 'gpt-image-1': { enabled: false } } };
    await withServer({ GENGATE_CONFIG: JSON.stringify(config) }, async (srv, token) => {
      const { status, body } = await submitWithoutModel(srv, token);
      assert.equal(status, 200, JSON.stringify(body));
      assert.equal(await modelOfTask(srv, token, body.task_id), 'flux-kontext-pro');
    });
  });

  it('runs GENGATE_CONFIG default_models.image_generate when set', async () => {
    const config = { default_models: { image_generate: 'seedream-4.5' } };
    await withServer({ GENGATE_CONFIG: JSON.stringify(config) }, async (srv, token) => {
      const { status, body } = await submitWithoutModel(srv, token);
      assert.equal(status, 200, JSON.stringify(body));
      assert.equal(await modelOfTask(srv, token, body.task_id), 'seedream-4.5');
    });
  });

  it('answers 404 model_not_found when no image model is enabled', async () => {
    const config = { models: { image: { enabled: false } } };
    await withServer({ CATALOG_PATH: OPERATOR_CATALOG, GENGATE_CONFIG: JSON.stringify(config) }, async (srv, token) => {
      const { status, body } = await submitWithoutModel(srv, token);
      assert.equal(status, 404);
      assert.equal(body.error.code, 'model_not_found');
      assert.equal(body.error.param, 'model');
    });
  });
});

describe('GENGATE_CONFIG default_models is checked at start', () => {
  let refusal: CatalogError;
  before(async () => {
    const config = { default_models: { image_generate: 'no-such-model', video_generate: 'image', teleport: 'image' } };
    await assert.rejects(startTestServer({ CATALOG_PATH: OPERATOR_CATALOG, GENGATE_CONFIG: JSON.stringify(config) }), (err: unknown) => {
      assert.ok(err instanceof CatalogError, String(err));
      refusal = err;
      return true;
    });
  });

  it('refuses an alias the catalog does not have, naming its path', () => {
    assert.ok(refusal.lines.includes('GENGATE_CONFIG.default_models.image_generate: no catalog model has the alias no-such-model'), refusal.lines.join('\n'));
  });

  it('refuses a model without the capability and a key that is no capability type', () => {
    assert.deepEqual(refusal.lines.slice(1), [
      'GENGATE_CONFIG.default_models.video_generate: model image does not declare video_generate',
      'GENGATE_CONFIG.default_models.teleport: teleport is not a capability type',
    ]);
  });
});
