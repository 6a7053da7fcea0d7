// Bytes on disk per generated image: BENCH_OUTPUT_IMAGES distinct 256x256 PNGs generated through
// POST /v1/images/generations on the local blob store, then DATA_DIR/blobs measured against the
// images' own size. An output is served under /files and registered as an asset: stored once,
// the ratio is 1.0.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createToken, startBenchServer } from './support.ts';

const IMAGES = Number(process.env.BENCH_OUTPUT_IMAGES ?? 20);

/** Bytes of every file under a folder, leaving out unfinished writes in .tmp. */
function bytesUnder(dir: string): number {
  return fs.readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && !path.relative(dir, e.parentPath).split(path.sep).includes('.tmp'))
    .reduce((sum, e) => sum + fs.statSync(path.join(e.parentPath, e.name)).size, 0);
}

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gengate-bench-outputs-'));
const server = await startBenchServer({ DATA_DIR: dataDir });
try {
  const token = await createToken(server, 'bench-outputs');
  let imageBytes = 0;
  for (let i = 0; i < IMAGES; i++) {
    const res = await fetch(`${server.url}/v1/images/generations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'seedream-4.0', prompt: `lighthouse number ${i} at dusk`, size: '256x256' }),
    });
    const body = (await res.json()) as { data?: { url: string }[] };
    if (res.status !== 200 || !body.data?.[0]) throw new Error(`generation answered ${res.status}: ${JSON.stringify(body).slice(0, 300)}`);
    imageBytes += (await (await fetch(body.data[0].url)).arrayBuffer()).byteLength;
  }
  const stored = bytesUnder(path.join(dataDir, 'blobs'));
  process.stdout.write(
    `output-storage: ${IMAGES} generated images of ${(imageBytes / IMAGES / 1024).toFixed(1)} KiB on average: ` +
    `${(stored / IMAGES / 1024).toFixed(1)} KiB on disk per image, ${(stored / imageBytes).toFixed(2)}× the image bytes\n`,
  );
} finally {
  await server.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
