import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { CONSOLE_DIR } from '../../src/http/routes/console.ts';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Why the browser tests cannot run here, or undefined; with REQUIRE_SERVICES=1 a missing browser is an error. */
export function browserMissing(): string | undefined {
  if (fs.existsSync(CHROMIUM_PATH)) return undefined;
  const reason = `no chromium at ${CHROMIUM_PATH} (apt-get install chromium, or set CHROMIUM_PATH); skipping the console browser tests`;
  if (process.env.REQUIRE_SERVICES === '1') throw new Error(reason);
  return reason;
}

/** Builds the console when dist/ has none (a fresh clone that ran npm ci but not npm run build). */
export function ensureConsoleBuilt(): void {
  if (fs.existsSync(path.join(CONSOLE_DIR, 'index.html'))) return;
  execFileSync('npm', ['run', 'build', '--prefix', 'console'], { stdio: 'inherit' });
}

/**
 * Headless chromium; launch() gives it a new profile of its own each time. Software WebGL, so
 * the 3D viewer renders without a GPU.
 */
export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--use-angle=swiftshader', '--enable-unsafe-swiftshader'],
  });
}

const SHOTS_DIR = path.join(os.tmpdir(), 'gengate-console-failures');

/** Runs a step; when it fails, the page's screenshot is saved and its path printed before the error goes on. */
export async function withScreenshot<T>(page: Page, name: string, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (err) {
    fs.mkdirSync(SHOTS_DIR, { recursive: true });
    const file = path.join(SHOTS_DIR, `${name.replace(/\W+/g, '-')}-${Date.now()}.png`);
    await page.screenshot({ path: file, fullPage: true }).catch(() => undefined);
    process.stderr.write(`console test "${name}" failed; screenshot: ${file}\n`);
    throw err;
  }
}

/** Signs in on the console's sign-in form. */
export async function signIn(page: Page, baseUrl: string, token: string): Promise<void> {
  await page.goto(`${baseUrl}/console/`);
  await page.fill('#token', token);
  await page.click('button[type=submit]');
  await page.waitForSelector('nav .who');
}
