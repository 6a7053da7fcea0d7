/**
 * Cached prompt tokens, end to end: upstreams (OpenAI, Anthropic, Gemini) that report input read
 * from and written to their prompt cache; the chat answer's prompt_tokens_details, the ledger row's
 * uncached, cached and cache-write input priced at their own prices, the usage rows that sum them,
 * and tokens_per_minute counting the whole prompt. On SQLite, and on PostgreSQL (with Redis) when reachable.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dropSchema, postgresEnv, redisEnv, startTestServer, type TestServer } from './support/server.ts';
import { startFakeChatUpstream, type FakeChatUpstream } from './fakes/openai-chat-upstream.ts';
import { AnthropicUpstream } from './fakes/anthropic-upstream.ts';
import { GeminiUpstream } from './fakes/gemini-upstream.ts';
import { sseData } from './support/sse.ts';
import { eventually } from './support/wait.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const OPENAI_KEY_ENV = 'CACHED_TEST_OPENAI_KEY';
const ANTHROPIC_KEY_ENV = 'CACHED_TEST_ANTHROPIC_KEY';
const GEMINI_KEY_ENV = 'CACHED_TEST_GEMINI_KEY';
const ANTHROPIC_KEY = 'sk-ant-cached';
const GEMINI_KEY = 'AIza-cached';

const GPT = 'gpt-4.1';
const CLAUDE = 'claude-haiku-5-5';
const GEMINI = 'gemini-2.5-flash';
/** Credits a million tokens: input 2, read from the cache 0.5, written to it 2.5, output 8. */
const PRICES = { input_per_million: 2, cached_input_per_million: 0.5, cache_write_per_million: 2.5, output_per_million: 8 };
/** What a call costs under PRICES, in credits (as the ledger shows it: whole micro-credits). */
const costOf = (t: { input: number; cached: number; write: number; output: number }) =>
  Math.round(2 * t.input + 0.5 * t.cached + 2.5 * t.write + 8 * t.output) / 1_000_000;

interface Upstreams {
  openai: FakeChatUpstream;
  anthropic: AnthropicUpstream;
  gemini: GeminiUpstream;
}

function configFor(fakes: Upstreams): string {
  const retry = { attempts: 2, base_delay_ms: 1, max_delay_ms: 100 };
  return JSON.stringify({
    providers: {
      openai: { base_url: fakes.openai.url, api_key_env: OPENAI_KEY_ENV, timeout_ms: 10_000, retry },
      anthropic: { base_url: `${fakes.anthropic.url}/v1`, api_key_env: ANTHROPIC_KEY_ENV, timeout_ms: 10_000, retry },
      google: { base_url: `${fakes.gemini.url}/v1beta`, api_key_env: GEMINI_KEY_ENV, timeout_ms: 10_000, retry },
      deepseek: { adapter: 'local' },
    },
    models: { [GPT]: { pricing: PRICES }, [CLAUDE]: { pricing: PRICES }, [GEMINI]: { pricing: PRICES } },
  });
}

/** The data of an SSE answer, [DONE] left out, parsed. */
async function events(res: Response): Promise<Json[]> {
  assert.equal(res.status, 200);
  const out: Json[] = [];
  for await (const data of sseData(res)) if (data !== '[DONE]') out.push(JSON.parse(data));
  return out;
}

function suite(backend: string, envOf: () => Promise<{ env: Record<string, string>; cleanup(): Promise<void> } | { skip: string }>): void {
  describe(`cached prompt tokens (${backend})`, () => {
    let fakes: Upstreams;
    let srv: TestServer;
    let skip: string | undefined;
    let cleanup: (() => Promise<void>) | undefined;

    /** The ledger row of the call that answered `res`. */
    async function rowOf(res: Response, userId: string): Promise<Json> {
      const requestId = res.headers.get('x-request-id');
      assert.ok(requestId);
      return eventually(`the ledger row of ${requestId}`, async () => {
        const page: Json = await (await srv.fetch(`/admin/requests?user_id=${userId}`, { token: srv.adminToken })).json();
        return page.data.find((r: Json) => r.request_id === requestId);
      });
    }

    function tokensOf(row: Json) {
      return { input: row.input_tokens, cached: row.cached_input_tokens, write: row.cache_write_tokens, output: row.output_tokens };
    }

    before(async () => {
      const env = await envOf();
      if ('skip' in env) return void (skip = env.skip);
      cleanup = env.cleanup;
      process.env[OPENAI_KEY_ENV] = 'sk-cached';
      process.env[ANTHROPIC_KEY_ENV] = ANTHROPIC_KEY;
      process.env[GEMINI_KEY_ENV] = GEMINI_KEY;
      fakes = { openai: await startFakeChatUpstream(), anthropic: await new AnthropicUpstream(ANTHROPIC_KEY).listen(), gemini: await new GeminiUpstream(GEMINI_KEY).listen() };
      srv = await startTestServer({ ...env.env, GENGATE_CONFIG: configFor(fakes) });
    });
    after(async () => {
      await srv?.close();
      await fakes?.openai.close();
      await fakes?.anthropic.close();
      await fakes?.gemini.close();
      await cleanup?.();
    });

    it('OpenAI: cached_tokens reach the answer (whole and streamed), the ledger prices them apart and the usage rows sum them', async (t) => {
      if (skip) return t.skip(skip);
      const token = await srv.tokenFor('cache-openai');
      const messages = [{ role: 'user', content: 'Hello there' }];
      // Prompt: 2 words + 4000 cached; answer: 2 words.
      fakes.openai.script({ kind: 'reply', content: 'Cached answer', cached: 4000 });
      const whole = await srv.fetch('/openai/v1/chat/completions', { method: 'POST', token, json: { model: GPT, messages } });
      const body: Json = await whole.json();
      assert.equal(whole.status, 200, JSON.stringify(body));
      assert.equal(body.usage.prompt_tokens, 4002);
      assert.equal(body.usage.prompt_tokens_details.cached_tokens, 4000);
      const wholeRow = await rowOf(whole, 'cache-openai');
      assert.deepEqual(tokensOf(wholeRow), { input: 2, cached: 4000, write: 0, output: 2 });
      assert.equal(wholeRow.cost, costOf({ input: 2, cached: 4000, write: 0, output: 2 }));

      fakes.openai.script({ kind: 'reply', content: 'Cached answer', cached: 1000 });
      const streamed = await srv.fetch('/v1/chat/completions', { method: 'POST', token, json: { model: GPT, messages, stream: true } });
      const usage = (await events(streamed)).at(-1).usage;
      assert.equal(usage.prompt_tokens_details.cached_tokens, 1000);
      const streamedRow = await rowOf(streamed, 'cache-openai');
      assert.deepEqual(tokensOf(streamedRow), { input: 2, cached: 1000, write: 0, output: 2 });

      const own: Json = await (await srv.fetch('/v1/usage?group_by=model', { token })).json();
      assert.deepEqual(own.rows.map((r: Json) => [r.key, r.requests, r.input_tokens, r.cached_input_tokens, r.cache_write_tokens, r.output_tokens]), [[GPT, 2, 4, 5000, 0, 4]]);
      assert.equal(own.rows[0].cost, costOf({ input: 4, cached: 5000, write: 0, output: 4 }));
      const byUser: Json = await (await srv.fetch('/admin/usage?group_by=user', { token: srv.adminToken })).json();
      const mine = byUser.rows.find((r: Json) => r.key === 'cache-openai');
      assert.deepEqual([mine.input_tokens, mine.cached_input_tokens, mine.cache_write_tokens], [4, 5000, 0]);
    });

    it('OpenAI Responses over a chat upstream: input_tokens_details.cached_tokens and the ledger row of /openai/v1/responses', async (t) => {
      if (skip) return t.skip(skip);
      const token = await srv.tokenFor('cache-responses');
      fakes.anthropic.script({ kind: 'text', text: 'Cached answer', cache: { read: 3000, write: 0 } });
      const res = await srv.fetch('/openai/v1/responses', { method: 'POST', token, json: { model: CLAUDE, input: 'Hello there' } });
      const body: Json = await res.json();
      assert.equal(res.status, 200, JSON.stringify(body));
      assert.equal(body.usage.input_tokens, 3002);
      assert.deepEqual(body.usage.input_tokens_details, { cached_tokens: 3000 });
      const row = await rowOf(res, 'cache-responses');
      assert.equal(row.endpoint, '/openai/v1/responses');
      assert.deepEqual(tokensOf(row), { input: 2, cached: 3000, write: 0, output: 2 });
      assert.equal(row.cost, costOf({ input: 2, cached: 3000, write: 0, output: 2 }));

      fakes.anthropic.script({ kind: 'text', text: 'Cached answer', cache: { read: 1500, write: 0 } });
      const streamed = await srv.fetch('/openai/v1/responses', { method: 'POST', token, json: { model: CLAUDE, input: 'Hello there', stream: true } });
      const completed = (await events(streamed)).at(-1);
      assert.equal(completed.type, 'response.completed');
      assert.deepEqual(completed.response.usage.input_tokens_details, { cached_tokens: 1500 });
      assert.deepEqual(tokensOf(await rowOf(streamed, 'cache-responses')), { input: 2, cached: 1500, write: 0, output: 2 });
    });

    it('Anthropic: cache reads and writes are in prompt_tokens and detailed; the ledger keeps the uncached input apart', async (t) => {
      if (skip) return t.skip(skip);
      const token = await srv.tokenFor('cache-anthropic');
      const messages = [{ role: 'user', content: 'Hello there' }];
      fakes.anthropic.script({ kind: 'text', text: 'Cached answer', cache: { read: 3000, write: 1000 } });
      const whole = await srv.fetch('/openai/v1/chat/completions', { method: 'POST', token, json: { model: CLAUDE, messages } });
      const body: Json = await whole.json();
      assert.equal(whole.status, 200, JSON.stringify(body));
      assert.deepEqual(body.usage, { prompt_tokens: 4002, completion_tokens: 2, total_tokens: 4004, prompt_tokens_details: { cached_tokens: 3000, cache_write_tokens: 1000 } });
      const row = await rowOf(whole, 'cache-anthropic');
      assert.deepEqual(tokensOf(row), { input: 2, cached: 3000, write: 1000, output: 2 });
      assert.equal(row.cost, costOf({ input: 2, cached: 3000, write: 1000, output: 2 }));

      fakes.anthropic.script({ kind: 'text', text: 'Cached answer', cache: { read: 500, write: 0 } });
      const streamed = await srv.fetch('/v1/chat/completions', { method: 'POST', token, json: { model: CLAUDE, messages } });
      assert.equal((await events(streamed)).at(-1).usage.prompt_tokens_details.cached_tokens, 500);
      assert.deepEqual(tokensOf(await rowOf(streamed, 'cache-anthropic')), { input: 2, cached: 500, write: 0, output: 2 });

      // The agent adds up its model calls' cache tokens.
      fakes.anthropic.script({ kind: 'text', text: 'Cached answer', cache: { read: 700, write: 300 } });
      const agent = await srv.fetch('/v1/responses', { method: 'POST', token, json: { model: CLAUDE, input: 'Hello there', stream: false } });
      const answer: Json = await agent.json();
      assert.equal(agent.status, 200, JSON.stringify(answer));
      assert.deepEqual(answer.usage.input_tokens_details, { cached_tokens: 700 });
      const agentRow = await rowOf(agent, 'cache-anthropic');
      assert.equal(agentRow.endpoint, '/v1/responses');
      assert.equal(agentRow.cached_input_tokens, 700);
      assert.equal(agentRow.cache_write_tokens, 300);
      assert.equal(agentRow.input_tokens, answer.usage.input_tokens - 1000);

      const own: Json = await (await srv.fetch('/v1/usage?group_by=day', { token })).json();
      assert.deepEqual(own.rows.map((r: Json) => [r.requests, r.cached_input_tokens, r.cache_write_tokens]), [[3, 4200, 1300]]);
    });

    it('Gemini: cachedContentTokenCount becomes cached_tokens, whole and streamed, and the ledger\'s cached input', async (t) => {
      if (skip) return t.skip(skip);
      const token = await srv.tokenFor('cache-gemini');
      const messages = [{ role: 'user', content: 'Hello there' }];
      fakes.gemini.script({ kind: 'text', text: 'Cached answer', cached: 5000 });
      const whole = await srv.fetch('/openai/v1/chat/completions', { method: 'POST', token, json: { model: GEMINI, messages } });
      const body: Json = await whole.json();
      assert.equal(whole.status, 200, JSON.stringify(body));
      assert.equal(body.usage.prompt_tokens, 5002);
      assert.equal(body.usage.prompt_tokens_details.cached_tokens, 5000);
      const row = await rowOf(whole, 'cache-gemini');
      assert.deepEqual(tokensOf(row), { input: 2, cached: 5000, write: 0, output: 2 });
      assert.equal(row.cost, costOf({ input: 2, cached: 5000, write: 0, output: 2 }));

      fakes.gemini.script({ kind: 'text', text: 'Cached answer', cached: 2500 });
      const streamed = await srv.fetch('/v1/chat/completions', { method: 'POST', token, json: { model: GEMINI, messages } });
      assert.equal((await events(streamed)).at(-1).usage.prompt_tokens_details.cached_tokens, 2500);
      assert.deepEqual(tokensOf(await rowOf(streamed, 'cache-gemini')), { input: 2, cached: 2500, write: 0, output: 2 });

      const byProvider: Json = await (await srv.fetch('/admin/usage?group_by=provider', { token: srv.adminToken })).json();
      assert.equal(byProvider.rows.find((r: Json) => r.key === 'google').cached_input_tokens, 7500);
    });

    it('the local engine reports no cache: the answer has no prompt_tokens_details and the row none cached', async (t) => {
      if (skip) return t.skip(skip);
      const token = await srv.tokenFor('cache-local');
      const res = await srv.fetch('/openai/v1/chat/completions', { method: 'POST', token, json: { model: 'deepseek-chat', messages: [{ role: 'user', content: 'Hello there' }] } });
      const body: Json = await res.json();
      assert.equal(res.status, 200, JSON.stringify(body));
      assert.equal(body.usage.prompt_tokens_details, undefined);
      const row = await rowOf(res, 'cache-local');
      assert.deepEqual([row.cached_input_tokens, row.cache_write_tokens, row.input_tokens], [0, 0, body.usage.prompt_tokens]);
    });

    it('tokens_per_minute counts the whole prompt, cached input included', async (t) => {
      if (skip) return t.skip(skip);
      const created = await srv.fetch('/admin/tokens', { method: 'POST', token: srv.adminToken, json: { user_id: 'cache-tpm', limits: { tokens_per_minute: 4000 } } });
      const { token }: Json = await created.json();
      const call = () => srv.fetch('/openai/v1/chat/completions', { method: 'POST', token, json: { model: GPT, messages: [{ role: 'user', content: 'Hello there' }] } });
      fakes.openai.script({ kind: 'reply', content: 'Cached answer', cached: 8000 });
      const first = await call();
      assert.equal(first.status, 200);
      // Settled (counters first, then the row): 8004 tokens counted against 4000 a minute, two minutes' worth.
      await rowOf(first, 'cache-tpm');
      const second = await call();
      assert.equal(second.status, 429, 'only 4 uncached tokens were used, but the whole prompt counts');
      assert.equal(((await second.json()) as Json).error.code, 'rate_limited');
    });

    it('lists the cached and cache-write prices in billing_mode', async (t) => {
      if (skip) return t.skip(skip);
      const body: Json = await (await srv.fetch('/v1/models/list?type=text_generate', { token: await srv.tokenFor('cache-prices') })).json();
      assert.deepEqual(body.modelList.find((m: Json) => m.alias === GPT).billing_mode, { currency: 'credits', ...PRICES });
    });

    it('a chat call naming no catalog model is a refused row without the caller\'s text', async (t) => {
      if (skip) return t.skip(skip);
      const token = await srv.tokenFor('cache-refused');
      const res = await srv.fetch('/openai/v1/chat/completions', { method: 'POST', token, json: { model: 'no-such-model-xyz', messages: [{ role: 'user', content: 'Hi' }] } });
      assert.equal(res.status, 404);
      const row = await rowOf(res, 'cache-refused');
      assert.deepEqual([row.status, row.model, row.http_status, row.cached_input_tokens, row.cache_write_tokens, row.cost], ['refused', null, 404, 0, 0, 0]);
    });
  });
}

suite('SQLite', async () => ({ env: {}, cleanup: async () => undefined }));
// With Redis when it is reachable: the token rate then settles through the shared counters.
suite('PostgreSQL', async () => {
  const pg = await postgresEnv();
  if ('skip' in pg) return pg;
  const redis = await redisEnv();
  const shared = 'skip' in redis ? undefined : redis;
  return {
    env: { ...pg.env, ...shared?.env },
    cleanup: async () => {
      await shared?.cleanup();
      await dropSchema(pg.env.DATABASE_SCHEMA!);
    },
  };
});
