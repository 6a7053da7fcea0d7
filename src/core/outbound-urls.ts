/**
 * What the gateway may fetch for a caller (docs/security.md): http(s) URLs whose host is a public
 * unicast address, unless the operator trusts the host (FETCH_ALLOW_HOSTS). The literal checks
 * here run when a request is admitted; names are checked when they are resolved, by the fetcher.
 */
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { ApiError } from './errors.ts';

/** Hosts, addresses and CIDR ranges an operator trusts (FETCH_ALLOW_HOSTS). */
export class AllowedHosts {
  private readonly names: ReadonlySet<string>;
  private readonly ranges: ReadonlyArray<[ipaddr.IPv4 | ipaddr.IPv6, number]>;

  private constructor(
    names: ReadonlySet<string>,
    ranges: ReadonlyArray<[ipaddr.IPv4 | ipaddr.IPv6, number]>,
  ) {
    this.names = names;
    this.ranges = ranges;
  }

  static readonly NONE = new AllowedHosts(new Set(), []);

  /** Parses a comma-separated list; a malformed address or range throws naming it. */
  static parse(list: string | undefined): AllowedHosts {
    const names = new Set<string>();
    const ranges: [ipaddr.IPv4 | ipaddr.IPv6, number][] = [];
    for (const raw of (list ?? '').split(',')) {
      const entry = raw.trim().toLowerCase();
      if (entry === '') continue;
      const bare = unbracket(entry);
      if (entry.includes('/')) {
        try {
          const [network, bits] = ipaddr.parseCIDR(entry);
          // Addresses are compared in their IPv4 form when they have one (see hasAddress).
          const mapped = network instanceof ipaddr.IPv6 && network.isIPv4MappedAddress() && bits >= 96;
          ranges.push(mapped ? [network.toIPv4Address(), bits - 96] : [network, bits]);
        } catch {
          throw new Error(`"${raw.trim()}" is not a CIDR range`);
        }
      } else if (isIP(bare)) {
        const address = ipaddr.process(bare);
        ranges.push([address, address.kind() === 'ipv4' ? 32 : 128]);
      } else if (/^[a-z0-9_.-]+$/.test(entry)) {
        names.add(withoutTrailingDot(entry));
      } else {
        throw new Error(`"${raw.trim()}" is neither a host name, an address nor a CIDR range`);
      }
    }
    return names.size === 0 && ranges.length === 0 ? AllowedHosts.NONE : new AllowedHosts(names, ranges);
  }

  /** The host (a name, as in a URL) is trusted by name. */
  hasName(hostname: string): boolean {
    return this.names.has(hostname);
  }

  /** The address is in a trusted range (IPv4-mapped IPv6 addresses match the IPv4 entries). */
  hasAddress(address: string): boolean {
    const parsed = ipaddr.process(address);
    return this.ranges.some(([network, bits]) => network.kind() === parsed.kind() && parsed.match(network, bits));
  }
}

/** A host name or address as compared: lower case, without IPv6 brackets or a trailing dot. */
export function normaliseHost(hostname: string): string {
  return withoutTrailingDot(unbracket(hostname.toLowerCase()));
}

/** A URL's host, normalised. */
export function hostOf(url: URL): string {
  return normaliseHost(url.hostname);
}

/** `localhost` and its subdomains, which resolve to loopback by definition (RFC 6761). */
function isLocalhostName(host: string): boolean {
  return host === 'localhost' || host.endsWith('.localhost');
}

/**
 * Public unicast: not loopback, private, link-local, shared (100.64/10), unique-local,
 * multicast, unspecified, broadcast or a reserved or special-purpose range, IPv4-mapped IPv6
 * forms included (ipaddr.js classifies the ranges of the IANA special-purpose registries).
 */
export function isPublicUnicast(address: string): boolean {
  return isIP(address) !== 0 && ipaddr.process(address).range() === 'unicast';
}

/**
 * The admission-time side of the policy, shared by every body with URL fields: whether a URL
 * may be fetched, as far as can be told without resolving names.
 */
export class OutboundUrlPolicy {
  private readonly opts: {
      allowed: AllowedHosts;
      /** A URL of the gateway's own file store, read from the store and never fetched. */
      isOwnFile(url: URL): boolean;
    };

  constructor(
    opts: {
      allowed: AllowedHosts;
      /** A URL of the gateway's own file store, read from the store and never fetched. */
      isOwnFile(url: URL): boolean;
    },
  ) {
    this.opts = opts;
  }

  /**
   * 400 url_not_allowed with `param` for a URL field the gateway would refuse to fetch: a scheme
   * other than http(s), `localhost`, or a literal address that is not public. Data URIs, asset
   * hashes (`blake3:…`) and the gateway's own file URLs pass (they are read, not fetched), and so
   * does a value that is no absolute URL: the field's own rules deal with it.
   */
  checkCallerUrl(ref: string, param: string): void {
    let url: URL;
    try {
      url = new URL(ref.trim());
    } catch {
      return;
    }
    if (url.protocol === 'data:' || url.protocol === 'blake3:') return;
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new ApiError('url_not_allowed', `${param}: only http and https URLs can be fetched, not ${url.protocol}`, param);
    }
    if (this.opts.isOwnFile(url)) return;
    const host = hostOf(url);
    if (this.literalHostAllowed(host)) return;
    throw new ApiError('url_not_allowed', `${param}: the gateway does not fetch ${host}, which is not a public address`, param);
  }

  /** Whether a host seen in a URL may be fetched before resolving it: a trusted name, any other name, or a public or trusted address. */
  literalHostAllowed(host: string): boolean {
    if (this.opts.allowed.hasName(host)) return true;
    if (isLocalhostName(host)) return false;
    return isIP(host) === 0 || this.addressAllowed(host);
  }

  /** Trusted names skip the address check; it applies to every other host's addresses. */
  nameTrusted(host: string): boolean {
    return this.opts.allowed.hasName(host);
  }

  /** A literal or resolved address: public unicast, or in a trusted range. */
  addressAllowed(address: string): boolean {
    return isPublicUnicast(address) || this.opts.allowed.hasAddress(address);
  }
}

function unbracket(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

function withoutTrailingDot(host: string): string {
  return host.endsWith('.') ? host.slice(0, -1) : host;
}
