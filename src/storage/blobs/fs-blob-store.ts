import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import type { BlobStore } from './blob-store.ts';

/** Blob store on local disk under one root directory. */
export class FsBlobStore implements BlobStore {
  private readonly tmpDir: string;

  private readonly root: string;

  constructor(root: string) {
    this.root = root;
    this.tmpDir = path.join(root, '.tmp');
    fs.mkdirSync(this.tmpDir, { recursive: true });
  }

  private pathOf(key: string): string {
    const resolved = path.resolve(this.root, key);
    if (!resolved.startsWith(this.root + path.sep)) throw new Error(`blob key escapes the store: ${key}`);
    return resolved;
  }

  async put(key: string, source: Readable | Buffer): Promise<number> {
    const target = this.pathOf(key);
    // Write beside the target first so readers never see a half-written file.
    const tmp = path.join(this.tmpDir, randomUUID());
    try {
      if (Buffer.isBuffer(source)) await fs.promises.writeFile(tmp, source);
      else await pipeline(source, fs.createWriteStream(tmp));
      await fs.promises.mkdir(path.dirname(target), { recursive: true });
      const { size } = await fs.promises.stat(tmp);
      await fs.promises.rename(tmp, target);
      return size;
    } catch (err) {
      await fs.promises.rm(tmp, { force: true });
      throw err;
    }
  }

  async open(key: string): Promise<Readable | undefined> {
    const file = this.pathOf(key);
    try {
      const handle = await fs.promises.open(file, 'r');
      return handle.createReadStream();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }

  async size(key: string): Promise<number | undefined> {
    try {
      return (await fs.promises.stat(this.pathOf(key))).size;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }

  async move(from: string, to: string): Promise<void> {
    const target = this.pathOf(to);
    await fs.promises.mkdir(path.dirname(target), { recursive: true });
    await fs.promises.rename(this.pathOf(from), target);
  }

  async delete(key: string): Promise<void> {
    await fs.promises.rm(this.pathOf(key), { force: true });
  }
}
