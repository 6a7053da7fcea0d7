/**
 * Task output bytes shared by ends that made the same bytes (src/assets/asset-outputs.ts), without
 * a server: an end whose record is not written drops its bytes only when no other end uses them,
 * also when the other end begins while the drop is under way.
 */
import assert from 'node:assert/strict';
import type { Readable } from 'node:stream';
import { describe, it } from 'node:test';
import { contentKey, hashOf } from '../../src/assets/asset-hash.ts';
import { AssetOutputs } from '../../src/assets/asset-outputs.ts';
import type { BlobStore } from '../../src/storage/blobs/blob-store.ts';
import type { AssetsRepo } from '../../src/storage/repos/assets-repo.ts';

const BYTES = Buffer.from('the same output, made by two tasks');

/** A promise and the function that resolves it. */
function gate<T>(): { promise: Promise<T>; open(value: T): void } {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => (open = resolve));
  return { promise, open };
}

/** Bytes in memory; `deleteGate`, when set, holds each deletion until it opens. */
class MemoryBlobs implements Partial<BlobStore> {
  readonly values = new Map<string, Buffer>();
  deleteGate: Promise<void> | undefined;

  async put(key: string, source: Readable | Buffer): Promise<number> {
    this.values.set(key, source as Buffer);
    return (source as Buffer).length;
  }

  async size(key: string): Promise<number | undefined> {
    return this.values.get(key)?.length;
  }

  async delete(key: string): Promise<void> {
    await this.deleteGate;
    this.values.delete(key);
  }
}

/** The registry's answers to "does a record use these bytes?", each held until the test gives it. */
class GatedRepo {
  readonly answers: ReturnType<typeof gate<boolean>>[] = [];

  hasContent(): Promise<boolean> {
    const answer = gate<boolean>();
    this.answers.push(answer);
    return answer.promise;
  }
}

function outputs(): { outputs: AssetOutputs; blobs: MemoryBlobs; repo: GatedRepo } {
  const blobs = new MemoryBlobs();
  const repo = new GatedRepo();
  return { outputs: new AssetOutputs({ repo: repo as unknown as AssetsRepo, blobs: blobs as unknown as BlobStore, now: Date.now }), blobs, repo };
}

/** Lets pending promise callbacks run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('task output bytes shared by two ends', () => {
  it('an end that begins storing the bytes while another end drops them keeps them', async () => {
    const { outputs: store, blobs, repo } = outputs();
    const key = contentKey(await hashOf(BYTES));
    const first = await store.storeOutput(BYTES);
    assert.equal(first.stored, true);
    // The first end was not written: its drop asks the registry whether a record uses the bytes.
    const dropped = store.dropOutput(first);
    await settle();
    assert.equal(repo.answers.length, 1);
    // Meanwhile a second end makes the same bytes: they are there, so it does not store them again.
    const second = await store.storeOutput(BYTES);
    assert.equal(second.stored, false);
    // No record uses them yet (the second end has not written its own).
    repo.answers[0]!.open(false);
    await dropped;
    assert.ok(blobs.values.has(key), 'the bytes the second end will record are still stored');
  });

  it('an end that begins storing the bytes while their deletion is under way stores them again once it is done', async () => {
    const { outputs: store, blobs, repo } = outputs();
    const key = contentKey(await hashOf(BYTES));
    const first = await store.storeOutput(BYTES);
    const deletion = gate<void>();
    blobs.deleteGate = deletion.promise;
    const dropped = store.dropOutput(first);
    await settle();
    repo.answers[0]!.open(false);
    await settle();
    // The deletion is under way (held by the store); a second end begins storing the same bytes.
    const storing = store.storeOutput(BYTES);
    await settle();
    deletion.open();
    await dropped;
    const second = await storing;
    assert.equal(second.stored, true, 'the second end found them gone and stored them');
    assert.ok(blobs.values.has(key));
  });

  it('bytes no other end uses are deleted', async () => {
    const { outputs: store, blobs, repo } = outputs();
    const first = await store.storeOutput(BYTES);
    const dropped = store.dropOutput(first);
    await settle();
    repo.answers[0]!.open(false);
    await dropped;
    assert.equal(blobs.values.size, 0);
  });
});
