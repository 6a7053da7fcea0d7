import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { startFakeChatUpstream, type FakeChatUpstream } from '../fakes/openai-chat-upstream.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { browserMissing, ensureConsoleBuilt, launchBrowser, signIn, withScreenshot } from './support.ts';

const skip = browserMissing();
if (skip) process.stdout.write(`${skip}\n`);

describe('console: providers, models, MCP servers and the audit log', { skip }, () => {
  let srv: TestServer;
  let upstream: FakeChatUpstream;
  let browser: Browser;
  let page: Page;
  const apiKey = `sk-console-${randomBytes(10).toString('hex')}`;

  const auditCount = async () => ((await (await srv.fetch('/admin/audit?limit=500', { token: srv.adminToken })).json()) as { data: unknown[] }).data.length;

  before(async () => {
    ensureConsoleBuilt();
    upstream = await startFakeChatUpstream();
    srv = await startTestServer({
      GENGATE_SECRET_KEY: randomBytes(32).toString('base64'),
      GENGATE_CONFIG: JSON.stringify({ providers: { openai: { base_url: upstream.url, retry: { attempts: 0 } } } }),
    });
    browser = await launchBrowser();
    page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await signIn(page, srv.url, srv.adminToken);
  });

  after(async () => {
    await browser?.close();
    await srv?.close();
    await upstream?.close();
  });

  it('adds a channel: a bad URL is refused before sending, a taken name by the server, each next to its field', async () => {
    await withScreenshot(page, 'add channel', async () => {
      await page.goto(`${srv.url}/console/#/providers`);
      await page.waitForSelector('[data-provider=openai]');
      const form = page.locator('[data-testid=add-channel]');
      const before = await auditCount();
      await form.locator('input[name=code]').fill('openai');
      await form.locator('input[name=name]').fill('backup');
      await form.locator('input[name=base_url]').fill('ftp://nowhere');
      await form.locator('button[type=submit]').click();
      await form.locator('[data-field-error=base_url]').waitFor();
      assert.equal(await auditCount(), before, 'nothing was sent');

      await form.locator('input[name=name]').fill('openai');
      await form.locator('input[name=base_url]').fill(upstream.url);
      await form.locator('button[type=submit]').click();
      assert.match((await form.locator('[data-field-error=name]').textContent())!, /already has a channel/);

      await form.locator('input[name=name]').fill('backup');
      await form.locator('input[name=api_key]').fill(apiKey);
      await form.locator('button[type=submit]').click();
      const row = page.locator('[data-channel="openai/backup"]');
      await row.waitFor();
      assert.equal((await row.locator('[data-testid=key]').textContent())!.trim(), `…${apiKey.slice(-4)}`);
      assert.ok(!(await page.content()).includes(apiKey), 'the key is nowhere on the page');
    });
  });

  it('rotates a channel\'s key, tests the channel, and disables it with a reason', async () => {
    await withScreenshot(page, 'channel actions', async () => {
      const row = page.locator('[data-channel="openai/backup"]');
      await row.locator('text=Edit / rotate key').click();
      const edit = page.locator('[data-testid=edit-channel]');
      const rotated = `sk-rotated-${randomBytes(6).toString('hex')}`;
      await edit.locator('input[name=api_key]').fill(rotated);
      await edit.locator('button[type=submit]').click();
      await page.waitForSelector(`[data-channel="openai/backup"] [data-testid=key]:text("…${rotated.slice(-4)}")`);

      await row.locator('button:text("Test")').click();
      await page.waitForSelector('[data-channel="openai/backup"] [data-testid=channel-message]:text("test ok")');
      assert.equal(upstream.requests.at(-1)!.headers.authorization, `Bearer ${rotated}`, 'the test used the rotated key');

      page.once('dialog', (dialog) => void dialog.accept('key being replaced'));
      await row.locator('button:text("Disable")').click();
      await page.waitForSelector('[data-channel="openai/backup"] .status.disabled');
      assert.match((await row.textContent())!, /key being replaced/);
    });
  });

  it('sets a model\'s price and fallbacks, refusing an unknown alias before sending', async () => {
    await withScreenshot(page, 'model settings', async () => {
      await page.goto(`${srv.url}/console/#/model-settings`);
      const row = page.locator('[data-model="gpt-4.1-mini"]');
      await row.locator('text=Prices & fallbacks').click();
      const form = page.locator('[data-testid=edit-model]');
      await form.locator('input[name=per_request]').fill('3');
      await form.locator('input[name=fallbacks]').fill('no-such-model');
      await form.locator('button[type=submit]').click();
      await form.locator('[data-field-error=fallbacks]').waitFor();
      await form.locator('input[name=fallbacks]').fill('gpt-4.1');
      await form.locator('button[type=submit]').click();
      await page.waitForSelector('[data-model="gpt-4.1-mini"] [data-testid=pricing]:text("per_request=3")');
      const listed = (await (await srv.fetch('/admin/models', { token: srv.adminToken })).json()) as { data: { alias: string; fallbacks: string[] }[] };
      assert.deepEqual(listed.data.find((m) => m.alias === 'gpt-4.1-mini')!.fallbacks, ['gpt-4.1']);
    });
  });

  it('adds an MCP server whose header value stays hidden, and shows every change in the audit log', async () => {
    await withScreenshot(page, 'mcp and audit', async () => {
      await page.goto(`${srv.url}/console/#/mcp-servers`);
      const form = page.locator('[data-testid=add-mcp]');
      await form.locator('input[name=name]').fill('gengate');
      await form.locator('input[name=url]').fill('http://127.0.0.1:9/mcp');
      await form.locator('button[type=submit]').click();
      await form.locator('[data-field-error=name]').waitFor();
      await form.locator('input[name=name]').fill('everything');
      await form.locator('input[name=header]').fill('Authorization');
      await form.locator('input[name=value]').fill('Bearer mcp-secret-value');
      await form.locator('button[type=submit]').click();
      await page.waitForSelector('[data-mcp=everything]');
      assert.match((await page.locator('[data-mcp=everything]').textContent())!, /Authorization: \*\*\*/);

      await page.goto(`${srv.url}/console/#/audit`);
      await page.waitForSelector('[data-testid=audit] [data-action="mcp_server.create"]');
      const actions = await page.locator('[data-testid=audit] tr[data-action]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-action')));
      assert.deepEqual(actions.slice(0, 5), ['mcp_server.create', 'model.update', 'channel.disable', 'channel.update', 'channel.create']);
      await page.locator('[data-testid=audit] tr[data-action="channel.update"] button').click();
      const content = await page.content();
      assert.ok(content.includes('***') && !content.includes(apiKey) && !content.includes('mcp-secret-value'));
    });
  });
});
