import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sqliteBackgroundWriter, WRITER_AUTOCHECKPOINT_PAGES } from '../../src/storage/background-writer.ts';
import { SQLite } from '../../src/storage/sqlite-driver.ts';

describe('the background writer thread', () => {
  it('writes every row of a long batch in its transaction and keeps the write-ahead log to a few hundred pages', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gengate-writer-'));
    const file = path.join(dir, 'gengate.db');
    const db = new SQLite(file);
    db.pragma('journal_mode = WAL');
    db.exec('create table rows (id integer primary key, body text not null); create index rows_body on rows (body)');
    const pageSize = db.pragma('page_size', { simple: true }) as number;
    const writer = sqliteBackgroundWriter(file);
    try {
      const BATCHES = 40;
      const ROWS = 250;
      for (let batch = 0; batch < BATCHES; batch++) {
        const rows = Array.from({ length: ROWS }, (_, i) => [batch * ROWS + i, `row ${batch * ROWS + i} `.padEnd(300, 'x')]);
        await writer.write([{ sql: 'insert into rows (id, body) values (?, ?)', rows }]);
      }
      assert.equal(db.prepare('select count(*) from rows').pluck().get(), BATCHES * ROWS);
      const written = db.pragma('page_count', { simple: true }) as number;
      // The rows fill far more pages than SQLite's default checkpoint (1,000 pages) would let the log hold.
      assert.ok(written > 1500, `the rows took ${written} pages`);
      // The log is written from its start again after each checkpoint: its size is the most it held between two.
      const walPages = fs.statSync(`${file}-wal`).size / pageSize;
      assert.ok(walPages < 4 * WRITER_AUTOCHECKPOINT_PAGES, `the log reached ${walPages} pages`);
    } finally {
      await writer.close();
      db.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
