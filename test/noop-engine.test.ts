import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import sharp from 'sharp';
import { startTestServer, type TestServer } from './support/server.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const IMAGE = { prompt: 'a red fox', model: 'seedream-4.0', size: '64x48' };

async function generate(srv: TestServer, token: string): Promise<{ body: Json; image: { width?: number; height?: number } }> {
  const res = await srv.fetch('/v1/images/generations', { method: 'POST', token, json: IMAGE });
  assert.equal(res.status, 200);
  const body: Json = await res.json();
  const image = await sharp(Buffer.from(await (await fetch(body.output[0])).arrayBuffer())).metadata();
  return { body, image };
}

describe('noop engine (benchmarks)', () => {
  let noop: TestServer;
  let plain: TestServer;

  before(async () => {
    noop = await startTestServer({ GENGATE_CONFIG: JSON.stringify({ providers: { volcengine: { adapter: 'noop' } } }) });
    plain = await startTestServer();
  });
  after(async () => {
    await noop.close();
    await plain.close();
  });

  it('runs a provider configured with adapter "noop": the task succeeds at once with one 1×1 PNG, stored and billed like any output', async () => {
    const { body, image } = await generate(noop, await noop.tokenFor('u1'));
    assert.equal(body.status, 'success');
    assert.equal(body.output.length, 1);
    assert.deepEqual(body.mediaSize, { type: 'image', width: 1, height: 1, status: 1 });
    assert.deepEqual([image.width, image.height], [1, 1]);
    assert.equal(body.billings[0].platform.code, 'volcengine');
  });

  it('is not reached unless configured: the same model without it draws the size asked for', async () => {
    const { image } = await generate(plain, await plain.tokenFor('u1'));
    assert.deepEqual([image.width, image.height], [64, 48]);
  });
});
