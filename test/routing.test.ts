import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startFakeChatUpstream, type FakeChatUpstream } from './fakes/openai-chat-upstream.ts';
import { FakeOpenAiImages } from './fakes/openai-images-upstream.ts';
import { startTestServer, redisEnv, type TestServer } from './support/server.ts';
import { sseData } from './support/sse.ts';
import { eventually } from './support/wait.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const MODEL = 'gpt-4.1-mini';
const KEY_ENV = 'ROUTING_TEST_KEY';
process.env[KEY_ENV] = 'sk-routing-test';

interface ChannelOptions {
  weight?: number;
  priority?: number;
}

/** GENGATE_CONFIG with the openai provider's channels at these upstreams (no retries within a channel). */
function config(channels: Record<string, { url: string } & ChannelOptions>, extra: Record<string, unknown> = {}, provider: Record<string, unknown> = {}): string {
  return JSON.stringify({
    providers: {
      openai: {
        api_key_env: KEY_ENV,
        retry: { attempts: 0 },
        ...provider,
        channels: Object.entries(channels).map(([name, c]) => ({ name, base_url: c.url, ...(c.weight ? { weight: c.weight } : {}), ...(c.priority !== undefined ? { priority: c.priority } : {}) })),
      },
    },
    ...extra,
  });
}

/** A base URL nothing listens on: calls there are refused. */
async function refusedUrl(): Promise<string> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}/v1`;
}

async function chat(server: TestServer, token: string, stream = false): Promise<Response> {
  return server.fetch('/v1/chat/completions', { method: 'POST', token, json: { model: MODEL, stream, messages: [{ role: 'user', content: 'hello' }] } });
}

async function channels(server: TestServer): Promise<Json[]> {
  const res = await server.fetch('/admin/channels', { token: server.adminToken });
  assert.equal(res.status, 200);
  return ((await res.json()) as Json).data;
}

async function channel(server: TestServer, name: string): Promise<Json> {
  return (await channels(server)).find((c) => c.name === name);
}

describe('chat routing over channels', () => {
  let a: FakeChatUpstream;
  let b: FakeChatUpstream;
  let server: TestServer | undefined;
  let token: string;
  before(async () => {
    a = await startFakeChatUpstream();
    b = await startFakeChatUpstream();
  });
  after(async () => {
    await server?.close();
    await a.close();
    await b.close();
  });

  async function start(gengateConfig: string): Promise<void> {
    await server?.close();
    a.requests.length = 0;
    b.requests.length = 0;
    server = await startTestServer({ GENGATE_CONFIG: gengateConfig });
    token = await server.tokenFor('router');
  }

  it('spreads calls by weight within a tier (3:1 over 400 calls, within 0.07 of 0.75)', async () => {
    await start(config({ a: { url: a.url, weight: 3 }, b: { url: b.url, weight: 1 } }));
    const calls = 400;
    // Ten at a time: far below each channel's concurrency, so only the weights decide.
    for (let i = 0; i < calls; i += 10) {
      await Promise.all(Array.from({ length: 10 }, async () => {
        const res = await chat(server!, token);
        assert.equal(res.status, 200);
        await res.json();
      }));
    }
    const share = a.requests.length / calls;
    assert.equal(a.requests.length + b.requests.length, calls);
    assert.ok(Math.abs(share - 0.75) <= 0.07, `channel a took ${a.requests.length} of ${calls} calls (${share})`);
  });

  it('sends every call to the lowest priority number while it is healthy, the next tier when it is disabled', async () => {
    await start(config({ backup: { url: b.url, priority: 1 }, main: { url: a.url, priority: 0 } }));
    for (let i = 0; i < 10; i++) {
      const res = await chat(server!, token);
      assert.equal(res.headers.get('x-gengate-channel'), 'main');
      await res.json();
    }
    assert.equal(a.requests.length, 10);
    assert.equal(b.requests.length, 0);
    const disabled = await server!.fetch('/admin/channels/openai/main/disable', { method: 'POST', token: server!.adminToken, json: { reason: 'maintenance' } });
    assert.equal(disabled.status, 200);
    assert.deepEqual({ state: ((await disabled.json()) as Json).state }, { state: 'disabled' });
    const res = await chat(server!, token);
    assert.equal(res.headers.get('x-gengate-channel'), 'backup');
    await res.json();
    assert.equal(a.requests.length, 10);
    const enabled = await server!.fetch('/admin/channels/openai/main/enable', { method: 'POST', token: server!.adminToken });
    assert.equal(((await enabled.json()) as Json).state, 'healthy');
    const back = await chat(server!, token);
    assert.equal(back.headers.get('x-gengate-channel'), 'main');
    await back.json();
  });

  it('moves a call to the next channel on connection refused, 500, 429 and timeout', async () => {
    const dead = await refusedUrl();
    await start(config({ dead: { url: dead, priority: 0 }, flaky: { url: a.url, priority: 1 }, good: { url: b.url, priority: 2 } }, {}, { timeout_ms: 400 }));
    for (const behaviour of [{ kind: 'status', status: 500 }, { kind: 'status', status: 429 }, { kind: 'hang' }] as const) {
      a.script(behaviour);
      const before = b.requests.length;
      const res = await chat(server!, token);
      assert.equal(res.status, 200, `${JSON.stringify(behaviour)}: ${res.status}`);
      assert.equal(res.headers.get('x-gengate-channel'), 'good');
      assert.equal(res.headers.get('x-gengate-provider'), 'openai');
      assert.equal(res.headers.get('x-gengate-model'), MODEL);
      assert.equal(((await res.json()) as Json).choices[0].message.content, 'Echo: hello');
      assert.equal(b.requests.length, before + 1);
    }
    assert.equal(a.requests.length, 3, 'the flaky channel got each call once');
  });

  it('does not move a call the upstream refused with 400: the caller gets the refusal', async () => {
    await start(config({ main: { url: a.url, priority: 0 }, backup: { url: b.url, priority: 1 } }));
    a.script({ kind: 'status', status: 400, message: 'Your request was rejected as a result of our safety system.' });
    const res = await chat(server!, token);
    assert.equal(res.status, 400);
    assert.match(((await res.json()) as Json).error.message, /safety system/);
    assert.equal(b.requests.length, 0);
    assert.equal((await channel(server!, 'main')).state, 'healthy');
  });

  it('streams: fails over before the first chunk; after it, ends with an error event and no [DONE]', async () => {
    await start(config({ main: { url: a.url, priority: 0 }, backup: { url: b.url, priority: 1 } }));
    a.script({ kind: 'status', status: 503 });
    const res = await chat(server!, token, true);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-gengate-channel'), 'backup');
    const data: string[] = [];
    for await (const each of sseData(res)) data.push(each);
    assert.equal(data[data.length - 1], '[DONE]');

    a.script({ kind: 'reset_mid_stream', afterChunks: 1 });
    const broken = await chat(server!, token, true);
    assert.equal(broken.status, 200);
    assert.equal(broken.headers.get('x-gengate-channel'), 'main');
    const events: string[] = [];
    for await (const each of sseData(broken)) events.push(each);
    assert.ok(!events.includes('[DONE]'), 'a broken stream does not end with [DONE]');
    assert.ok(JSON.parse(events[events.length - 1]!).error, `the last event is an error: ${events[events.length - 1]}`);
    assert.equal(b.requests.length, 1, 'nothing is sent elsewhere once a chunk went out');
    // The failure after the first chunk counts against the channel, and the stream's hold on it is let go.
    const main = await channel(server!, 'main');
    assert.equal(main.consecutive_failures, 1, "the stream's start counted as a success, its break as a failure");
    assert.equal(main.in_flight, 0);
    assert.equal((await channel(server!, 'backup')).in_flight, 0);
  });

  it('cools a channel down after failures in a row, doubles the cool-down on a failed probe, closes on a good one', async () => {
    await start(config({ main: { url: a.url, priority: 0 }, backup: { url: b.url, priority: 1 } }, { routing: { failure_threshold: 2, cooldown_ms: 600 } }));
    a.script({ kind: 'status', status: 500 }, { kind: 'status', status: 500 });
    for (let i = 0; i < 2; i++) await (await chat(server!, token)).json();
    const cooling = await channel(server!, 'main');
    assert.equal(cooling.state, 'cooling_down');
    assert.equal(cooling.consecutive_failures, 2);
    // While it cools down no call reaches it.
    for (let i = 0; i < 3; i++) assert.equal((await chat(server!, token)).headers.get('x-gengate-channel'), 'backup');
    assert.equal(a.requests.length, 2);

    // After the cool-down one probe goes; it fails, so the next cool-down is twice as long.
    a.script({ kind: 'status', status: 500 });
    const probedAt = await eventually('the probe to reach main', async () => {
      await (await chat(server!, token)).json();
      return a.requests.length === 3 ? Date.now() : undefined;
    }, 5000);
    assert.equal((await channel(server!, 'main')).state, 'cooling_down');
    while (Date.now() - probedAt < 900) {
      await (await chat(server!, token)).json();
      if (Date.now() - probedAt < 1000) assert.equal(a.requests.length, 3, 'no call within the doubled cool-down (1200 ms)');
    }
    // The next probe succeeds and the channel is healthy again.
    await eventually('a good probe to close the channel', async () => {
      await (await chat(server!, token)).json();
      return a.requests.length === 4;
    }, 5000);
    const healthy = await channel(server!, 'main');
    assert.equal(healthy.state, 'healthy');
    assert.equal(healthy.consecutive_failures, 0);
    assert.equal((await chat(server!, token)).headers.get('x-gengate-channel'), 'main');
  });

  it('disables a channel whose key the upstream refuses (401), with the reason, until an administrator enables it', async () => {
    await start(config({ main: { url: a.url, priority: 0 }, backup: { url: b.url, priority: 1 } }));
    a.script({ kind: 'status', status: 401, message: 'Incorrect API key provided.' });
    const res = await chat(server!, token);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-gengate-channel'), 'backup');
    await res.json();
    const disabled = await eventually('main disabled', async () => {
      const c = await channel(server!, 'main');
      return c.state === 'disabled' ? c : undefined;
    });
    assert.match(disabled.disabled_reason, /Incorrect API key/);
    for (let i = 0; i < 3; i++) await (await chat(server!, token)).json();
    assert.equal(a.requests.length, 1);

    // Stored: a restart on the same data keeps it disabled.
    const dataDir = server!.dataDir;
    await server!.server.close();
    server = await startTestServer({ GENGATE_CONFIG: config({ main: { url: a.url, priority: 0 }, backup: { url: b.url, priority: 1 } }), DATA_DIR: dataDir });
    assert.equal((await channel(server, 'main')).state, 'disabled');
    assert.equal((await server.fetch('/admin/channels/openai/main/enable', { method: 'POST', token: server.adminToken })).status, 200);
    assert.equal((await channel(server, 'main')).state, 'healthy');
  });

  it('answers /admin/channels in its documented shape, 404 for an unknown channel, and counts calls per channel in /metrics', async () => {
    await start(config({ main: { url: a.url } }));
    await (await chat(server!, token)).json();
    assert.deepEqual(Object.keys(await channel(server!, 'main')).sort(), ['consecutive_failures', 'disabled_reason', 'error_rate_1m', 'in_flight', 'latency_p50_ms_1m', 'models', 'name', 'provider', 'state']);
    const main = await channel(server!, 'main');
    assert.ok(main.models.includes(MODEL));
    assert.equal(typeof main.latency_p50_ms_1m, 'number');
    const unknown = await server!.fetch('/admin/channels/openai/nope/disable', { method: 'POST', token: server!.adminToken, json: {} });
    assert.equal(unknown.status, 404);
    assert.equal(((await unknown.json()) as Json).error.code, 'channel_not_found');
    const user = await server!.fetch('/admin/channels', { token });
    assert.equal(user.status, 403);
    const metrics = await (await server!.fetch('/metrics')).text();
    assert.match(metrics, /gengate_channel_calls_total\{provider="openai",channel="main",outcome="success"\} 1/);
    assert.match(metrics, /gengate_channel_state\{provider="openai",channel="main"\} 0/);
    assert.match(metrics, /gengate_channel_call_duration_seconds_count\{provider="openai",channel="main"\} 1/);
  });
});

describe('routing.max_attempts: one budget for a call, a channel\'s own retries included', () => {
  /** Retries within a channel as a provider has them by default, without the waits. */
  const retries = { retry: { attempts: 3, base_delay_ms: 1, max_delay_ms: 2000 } };
  const failing = (status: number, headers?: Record<string, string>) => Array.from({ length: 12 }, () => ({ kind: 'status' as const, status, ...(headers ? { headers } : {}) }));
  const cleanups: (() => Promise<void>)[] = [];
  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  async function upstreams(count: number): Promise<FakeChatUpstream[]> {
    const fakes = await Promise.all(Array.from({ length: count }, () => startFakeChatUpstream()));
    cleanups.push(...fakes.map((f) => () => f.close()));
    return fakes;
  }

  async function gateway(gengateConfig: string): Promise<{ server: TestServer; token: string }> {
    const server = await startTestServer({ GENGATE_CONFIG: gengateConfig });
    cleanups.push(() => server.close());
    return { server, token: await server.tokenFor('budget') };
  }

  it('four channels answering 500: three upstream requests in all, one on each of the first three, for a call and for a stream', async () => {
    const fakes = await upstreams(4);
    const { server, token } = await gateway(config(Object.fromEntries(fakes.map((f, i) => [`c${i}`, { url: f.url, priority: i }])), {}, retries));
    for (const stream of [false, true]) {
      for (const f of fakes) {
        f.requests.length = 0;
        f.script(...failing(500));
      }
      const res = await chat(server, token, stream);
      assert.equal(res.status, 502, `stream ${stream}`);
      assert.equal(((await res.json()) as Json).error.code, 'upstream_error');
      assert.deepEqual(fakes.map((f) => f.requests.length), [1, 1, 1, 0], `stream ${stream}`);
    }
  });

  it('one channel answering 500: the call is tried on it three times in all', async () => {
    const [only] = await upstreams(1);
    const { server, token } = await gateway(config({ only: { url: only!.url } }, {}, { retry: { attempts: 5, base_delay_ms: 1, max_delay_ms: 10 } }));
    only!.script(...failing(500));
    const res = await chat(server, token);
    assert.equal(res.status, 502);
    await res.json();
    assert.equal(only!.requests.length, 3);
  });

  it('429 with Retry-After: the channel is tried again after the wait, within the budget', async () => {
    const [only] = await upstreams(1);
    const { server, token } = await gateway(config({ only: { url: only!.url } }, {}, retries));
    only!.script({ kind: 'status', status: 429, headers: { 'retry-after': '1' } });
    const started = Date.now();
    const served = await chat(server, token);
    assert.equal(served.status, 200);
    assert.equal(((await served.json()) as Json).choices[0].message.content, 'Echo: hello');
    assert.ok(Date.now() - started >= 950, `the second try waited for Retry-After (${Date.now() - started} ms)`);
    assert.equal(only!.requests.length, 2);

    only!.requests.length = 0;
    only!.script(...failing(429, { 'retry-after': '0' }));
    const refused = await chat(server, token);
    assert.equal(refused.status, 429);
    assert.ok(refused.headers.get('retry-after'));
    await refused.json();
    assert.equal(only!.requests.length, 3);
  });

  it('an image task: three upstream requests over four failing channels, one on a lone channel\'s, each in generate_info.routing.attempts', async () => {
    const key = 'sk-budget-images';
    process.env.BUDGET_IMAGES_KEY = key;
    const images = await Promise.all(Array.from({ length: 4 }, () => FakeOpenAiImages.start(key)));
    cleanups.push(...images.map((f) => () => f.close()));
    const imageConfig = (channels: FakeOpenAiImages[]) => JSON.stringify({
      providers: { openai: { api_key_env: 'BUDGET_IMAGES_KEY', ...retries, channels: channels.map((f, i) => ({ name: `c${i}`, base_url: f.baseUrl, priority: i })) } },
    });
    const failAll = () => {
      for (const f of images) for (let i = 0; i < 12; i++) f.inject('POST', '/v1/images/generations', { status: 500, body: { error: { message: 'The server had an error while processing your request.', type: 'server_error', param: null, code: null } } });
    };
    const attemptsOf = async (server: TestServer, token: string, res: Response): Promise<Json[]> => {
      const body = (await res.json()) as Json;
      assert.equal(res.status, 502, JSON.stringify(body));
      const record = (await (await server.fetch(`/v1/ai/result/${body.error.task_id}`, { token })).json()) as Json;
      assert.equal(record.queue_status.status, 'failed');
      return record.generate_info.routing.attempts;
    };
    const generate = (server: TestServer, token: string) => server.fetch('/v1/images/generations', { method: 'POST', token, json: { model: 'gpt-image-1', prompt: 'a red kite', size: '1024x1024' } });

    failAll();
    const four = await gateway(imageConfig(images));
    const spread = await attemptsOf(four.server, four.token, await generate(four.server, four.token));
    assert.deepEqual(images.map((f) => f.apiRequests.length), [1, 1, 1, 0]);
    assert.deepEqual(spread.map((a: Json) => a.channel), ['c0', 'c1', 'c2']);
    for (const attempt of spread) assert.match(attempt.error, /HTTP 500/);

    for (const f of images) f.requests.length = 0;
    const lone = await gateway(imageConfig([images[3]!]));
    const again = await attemptsOf(lone.server, lone.token, await generate(lone.server, lone.token));
    assert.equal(images[3]!.apiRequests.length, 3);
    assert.deepEqual(again.map((a: Json) => a.channel), ['c0', 'c0', 'c0']);
  });
});

describe('channel state shared through Redis', () => {
  it('a disable and a cool-down on one instance are followed by another', async (t) => {
    const redis = await redisEnv();
    if ('skip' in redis) return t.skip(redis.skip);
    const a = await startFakeChatUpstream();
    const b = await startFakeChatUpstream();
    const gengateConfig = config({ main: { url: a.url, priority: 0 }, backup: { url: b.url, priority: 1 } }, { routing: { failure_threshold: 1, cooldown_ms: 60_000 } });
    const one = await startTestServer({ ...redis.env, INSTANCE_ID: 'routing-one', GENGATE_CONFIG: gengateConfig });
    const two = await startTestServer({ ...redis.env, INSTANCE_ID: 'routing-two', GENGATE_CONFIG: gengateConfig });
    try {
      const token = await one.tokenFor('shared');
      a.script({ kind: 'status', status: 500 });
      await (await chat(one, token)).json();
      await eventually('the other instance to see main cooling down', async () => (await channel(two, 'main')).state === 'cooling_down');
      const before = a.requests.length;
      // Each instance keeps its own store here: only the channel state goes through Redis.
      assert.equal((await chat(two, await two.tokenFor('shared'))).headers.get('x-gengate-channel'), 'backup');
      assert.equal(a.requests.length, before);
      await two.fetch('/admin/channels/openai/backup/disable', { method: 'POST', token: two.adminToken, json: { reason: 'rotating keys' } });
      const seen = await eventually('the first instance to see backup disabled', async () => {
        const c = await channel(one, 'backup');
        return c.state === 'disabled' ? c : undefined;
      });
      assert.equal(seen.disabled_reason, 'rotating keys');
    } finally {
      await one.close();
      await two.close();
      await a.close();
      await b.close();
      await redis.cleanup();
    }
  });
});
