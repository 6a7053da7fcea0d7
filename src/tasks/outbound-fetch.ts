/**
 * The one way the gateway fetches a URL a caller handed in (docs/security.md). Every host name is
 * resolved once, inside the connection's own lookup, and refused when any of its addresses is
 * not public: the connection goes to exactly the addresses that were checked, so a second DNS
 * answer cannot differ. Literal addresses are checked before each request (the socket never
 * looks them up), redirects are followed by hand and checked the same way.
 */
import type { LookupAddress } from 'node:dns';
import { lookup as dnsLookup } from 'node:dns/promises';
import type { LookupFunction } from 'node:net';
import { Agent, fetch as undiciFetch, request, type Dispatcher } from 'undici';
import { hostOf, normaliseHost, type OutboundUrlPolicy } from '../core/outbound-urls.ts';

/** Every address of a host name; tests answer their own. */
export type HostResolver = (hostname: string) => Promise<LookupAddress[]>;

const systemResolver: HostResolver = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

/** A URL the policy refuses. Its message says nothing of the target: no status, body or timing. */
export class UrlNotAllowedError extends Error {
  constructor() {
    super('input URL not allowed');
  }
}

/** Any other failed fetch, with a message the caller may read. */
export class OutboundFetchError extends Error {}

export interface FetchedFile {
  data: Buffer;
  /** The Content-Type header without parameters, if any. */
  contentType: string | undefined;
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const MAX_REDIRECTS = 5;

/** Lets go of a body that is not read: drained when small (the connection is reused), else dropped; the request's signal bounds it. */
function discard(body: Dispatcher.ResponseData['body']): void {
  body.dump().catch(() => undefined);
}

export class OutboundFetcher {
  private readonly agent: Agent;

  private readonly opts: {
      policy: OutboundUrlPolicy;
      /** Bytes a fetched file may have (the file size limit). */
      maxBytes: number;
      /** FETCH_TIMEOUT_MS: the whole fetch, redirects and body included. */
      timeoutMs: number;
      resolve?: HostResolver;
    };

  constructor(
    opts: {
      policy: OutboundUrlPolicy;
      /** Bytes a fetched file may have (the file size limit). */
      maxBytes: number;
      /** FETCH_TIMEOUT_MS: the whole fetch, redirects and body included. */
      timeoutMs: number;
      resolve?: HostResolver;
    },
  ) {
    this.opts = opts;
    this.agent = new Agent({ connect: { lookup: this.checkedLookup(opts.resolve ?? systemResolver) } });
  }

  /** The body of a GET of `url`, following at most 5 redirects, each checked like the first URL. */
  async get(url: URL): Promise<FetchedFile> {
    const signal = AbortSignal.timeout(this.opts.timeoutMs);
    let target = url;
    for (let redirects = 0; ; redirects++) {
      const isHttp = target.protocol === 'http:' || target.protocol === 'https:';
      if (!isHttp || !this.opts.policy.literalHostAllowed(hostOf(target))) throw new UrlNotAllowedError();
      const res = await this.send(url, target, signal);
      const location = res.headers.location;
      if (!REDIRECT_STATUSES.has(res.statusCode) || typeof location !== 'string') return this.readBody(url, res);
      discard(res.body);
      if (redirects === MAX_REDIRECTS) throw new OutboundFetchError(`fetching ${url.href} was redirected more than ${MAX_REDIRECTS} times`);
      try {
        target = new URL(location, target);
      } catch {
        throw new OutboundFetchError(`fetching ${url.href} was redirected to a malformed URL`);
      }
    }
  }

  /**
   * A fetch for a conversation with a server the policy allows (an MCP server): its connections
   * go to checked addresses like get()'s; a redirect is answered as it is, never followed.
   */
  readonly fetch = async (input: string | URL, init?: RequestInit): Promise<Response> => {
    const url = new URL(input);
    if ((url.protocol !== 'http:' && url.protocol !== 'https:') || !this.opts.policy.literalHostAllowed(hostOf(url))) throw new UrlNotAllowedError();
    const response = await undiciFetch(url, { ...(init as Parameters<typeof undiciFetch>[1]), redirect: 'manual', dispatcher: this.agent });
    return response as unknown as Response;
  };

  /** Ends the kept-alive connections. */
  close(): Promise<void> {
    return this.agent.close();
  }

  private async send(url: URL, target: URL, signal: AbortSignal): Promise<Dispatcher.ResponseData> {
    try {
      return await request(target, { dispatcher: this.agent, method: 'GET', signal });
    } catch (err) {
      throw this.failure(url, err);
    }
  }

  private async readBody(url: URL, res: Dispatcher.ResponseData): Promise<FetchedFile> {
    const tooLarge = () => new OutboundFetchError(`input ${url.href} is larger than ${this.opts.maxBytes} bytes`);
    if (res.statusCode < 200 || res.statusCode >= 300) {
      discard(res.body);
      throw new OutboundFetchError(`fetching ${url.href} answered HTTP ${res.statusCode}`);
    }
    if (Number(res.headers['content-length'] ?? 0) > this.opts.maxBytes) {
      discard(res.body);
      throw tooLarge();
    }
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      // Leaving the loop early destroys the body.
      for await (const chunk of res.body as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > this.opts.maxBytes) throw tooLarge();
        chunks.push(chunk);
      }
    } catch (err) {
      throw this.failure(url, err);
    }
    const header = res.headers['content-type'];
    return { data: Buffer.concat(chunks), contentType: typeof header === 'string' ? header.split(';')[0]!.trim() || undefined : undefined };
  }

  private failure(url: URL, err: unknown): Error {
    if (err instanceof UrlNotAllowedError || err instanceof OutboundFetchError) return err;
    const error = err as Error;
    if (error.name === 'TimeoutError' || error.name === 'AbortError') return new OutboundFetchError(`fetching ${url.href} took longer than ${this.opts.timeoutMs} ms`);
    return new OutboundFetchError(`cannot fetch ${url.href}: ${error.message}`);
  }

  /** The sockets' lookup: a name's addresses, refused unless every one is allowed (or the name is trusted). */
  private checkedLookup(resolve: HostResolver): LookupFunction {
    const { policy } = this.opts;
    return (hostname, options, callback) => {
      const host = normaliseHost(hostname);
      resolve(hostname).then((all) => {
        if (!policy.nameTrusted(host) && all.some((a) => !policy.addressAllowed(a.address))) throw new UrlNotAllowedError();
        const addresses = options.family ? all.filter((a) => a.family === options.family) : all;
        if (addresses.length === 0) throw new OutboundFetchError(`${hostname} has no address`);
        if (options.all) callback(null, addresses);
        else callback(null, addresses[0]!.address, addresses[0]!.family);
      }).catch((err: NodeJS.ErrnoException) => callback(err, ''));
    };
  }
}
