import path from 'node:path';
import type { BlobStoreSettings } from '../../config/settings.ts';
import type { BlobStore } from './blob-store.ts';
import { FsBlobStore } from './fs-blob-store.ts';

/**
 * The configured blob store: local disk under DATA_DIR/blobs, or an S3 bucket checked before
 * the start goes on. The AWS SDK is loaded only for S3.
 */
export async function openBlobStore(settings: BlobStoreSettings, dataDir: string): Promise<BlobStore> {
  if (settings.kind === 'fs') return new FsBlobStore(path.join(dataDir, 'blobs'));
  const { S3BlobStore } = await import('./s3-blob-store.ts');
  const store = new S3BlobStore(settings);
  try {
    await store.check();
  } catch (err) {
    store.close();
    throw err;
  }
  return store;
}
