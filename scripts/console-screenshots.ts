// Screenshots of every console page for docs/console.md: starts a server on an empty store,
// makes a token, an image task, a 3D task and a chat call, then photographs each page into
// docs/console/<page>.png (palette PNGs, small). Needs chromium (CHROMIUM_PATH, default
// /usr/bin/chromium). Run: npx tsx scripts/console-screenshots.ts
import fs from 'node:fs';
import sharp from 'sharp';
import { startTestServer } from '../test/support/server.ts';
import { ensureConsoleBuilt, launchBrowser, signIn } from '../test/console/support.ts';

const OUT = 'docs/console';

ensureConsoleBuilt();
fs.mkdirSync(OUT, { recursive: true });
const srv = await startTestServer();
const browser = await launchBrowser();
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const shoot = async (name: string, hash: string, ready: string) => {
    await page.goto(`${srv.url}/console/#/${hash}`);
    await page.waitForSelector(ready, { timeout: 90_000 });
    await page.waitForTimeout(300);
    const png = await page.screenshot();
    await sharp(png).png({ palette: true, colours: 128 }).toFile(`${OUT}/${name}.png`);
    process.stdout.write(`${OUT}/${name}.png\n`);
  };
  await srv.fetch('/admin/config', { method: 'PUT', token: srv.adminToken, json: { callback_url: 'http://127.0.0.1:9/hook', callback_retry_delays_ms: [] } });
  await srv.tokenFor('alice');
  await signIn(page, srv.url, srv.adminToken);

  await page.goto(`${srv.url}/console/#/playground`);
  await page.click('.tabs button:text("3D")');
  await page.fill('textarea[name=prompt]', 'a teapot');
  await page.click('button:text("Submit")');
  await page.waitForSelector('[data-testid=model-viewer][data-state=ready]', { timeout: 90_000 });
  const meshTask = (await page.textContent('.live a'))!.trim();

  await page.click('.tabs button:text("Image")');
  await page.fill('textarea[name=prompt]', 'a lighthouse at dusk');
  await page.click('button:text("Submit")');
  await page.waitForSelector('[data-testid=live-status]:text("success")', { timeout: 60_000 });
  await page.waitForFunction(() => [...document.querySelectorAll('.live img')].some((img) => (img as HTMLImageElement).naturalWidth > 0));
  const imageTask = (await page.textContent('.live a'))!.trim();
  await sharp(await page.screenshot()).png({ palette: true, colours: 128 }).toFile(`${OUT}/playground.png`);

  await shoot('overview', 'overview', '[data-testid=window-24h]');
  await shoot('tasks', 'tasks', '[data-testid=tasks-table] tbody tr');
  await shoot('task', `tasks/${imageTask}`, '[data-testid=deliveries] td.delivery');
  await shoot('task-3d', `tasks/${meshTask}`, '[data-testid=model-viewer][data-state=ready]');
  await shoot('requests', 'requests', 'table tbody tr');
  await shoot('tokens', 'tokens', '[data-testid=tokens-table] tbody tr');
  await shoot('models', 'models', '[data-testid=models] tbody tr');
  await shoot('usage', 'usage', '[data-testid=usage-chart] .u-legend');
  await shoot('settings', 'settings', 'form.stacked');
} finally {
  await browser.close();
  await srv.close();
}
