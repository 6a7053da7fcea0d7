import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { FsBlobStore } from '../../src/storage/blobs/fs-blob-store.ts';

describe('the local-disk blob store', () => {
  let root: string;
  let store: FsBlobStore;
  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'gengate-blobs-'));
    store = new FsBlobStore(root);
  });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  const read = async (key: string) => text((await store.open(key))!);
  const leftovers = () => fs.readdirSync(path.join(root, '.tmp'));

  it('puts bytes under a directory that does not exist yet, and beside them once it does', async () => {
    assert.equal(await store.put('assets/ab/first', Buffer.from('hello')), 5);
    assert.equal(await store.put('assets/ab/second', Buffer.from('there!')), 6);
    assert.equal(await read('assets/ab/first'), 'hello');
    assert.equal(await read('assets/ab/second'), 'there!');
    assert.equal(await store.size('assets/ab/second'), 6);
    assert.deepEqual(leftovers(), []);
  });

  it('counts the bytes of a stream and replaces what a key held', async () => {
    await store.put('files/x', Buffer.from('old content'));
    assert.equal(await store.put('files/x', Readable.from([Buffer.from('new '), Buffer.from('bytes')])), 9);
    assert.equal(await read('files/x'), 'new bytes');
  });

  it('moves a blob into a new directory, and refuses to move one that is not there', async () => {
    await store.put('incoming/1', Buffer.from('moved'));
    await store.move('incoming/1', 'assets/cd/1');
    assert.equal(await read('assets/cd/1'), 'moved');
    assert.equal(await store.size('incoming/1'), undefined);
    await assert.rejects(store.move('incoming/1', 'assets/ef/1'), { code: 'ENOENT' });
    assert.equal(await store.size('assets/ef/1'), undefined);
  });

  it('leaves nothing behind when the source fails, and keeps keys inside its root', async () => {
    const failing = new Readable({ read() { this.destroy(new Error('source broke')); } });
    await assert.rejects(store.put('files/broken', failing), /source broke/);
    assert.equal(await store.size('files/broken'), undefined);
    assert.deepEqual(leftovers(), []);
    await assert.rejects(store.put('../outside', Buffer.from('x')), /escapes the store/);
  });
});
