/**
 * The table of task endpoints (src/endpoints/endpoint-table.ts): its schemas compile, the
 * capability types it names are the catalog's, every endpoint has a local handler, and every
 * route it names is one the app serves.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Ajv } from 'ajv';
import { CAPABILITY_NAMES } from '../../src/catalog/schema.ts';
import { ENDPOINT_NAMES, ENDPOINTS, routePath, storedEndpoint } from '../../src/endpoints/endpoint-table.ts';
import { LOCAL_HANDLERS } from '../../src/providers/local/local-engine.ts';
import type { Endpoint } from '../../src/providers/spec.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

describe('endpoint table', () => {
  it('has a task input schema that compiles for every endpoint', () => {
    const ajv = new Ajv({ strict: true });
    for (const endpoint of ENDPOINT_NAMES) {
      assert.doesNotThrow(() => ajv.compile(ENDPOINTS[endpoint].input), `${endpoint}'s input schema`);
    }
  });

  it('names only capability types of the catalog schema', () => {
    const known = new Set<string>(CAPABILITY_NAMES);
    for (const endpoint of ENDPOINT_NAMES) {
      const { capabilities } = ENDPOINTS[endpoint];
      assert.ok(capabilities.length > 0, `${endpoint} needs a capability type`);
      for (const name of capabilities) assert.ok(known.has(name), `${endpoint} names ${name}, not a catalog capability type`);
    }
  });

  it('gives every endpoint a local handler that runs', async () => {
    for (const endpoint of ENDPOINT_NAMES) {
      const load = LOCAL_HANDLERS[ENDPOINTS[endpoint].local] as (endpoint: Endpoint) => Promise<{ run?: unknown } | undefined>;
      assert.equal(typeof (await load(endpoint))?.run, 'function', `${endpoint} has no local handler`);
    }
  });

  it('refuses a stored endpoint the table lacks', () => {
    assert.equal(storedEndpoint('speech.generations'), ENDPOINTS['speech.generations']);
    assert.throws(() => storedEndpoint('speech'), /speech is not a task endpoint/);
  });

  describe('routes', () => {
    let srv: TestServer;
    before(async () => {
      srv = await startTestServer();
    });
    after(() => srv.close());

    it('are every one in the app\'s OpenAPI document', async () => {
      const doc = (await (await srv.fetch('/openapi.json')).json()) as { paths: Record<string, Record<string, unknown>> };
      const missing = ENDPOINT_NAMES.flatMap((endpoint) => ENDPOINTS[endpoint].routes
        .filter((route) => doc.paths[routePath(route)]?.[route.slice(0, route.indexOf(' ')).toLowerCase()] === undefined)
        .map((route) => `${endpoint}: ${route}`));
      assert.deepEqual(missing, []);
    });
  });
});
