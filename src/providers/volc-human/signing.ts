import { createHash, createHmac } from 'node:crypto';

/** An access key pair of a Volcengine account. */
export interface VolcCredentials {
  accessKeyId: string;
  secretAccessKey: string;
}

/** Where a signature is valid: the API's region and service (e.g. cn-north-1, cv). */
export interface VolcScope {
  region: string;
  service: string;
}

const ALGORITHM = 'HMAC-SHA256';

const sha256Hex = (data: string) => createHash('sha256').update(data, 'utf8').digest('hex');
const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data, 'utf8').digest();

/** RFC 3986 percent-encoding, as canonical query strings use it. */
function encode(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** Query parameters encoded and sorted by name, then value. */
function canonicalQuery(params: URLSearchParams): string {
  return [...params]
    .map(([name, value]) => `${encode(name)}=${encode(value)}`)
    .sort()
    .join('&');
}

/** The X-Date form of a time: 20250507T173314Z. */
export function volcDate(now: Date): string {
  return now.toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');
}

/**
 * Headers that authenticate one request to a Volcengine OpenAPI (signature V4): an HMAC-SHA256 over
 * the canonical request (method, path, sorted query, the signed headers, the body's SHA-256), with a
 * key derived from the secret by date, region, service and "request".
 */
export function signRequest(
  request: { method: string; url: URL; body: string; contentType: string },
  credentials: VolcCredentials,
  scope: VolcScope,
  now: Date = new Date(),
): Record<string, string> {
  const date = volcDate(now);
  const bodyHash = sha256Hex(request.body);
  const signed: Record<string, string> = {
    'content-type': request.contentType,
    host: request.url.host,
    'x-content-sha256': bodyHash,
    'x-date': date,
  };
  const names = Object.keys(signed).sort();
  const canonicalRequest = [
    request.method.toUpperCase(),
    request.url.pathname || '/',
    canonicalQuery(request.url.searchParams),
    names.map((name) => `${name}:${signed[name]!.trim()}\n`).join(''),
    names.join(';'),
    bodyHash,
  ].join('\n');
  const credentialScope = `${date.slice(0, 8)}/${scope.region}/${scope.service}/request`;
  const stringToSign = [ALGORITHM, date, credentialScope, sha256Hex(canonicalRequest)].join('\n');
  const dateKey = hmac(credentials.secretAccessKey, date.slice(0, 8));
  const signingKey = hmac(hmac(hmac(dateKey, scope.region), scope.service), 'request');
  const signature = hmac(signingKey, stringToSign).toString('hex');
  return {
    'content-type': request.contentType,
    'x-date': date,
    'x-content-sha256': bodyHash,
    authorization: `${ALGORITHM} Credential=${credentials.accessKeyId}/${credentialScope}, SignedHeaders=${names.join(';')}, Signature=${signature}`,
  };
}
