/**
 * The console's usage and requests pages in a browser: a chat call whose upstream read from and
 * wrote to its prompt cache shows its cached input and cache writes apart from the uncached input.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import { startTestServer, type TestServer } from '../support/server.ts';
import { AnthropicUpstream } from '../fakes/anthropic-upstream.ts';
import { browserMissing, ensureConsoleBuilt, launchBrowser, signIn, withScreenshot } from './support.ts';

const skip = browserMissing();
if (skip) process.stdout.write(`${skip}\n`);

const KEY_ENV = 'CONSOLE_USAGE_ANTHROPIC_KEY';
const KEY = 'sk-ant-console';
const MODEL = 'claude-haiku-5-5';

describe('console usage pages in a browser', { skip }, () => {
  let fake: AnthropicUpstream;
  let srv: TestServer;
  let browser: Browser;
  let page: Page;

  before(async () => {
    ensureConsoleBuilt();
    process.env[KEY_ENV] = KEY;
    fake = await new AnthropicUpstream(KEY).listen();
    srv = await startTestServer({
      GENGATE_CONFIG: JSON.stringify({ providers: { anthropic: { base_url: `${fake.url}/v1`, api_key_env: KEY_ENV } } }),
    });
    // Prompt: 2 uncached words, 3000 read from the cache, 1000 written to it; answer: 2 words.
    fake.script({ kind: 'text', text: 'Cached answer', cache: { read: 3000, write: 1000 } });
    const res = await srv.fetch('/v1/chat/completions', { method: 'POST', token: await srv.tokenFor('cora'), json: { model: MODEL, stream: false, messages: [{ role: 'user', content: 'Hello there' }] } });
    assert.equal(res.status, 200, await res.text());
    browser = await launchBrowser();
    page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await signIn(page, srv.url, srv.adminToken);
  });

  after(async () => {
    await browser?.close();
    await srv?.close();
    await fake?.close();
    delete process.env[KEY_ENV];
  });

  it('the usage page shows cached input and cache writes per model', async () => {
    await withScreenshot(page, 'usage cached tokens', async () => {
      await page.goto(`${srv.url}/console/#/usage`);
      const row = await page.waitForSelector(`[data-testid=usage-rows] tr:has(td:text-is("${MODEL}"))`);
      assert.equal(await row.$eval('.cached-input', (td) => td.textContent), '3000');
      assert.equal(await row.$eval('.cache-writes', (td) => td.textContent), '1000');
      const headers = await page.$$eval('table th', (ths) => ths.map((th) => th.textContent));
      assert.ok(headers.includes('Cached input') && headers.includes('Cache writes'), headers.join(', '));
    });
  });

  it('the requests page shows a call\'s uncached, cached, written and output tokens', async () => {
    await withScreenshot(page, 'requests cached tokens', async () => {
      await page.goto(`${srv.url}/console/#/requests`);
      const row = await page.waitForSelector(`[data-testid=request-rows] tr:has(td:text-is("${MODEL}"))`);
      assert.equal(await row.$eval('.tokens', (td) => td.textContent), '2/3000/1000/2');
    });
  });
});
