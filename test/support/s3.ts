import fs from 'node:fs';
import http from 'node:http';
import { once } from 'node:events';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import S3rver from 's3rver';

/** s3rver's built-in account: any client signing with it is accepted. */
export const S3_CREDENTIALS = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER' };

/**
 * An S3-protocol server on 127.0.0.1 with one bucket, standing in for AWS S3, Garage,
 * SeaweedFS or R2; its objects live in a temporary folder removed on close.
 */
export interface TestS3 {
  endpoint: string;
  bucket: string;
  /** The folder s3rver keeps objects in. */
  directory: string;
  /** BLOB_STORE=s3 settings (path-style, s3rver's credentials) for a gateway using this bucket. */
  env: Record<string, string>;
  close(): Promise<void>;
}

export async function startS3(bucket = 'gengate-test'): Promise<TestS3> {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'gengate-s3-'));
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory, configureBuckets: [{ name: bucket }] });
  const address = (await server.run()) as AddressInfo;
  const endpoint = `http://127.0.0.1:${address.port}`;
  return {
    endpoint,
    bucket,
    directory,
    env: { BLOB_STORE: 's3', S3_BUCKET: bucket, S3_ENDPOINT: endpoint, S3_REGION: 'us-east-1', S3_FORCE_PATH_STYLE: 'true', ...S3_CREDENTIALS },
    async close() {
      // Requests cut off mid-body stay open in s3rver forever; close() would wait for them.
      server.httpServer?.closeAllConnections();
      await server.close();
      fs.rmSync(directory, { recursive: true, force: true });
    },
  };
}

/**
 * A pass-through to an S3 endpoint that, once armed, holds the next object write (PutObject or
 * UploadPart) half-sent: the writer stays mid-upload until it dies or the proxy closes.
 */
export interface StallingProxy {
  endpoint: string;
  /** Holds the next write; resolves with its object key once half of it has passed. */
  holdNextWrite(): Promise<string>;
  close(): Promise<void>;
}

export async function startStallingProxy(target: TestS3): Promise<StallingProxy> {
  const upstream = new URL(target.endpoint);
  let hold: ((key: string) => void) | undefined;
  const server = http.createServer((req, res) => {
    const forward = http.request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers });
    forward.on('response', (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    forward.on('error', () => res.destroy());
    // The writer went away (killed): the server sees its request cut off as well.
    req.on('close', () => {
      if (!req.complete) forward.destroy();
    });
    const held = hold && req.method === 'PUT' && !req.headers['x-amz-copy-source'] ? hold : undefined;
    if (!held) {
      req.pipe(forward);
      return;
    }
    hold = undefined;
    const key = decodeURIComponent(new URL(req.url!, target.endpoint).pathname.slice(`/${target.bucket}/`.length));
    const half = Math.floor(Number(req.headers['content-length'] ?? 0) / 2);
    let sent = 0;
    const onData = (chunk: Buffer) => {
      const part = chunk.subarray(0, Math.max(0, half - sent));
      sent += part.length;
      if (part.length > 0) forward.write(part);
      if (sent >= half) {
        req.off('data', onData);
        req.pause();
        held(key);
      }
    };
    req.on('data', onData);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    holdNextWrite: () => new Promise((resolve) => (hold = resolve)),
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
