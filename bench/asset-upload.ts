// POST /api/assets with a 200 MB file streamed from disk: upload MB/s and the server's RSS
// (baseline, peak, growth), on local disk and then on S3 (s3rver on this machine). The registry
// streams uploads to the store while hashing them, so the growth must stay far below the file size.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { createBLAKE3 } from 'hash-wasm';
import { startS3 } from '../test/support/s3.ts';
import { createToken, rssMb, startBenchServer } from './support.ts';

const SIZE_MB = Number(process.env.BENCH_ASSET_MB ?? 200);
const SAMPLE_MS = 50;
/** Growth above this fails the run: well under the file size, so a buffered upload cannot pass. */
const MAX_GROWTH_MB = Number(process.env.BENCH_ASSET_MAX_GROWTH_MB ?? 100);

/** Writes SIZE_MB of random-ish bytes (a fresh random MiB block, varied per MiB) and answers its blake3. */
async function makeFile(file: string): Promise<string> {
  const hasher = await createBLAKE3();
  hasher.init();
  const block = randomBytes(1024 * 1024);
  const fd = fs.openSync(file, 'w');
  try {
    for (let i = 0; i < SIZE_MB; i++) {
      block.writeUInt32LE(i, (i * 4096) % (block.length - 4));
      hasher.update(block);
      fs.writeSync(fd, block);
    }
  } finally {
    fs.closeSync(fd);
  }
  return `blake3:${hasher.digest('hex')}`;
}

/** Multipart POST with the file part streamed from disk and a known Content-Length. */
function uploadFile(url: string, token: string, file: string): Promise<{ status: number; body: string }> {
  const boundary = `----gengate-bench-${randomBytes(8).toString('hex')}`;
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="tags"\r\n\r\ninput,bench\r\n` +
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${path.basename(file)}"\r\n` +
    'Content-Type: application/octet-stream\r\n\r\n',
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const length = head.length + fs.statSync(file).size + tail.length;
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}/api/assets`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': length },
    }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.write(head);
    const stream = fs.createReadStream(file, { highWaterMark: 1024 * 1024 });
    stream.on('error', reject);
    stream.on('end', () => req.end(tail));
    stream.pipe(req, { end: false });
  });
}

/** One upload of the file to a fresh server with these settings; prints the figures, and judges the growth when asked. */
async function measure(store: string, env: Record<string, string>, file: string, expectedHash: string, judged: boolean): Promise<void> {
  const server = await startBenchServer(env);
  try {
    const token = await createToken(server, 'bench-assets');
    // Baseline once the server is idle after start-up and the token round trip.
    await new Promise((r) => setTimeout(r, 500));
    const baseline = rssMb(server.pid);
    let peak = baseline;
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssMb(server.pid));
    }, SAMPLE_MS);
    const started = process.hrtime.bigint();
    const res = await uploadFile(server.url, token, file);
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    clearInterval(sampler);
    peak = Math.max(peak, rssMb(server.pid));
    if (res.status !== 201) throw new Error(`upload answered ${res.status}: ${res.body.slice(0, 500)}`);
    const asset = JSON.parse(res.body) as { asset_hash: string; size: number };
    if (asset.size !== SIZE_MB * 1024 * 1024) throw new Error(`recorded size ${asset.size}, sent ${SIZE_MB * 1024 * 1024}`);
    if (asset.asset_hash !== expectedHash) throw new Error(`recorded hash ${asset.asset_hash}, expected ${expectedHash}`);
    const growth = peak - baseline;
    process.stdout.write(
      `asset-upload (${store}): POST /api/assets ${SIZE_MB} MB streamed from disk: ${(SIZE_MB / seconds).toFixed(0)} MB/s (${seconds.toFixed(2)} s), ` +
      `server RSS baseline ${baseline.toFixed(0)} MB, peak ${peak.toFixed(0)} MB, growth ${growth.toFixed(0)} MB${judged ? ` (limit ${MAX_GROWTH_MB} MB)` : ''}\n`,
    );
    if (judged && growth > MAX_GROWTH_MB) {
      process.stderr.write(`asset-upload (${store}): RSS grew by ${growth.toFixed(0)} MB, more than ${MAX_GROWTH_MB} MB\n`);
      process.exitCode = 1;
    }
  } finally {
    await server.stop();
  }
}

const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gengate-bench-asset-'));
const file = path.join(workDir, 'upload.bin');
// s3rver in this process, standing in for an S3-compatible store (a slow one: it hashes and copies
// every part in JavaScript): its figures are printed for comparison, not judged.
const s3 = await startS3();
try {
  const expectedHash = await makeFile(file);
  await measure('local disk', {}, file, expectedHash, true);
  await measure('S3 on s3rver', s3.env, file, expectedHash, false);
} finally {
  await s3.close();
  fs.rmSync(workDir, { recursive: true, force: true });
}
