import { createHmac } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';

/** One POST of a delivery, as Standard Webhooks describes it. */
export interface CallbackRequest {
  url: string;
  /** `webhook-id`: the delivery id, the same on every retry. */
  id: string;
  body: string;
  secret: string | undefined;
  timeoutMs: number;
  /** Unix seconds of this try (`webhook-timestamp`). */
  timestamp: number;
}

/** What the receiver answered, or why it could not be reached. */
export type CallbackResponse = { status: number; durationMs: number } | { error: string; durationMs: number };

const SECRET_PREFIX = 'whsec_';

/**
 * The HMAC key of a callback secret: Standard Webhooks secrets (`whsec_<base64>`) carry the key
 * in base64 after the prefix; any other secret is used as its UTF-8 bytes.
 */
export function signingKeyOf(secret: string): Buffer {
  return secret.startsWith(SECRET_PREFIX) ? Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64') : Buffer.from(secret, 'utf8');
}

/** `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`. */
export function webhookSignature(secret: string, id: string, timestamp: number, body: string): string {
  return `v1,${createHmac('sha256', signingKeyOf(secret)).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

/**
 * POSTs callbacks over kept-alive connections, so a busy receiver is not paying a TCP (and TLS)
 * handshake per update.
 */
export class CallbackSender {
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;

  constructor(maxSocketsPerHost: number) {
    this.httpAgent = new http.Agent({ keepAlive: true, maxSockets: maxSocketsPerHost });
    this.httpsAgent = new https.Agent({ keepAlive: true, maxSockets: maxSocketsPerHost });
  }

  /** Never throws: a failure to reach the receiver is an answer too. */
  send(request: CallbackRequest): Promise<CallbackResponse> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const body = Buffer.from(request.body, 'utf8');
    const headers: http.OutgoingHttpHeaders = {
      'content-type': 'application/json',
      'content-length': body.length,
      'webhook-id': request.id,
      'webhook-timestamp': String(request.timestamp),
    };
    if (request.secret) headers['webhook-signature'] = webhookSignature(request.secret, request.id, request.timestamp, request.body);

    return new Promise((resolve) => {
      let url: URL;
      try {
        url = new URL(request.url);
      } catch {
        resolve({ error: `invalid callback address ${request.url}`, durationMs: 0 });
        return;
      }
      const isHttps = url.protocol === 'https:';
      let settled = false;
      const finish = (response: CallbackResponse) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(response);
      };
      const req = (isHttps ? https : http).request(url, { method: 'POST', headers, agent: isHttps ? this.httpsAgent : this.httpAgent });
      // The timeout covers the whole exchange, from connecting to the last byte of the answer.
      const timer = setTimeout(() => {
        finish({ error: `timed out after ${request.timeoutMs} ms`, durationMs: elapsed() });
        req.destroy();
      }, request.timeoutMs);
      req.on('response', (res) => {
        // The answer's body is read to its end so the connection can be reused.
        res.resume();
        res.on('end', () => finish({ status: res.statusCode ?? 0, durationMs: elapsed() }));
        res.on('error', (err) => finish({ error: describe(err), durationMs: elapsed() }));
      });
      req.on('error', (err) => finish({ error: describe(err), durationMs: elapsed() }));
      req.end(body);
    });
  }

  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}

function describe(err: Error): string {
  const code = (err as NodeJS.ErrnoException).code;
  return code && !err.message.includes(code) ? `${code}: ${err.message}` : err.message;
}
