import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { WRITER_SEMI_SPACE_MB } from '../../src/storage/background-writer.ts';

const MB = 1024 * 1024;
const WRITER_MODULE = fileURLToPath(new URL('../../src/storage/background-writer.ts', import.meta.url));

/**
 * Runs, in a process started with `flags`, a thread made as the writer's is and then a plain
 * worker; each keeps many objects alive and answers the size its young generation reached (V8's
 * new_space), and the process answers its own.
 */
function newSpaces(flags: string[]): { writer: number; later: number; main: number } {
  // Objects kept alive across many young collections, so that V8 grows the young generation as far as it may.
  const probe = `const kept = []; for (let i = 0; i < 400000; i++) kept.push({ i, text: 'row ' + i }); const v8 = require('node:v8'); require('node:worker_threads').parentPort.postMessage(v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size);`;
  const script = `
    import { Worker } from 'node:worker_threads';
    import { getHeapSpaceStatistics } from 'node:v8';
    import { startWithSmallYoungGeneration } from ${JSON.stringify(WRITER_MODULE)};
    const answer = (thread) => new Promise((resolve, reject) => thread.once('message', resolve).once('error', reject));
    const writerThread = startWithSmallYoungGeneration(${JSON.stringify(probe)}, undefined);
    const writer = await answer(writerThread);
    const later = await answer(new Worker(${JSON.stringify(probe)}, { eval: true }));
    const main = getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size;
    process.stdout.write(JSON.stringify({ writer, later, main }));
  `;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gengate-young-'));
  try {
    const file = path.join(dir, 'probe.mts');
    fs.writeFileSync(file, script);
    const out = execFileSync(process.execPath, [...flags, '--import', 'tsx', file], { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } });
    return JSON.parse(out) as { writer: number; later: number; main: number };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

describe('the background writer thread', () => {
  it('gets a small young generation when the process has a large one, and leaves the process its own for later threads', () => {
    const spaces = newSpaces(['--max-semi-space-size=16', '--min-semi-space-size=16']);
    assert.ok(spaces.main >= 16 * MB, `process new space ${spaces.main}`);
    assert.ok(spaces.writer <= 2 * WRITER_SEMI_SPACE_MB * MB, `writer thread new space ${spaces.writer}`);
    assert.ok(spaces.later >= 16 * MB, `later thread new space ${spaces.later}`);
  });

  it('sets back V8\'s defaults in a process started without the flags: a later thread\'s young generation grows past the writer\'s', () => {
    const spaces = newSpaces([]);
    assert.ok(spaces.writer <= 2 * WRITER_SEMI_SPACE_MB * MB, `writer thread new space ${spaces.writer}`);
    assert.ok(spaces.later > 2 * WRITER_SEMI_SPACE_MB * MB, `later thread new space ${spaces.later}`);
  });
});
