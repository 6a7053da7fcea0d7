/**
 * A real OpenID provider (the npm package oidc-provider) on 127.0.0.1 for the console's sign-in:
 * one confidential client, PKCE required, its development login and consent pages, and accounts
 * whose claims the test chooses (any login name is an account; `groups` is the role claim).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';
import { parseSetCookie } from 'cookie';

export const CLIENT_ID = 'gengate-console';
export const CLIENT_SECRET = 'console-secret-for-tests';

export class OidcIssuer {
  private handler: http.RequestListener = (_req, res) => res.writeHead(503).end('not configured yet');

  private readonly server: http.Server;
  readonly url: string;

  private constructor(
    server: http.Server,
    url: string,
  ) {
    this.server = server;
    this.url = url;
  }

  /** Listens first, so the gateways can be started with its URL before it knows their callback addresses. */
  static async listen(): Promise<OidcIssuer> {
    let issuer: OidcIssuer | undefined;
    const server = http.createServer((req, res) => issuer!.handler(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    issuer = new OidcIssuer(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return issuer;
  }

  /** The gateway environment naming this issuer. */
  env(extra: Record<string, string> = {}): Record<string, string> {
    return { OIDC_ISSUER: this.url, OIDC_CLIENT_ID: CLIENT_ID, OIDC_CLIENT_SECRET: CLIENT_SECRET, OIDC_ROLE_CLAIM: 'groups', ...extra };
  }

  /** Registers the client with the gateways' callback addresses; `groups` gives accounts their role claim. */
  configure(redirectUris: string[], groups: Record<string, string[]> = {}): void {
    const provider = new Provider(this.url, {
      clients: [{ client_id: CLIENT_ID, client_secret: CLIENT_SECRET, redirect_uris: redirectUris, grant_types: ['authorization_code'], response_types: ['code'] }],
      pkce: { required: () => true },
      claims: { openid: ['sub'], email: ['email'], profile: ['name', 'groups'] },
      findAccount: async (_ctx, id) => ({ accountId: id, claims: async () => ({ sub: id, email: id, name: id, groups: groups[id] ?? [] }) }),
      cookies: { keys: ['oidc-test-cookie-key'] },
      features: { devInteractions: { enabled: true } },
    });
    this.handler = provider.callback();
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** A browser's cookies, one jar per origin, kept by name (enough for these flows). */
export class CookieJar {
  private readonly jars = new Map<string, Map<string, string>>();

  take(url: string, res: Response): void {
    const jar = this.jarOf(url);
    for (const line of res.headers.getSetCookie()) {
      const cookie = parseSetCookie(line);
      if (cookie.maxAge === 0 || cookie.value === '') jar.delete(cookie.name);
      else jar.set(cookie.name, cookie.value ?? '');
    }
  }

  header(url: string): string {
    return [...this.jarOf(url)].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  get(url: string, name: string): string | undefined {
    return this.jarOf(url).get(name);
  }

  set(url: string, name: string, value: string): void {
    this.jarOf(url).set(name, value);
  }

  private jarOf(url: string): Map<string, string> {
    const origin = new URL(url).origin;
    let jar = this.jars.get(origin);
    if (!jar) this.jars.set(origin, (jar = new Map()));
    return jar;
  }
}

/** One request as a browser makes it: its cookies sent and kept, redirects not followed. */
export async function browse(jar: CookieJar, url: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  const cookies = jar.header(url);
  if (cookies) headers.set('cookie', cookies);
  const res = await fetch(url, { ...init, headers, redirect: 'manual' });
  jar.take(url, res);
  return res;
}

/**
 * Signs in at the issuer the way a browser would: follows redirects from `start`, fills the
 * development login form with `login` and confirms the consent, and stops at the first answer
 * of `stopAt` (the gateway's callback) without following it. Answers that response's URL.
 */
export async function signInAtIssuer(jar: CookieJar, start: string, login: string, stopAt: string): Promise<string> {
  let url = start;
  for (let step = 0; step < 20; step++) {
    if (url.startsWith(stopAt)) return url;
    const res = await browse(jar, url);
    if (res.status >= 300 && res.status < 400) {
      url = new URL(res.headers.get('location')!, url).href;
      continue;
    }
    const page = await res.text();
    if (res.status !== 200 || !url.includes('/interaction/')) throw new Error(`unexpected answer at ${url}: ${res.status} ${page.slice(0, 300)}`);
    const form: Record<string, string> = page.includes('name="login"') ? { prompt: 'login', login, password: 'any' } : { prompt: 'consent' };
    const action = /<form[^>]*action="([^"]+)"/.exec(page)?.[1] ?? new URL(url).pathname;
    const posted = await browse(jar, new URL(action, url).href, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form).toString() });
    if (posted.status < 300 || posted.status >= 400) throw new Error(`the issuer refused the ${form.prompt} form: ${posted.status} ${(await posted.text()).slice(0, 300)}`);
    url = new URL(posted.headers.get('location')!, url).href;
  }
  throw new Error('the sign-in did not reach the callback');
}
