/**
 * Signing in to the console with SSO in a real browser: the console's "Sign in with SSO", the
 * identity provider's login and consent pages (oidc-provider's development pages), back to the
 * console as the signed-in user with its team, and signing out.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser } from 'playwright-core';
import { startTestServer, type TestServer } from '../support/server.ts';
import { OidcIssuer } from '../support/oidc-issuer.ts';
import { browserMissing, ensureConsoleBuilt, launchBrowser, withScreenshot } from './support.ts';

const skip = browserMissing();

describe('console sign-in with SSO in a browser', { skip }, () => {
  let issuer: OidcIssuer;
  let srv: TestServer;
  let browser: Browser;
  before(async () => {
    ensureConsoleBuilt();
    issuer = await OidcIssuer.listen();
    srv = await startTestServer(issuer.env());
    issuer.configure([`${srv.url}/console/auth/callback`]);
    const admin = (method: string, path: string, json?: unknown) => srv.fetch(path, { method, token: srv.adminToken, ...(json ? { json } : {}) });
    assert.equal((await admin('POST', '/admin/teams', { id: 'research', name: 'Research' })).status, 201);
    assert.equal((await admin('PUT', '/admin/teams/research/members/ann@example.com', { role: 'viewer' })).status, 200);
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await srv?.close();
    await issuer?.close();
  });

  it('signs in through the identity provider, shows only what a viewer may, and signs out', async () => {
    const page = await browser.newPage();
    await withScreenshot(page, 'sso sign-in', async () => {
      await page.goto(`${srv.url}/console/`);
      await page.click('[data-testid=sso]');
      // The identity provider's development login page, then its consent page.
      await page.waitForSelector('input[name=login]');
      await page.fill('input[name=login]', 'ann@example.com');
      await page.fill('input[name=password]', 'any');
      await page.click('button[type=submit]');
      await page.waitForSelector('button[type=submit]');
      await page.click('button[type=submit]');
      await page.waitForSelector('[data-testid=who]');
      assert.equal(await page.textContent('[data-testid=who]'), 'ann@example.com');
      assert.equal(new URL(page.url()).pathname.startsWith('/console'), true);
      // A viewer reads the team's usage; the pages it may not use are not shown.
      const links = await page.$$eval('nav a', (as) => as.map((a) => a.textContent));
      assert.deepEqual(links, ['Teams', 'Usage']);
      await page.click('nav a:text("Teams")');
      await page.waitForSelector('[data-testid=team-usage]');
      assert.equal(await page.$('[data-testid=members-table]'), null);
      assert.equal(await page.$('[data-testid=team-tokens]'), null);
      const cookies = await page.context().cookies();
      assert.equal(cookies.find((c) => c.name === 'gengate_session')?.httpOnly, true);
      assert.equal(cookies.find((c) => c.name === 'gengate_csrf')?.httpOnly, false);

      await page.click('[data-testid=sign-out]');
      await page.waitForSelector('[data-testid=sso]');
      assert.equal((await page.context().cookies()).some((c) => c.name === 'gengate_session'), false);
      // The session is gone on the server too.
      await page.goto(`${srv.url}/console/`);
      await page.waitForSelector('[data-testid=sso]');
    });
  });
});
