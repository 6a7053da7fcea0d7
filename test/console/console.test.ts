import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';
import type { Browser, Page } from 'playwright-core';
import { startTestServer, type TestServer } from '../support/server.ts';
import { eventually } from '../support/wait.ts';
import { browserMissing, ensureConsoleBuilt, launchBrowser, signIn, withScreenshot } from './support.ts';

const skip = browserMissing();
if (skip) process.stdout.write(`${skip}\n`);

/** A callback receiver that refuses (500) until told to accept. */
async function startReceiver() {
  let accept = false;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(accept ? 200 : 500).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    accept: () => { accept = true; },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('console in a browser', { skip }, () => {
  let srv: TestServer;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let browser: Browser;
  let page: Page;
  let imageTaskId: string;
  let aliceToken: string;

  before(async () => {
    ensureConsoleBuilt();
    receiver = await startReceiver();
    srv = await startTestServer();
    // One try per delivery, so a refused update is failed at once and waits for a retry by hand.
    const config = await srv.fetch('/admin/config', { method: 'PUT', token: srv.adminToken, json: { callback_url: receiver.url, callback_retry_delays_ms: [], callback_timeout_ms: 2000 } });
    assert.equal(config.status, 200);
    browser = await launchBrowser();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  });

  after(async () => {
    await browser?.close();
    await srv?.close();
    await receiver?.close();
  });

  it('signs in with the admin token and shows the overview', async () => {
    await withScreenshot(page, 'admin sign-in', async () => {
      await signIn(page, srv.url, srv.adminToken);
      assert.equal(await page.textContent('nav .who'), 'admin');
      await page.waitForSelector('[data-testid=window-24h]');
    });
  });

  it('creates a token and shows the plain value once', async () => {
    await withScreenshot(page, 'create token', async () => {
      await page.goto(`${srv.url}/console/#/tokens`);
      await page.fill('input[placeholder="user id"]', 'alice');
      await page.click('text=Create token');
      aliceToken = (await page.textContent('[data-testid=new-token]'))!.trim();
      const res = await srv.fetch('/v1/tasks', { token: aliceToken });
      assert.equal(res.status, 200, 'the token shown works');
      await page.waitForSelector('[data-testid=tokens-table] button:text("alice")');
      await page.reload();
      await page.waitForSelector('[data-testid=tokens-table] button:text("alice")');
      assert.equal(await page.$('[data-testid=new-token]'), null, 'not shown again');
      assert.ok(!(await page.content()).includes(aliceToken), 'the plain token is nowhere on the page');
    });
  });

  it('submits an image task from the playground and watches it reach success', async () => {
    await withScreenshot(page, 'playground image', async () => {
      await page.goto(`${srv.url}/console/#/playground`);
      await page.fill('textarea[name=prompt]', 'a lighthouse at dusk');
      await page.click('button:text("Submit")');
      await page.waitForSelector('[data-testid=live-status]:text("success")', { timeout: 60_000 });
      const width = await page.$eval('.live img', (img) => (img as HTMLImageElement).complete ? (img as HTMLImageElement).naturalWidth : 0);
      assert.ok(width > 0, 'the output image loaded');
      imageTaskId = (await page.textContent('.live a'))!.trim();
    });
  });

  it('opens the task and shows its image, then retries a failed callback', async () => {
    await withScreenshot(page, 'task detail', async () => {
      // Every update of the task was refused once and, with no retries left, failed.
      await eventually('failed deliveries', async () => {
        const { data } = (await (await srv.fetch(`/admin/callbacks?task_id=${imageTaskId}`, { token: srv.adminToken })).json()) as { data: { state: string }[] };
        return data.length > 0 && data.every((d) => d.state === 'failed');
      });
      await page.click('.live a');
      await page.waitForSelector('[data-testid=task-status]:text("success")');
      await page.waitForFunction(() => [...document.querySelectorAll('.outputs img')].some((img) => (img as HTMLImageElement).naturalWidth > 0));
      await page.waitForSelector('[data-testid=deliveries] td.delivery.failed');
      receiver.accept();
      await page.click('[data-testid=deliveries] button:text("Retry now")');
      await page.waitForSelector('[data-testid=deliveries] td.delivery.delivered', { timeout: 15_000 });
    });
  });

  it('renders a 3D model in the viewer', async () => {
    await withScreenshot(page, '3D viewer', async () => {
      await page.goto(`${srv.url}/console/#/playground`);
      await page.click('.tabs button:text("3D")');
      await page.fill('textarea[name=prompt]', 'a teapot');
      await page.click('button:text("Submit")');
      await page.waitForSelector('[data-testid=live-status]:text("success")', { timeout: 90_000 });
      const canvas = await page.waitForSelector('[data-testid=model-viewer][data-state=ready]', { timeout: 30_000 });
      const { data, info } = await sharp(await canvas.screenshot()).raw().toBuffer({ resolveWithObject: true });
      const at = (Math.floor(info.height / 2) * info.width + Math.floor(info.width / 2)) * info.channels;
      const centre = [data[at], data[at + 1], data[at + 2]];
      assert.notDeepEqual(centre, [0x1e, 0x24, 0x30], 'the model covers the centre of the viewer');
    });
  });

  it('lists batches with their counts and downloads their output and error files', async () => {
    await withScreenshot(page, 'batches', async () => {
      const form = new FormData();
      form.set('purpose', 'batch');
      const lines = [1, 2].map((i) => JSON.stringify({ custom_id: `emb-${i}`, method: 'POST', url: '/v1/embeddings', body: { model: 'text-embedding-3-small', input: `text ${i}`, dimensions: 256 } }));
      form.set('file', new Blob([[...lines, 'not json'].join('\n')]), 'input.jsonl');
      const file = (await (await srv.fetch('/openai/v1/files', { method: 'POST', token: aliceToken, body: form })).json()) as { id: string };
      const created = await srv.fetch('/openai/v1/batches', { method: 'POST', token: aliceToken, json: { input_file_id: file.id, endpoint: '/v1/embeddings', completion_window: '24h' } });
      const batchId = ((await created.json()) as { id: string }).id;
      await eventually('the batch completed', async () => ((await (await srv.fetch(`/openai/v1/batches/${batchId}`, { token: aliceToken })).json()) as { status: string }).status === 'completed');

      await page.goto(`${srv.url}/console/#/batches`);
      const row = `[data-testid=batch-${batchId}]`;
      await page.waitForSelector(row);
      const cells = await page.$$eval(`${row} td`, (tds) => tds.map((td) => td.textContent));
      assert.ok(cells.includes('alice') && cells.includes('completed') && cells.includes('/v1/embeddings'), JSON.stringify(cells));
      assert.deepEqual(cells.slice(5, 8), ['3', '2', '1'], 'total, completed, failed');
      for (const [label, expected] of [['output', 'emb-1'], ['errors', 'invalid_json_line']] as const) {
        const [download] = await Promise.all([page.waitForEvent('download'), page.click(`${row} [data-testid=${label}-file]`)]);
        const chunks: Buffer[] = [];
        for await (const chunk of (await download.createReadStream())!) chunks.push(chunk as Buffer);
        assert.ok(Buffer.concat(chunks).toString('utf8').includes(expected), `${label} file holds ${expected}`);
      }
    });
  });

  it('an API token sees none of another user\'s tasks', async () => {
    await withScreenshot(page, 'api token isolation', async () => {
      await page.click('text=Sign out');
      await signIn(page, srv.url, aliceToken);
      assert.equal(await page.textContent('nav .who'), 'API token');
      assert.equal(await page.$('nav a[href="#/tokens"]'), null, 'no admin pages');
      await page.goto(`${srv.url}/console/#/tasks`);
      await page.waitForSelector('text=No tasks.');
      assert.ok(!(await page.content()).includes(imageTaskId));
      await page.goto(`${srv.url}/console/#/tasks/${imageTaskId}`);
      await page.waitForSelector('.error');
      assert.equal(await page.$('[data-testid=task-status]'), null);
      // Alice's own batches are listed for her token, without the admin's user column.
      await page.goto(`${srv.url}/console/#/batches`);
      await page.waitForSelector(`[data-testid^=batch-] >> text=completed`);
      assert.equal(await page.$('[data-testid=batches-table] th:text("User")'), null);
    });
  });
});

describe('console following a running task', { skip }, () => {
  let srv: TestServer;
  let browser: Browser;
  let page: Page;

  before(async () => {
    ensureConsoleBuilt();
    // Slow enough to watch: progress steps every second, a draft halfway.
    srv = await startTestServer({ LOCAL_ENGINE_MIN_DURATION_MS: '6000' });
    browser = await launchBrowser();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  });

  after(async () => {
    await browser?.close();
    await srv?.close();
  });

  it('the task page follows the task through its event stream: progress, the preview, then the outputs', async () => {
    await withScreenshot(page, 'task follows events', async () => {
      const token = await srv.tokenFor('watcher');
      const res = await srv.fetch('/v1/images/generations', { method: 'POST', token, json: { model: 'seedream-4.0', prompt: 'a slow sunrise', size: '64x64' }, headers: { 'x-async': '1' } });
      const taskId = ((await res.json()) as { task_id: string }).task_id;
      const requests: string[] = [];
      page.on('request', (request) => requests.push(new URL(request.url()).pathname));
      await signIn(page, srv.url, token);
      await page.goto(`${srv.url}/console/#/tasks/${taskId}`);
      await page.waitForSelector('[data-testid=task-following]');
      await page.waitForSelector('[data-testid=task-status]:text("process")', { timeout: 30_000 });
      await page.waitForFunction(() => Number.parseInt(document.querySelector('[data-testid=task-progress]')?.textContent ?? '0') > 0);
      await page.waitForFunction(() => ((document.querySelector('[data-testid=task-preview]') as HTMLImageElement | null)?.naturalWidth ?? 0) > 0, undefined, { timeout: 30_000 });
      await page.waitForSelector('[data-testid=task-status]:text("success")', { timeout: 30_000 });
      await page.waitForFunction(() => [...document.querySelectorAll('.outputs img')].some((img) => (img as HTMLImageElement).naturalWidth > 0));
      assert.equal(await page.$('[data-testid=task-preview]'), null, 'the preview gives way to the outputs');
      assert.equal(requests.filter((p) => p === `/v1/tasks/${taskId}/events`).length, 1, 'one stream, no reconnects');
      assert.ok(!requests.includes(`/v1/ai/result/${taskId}`), 'no polling');
    });
  });
});
