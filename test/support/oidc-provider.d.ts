/** The parts of oidc-provider (which ships no types) that test/support/oidc-issuer.ts uses. */
declare module 'oidc-provider' {
  import type { RequestListener } from 'node:http';

  interface Account {
    accountId: string;
    claims(): Promise<Record<string, unknown>>;
  }

  export default class Provider {
    constructor(issuer: string, configuration: {
      clients: Record<string, unknown>[];
      pkce?: { required?: () => boolean };
      claims?: Record<string, string[]>;
      findAccount?: (ctx: unknown, id: string) => Promise<Account | undefined>;
      cookies?: { keys: string[] };
      features?: Record<string, unknown>;
    });
    callback(): RequestListener;
  }
}
