/**
 * Comments in src/ cite files of this repository or nothing: no document outside it (the
 * contract, the specification's numbered documents), and every docs/ page they name exists.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { SRC, sourceFiles } from '../support/import-graph.ts';

const ROOT = path.dirname(SRC);
const OUTSIDE = /\bCONTRACT\b|spec(?:ification)? document|\.\.\/shared\//;
const DOCS_PAGE = /\bdocs\/[\w./-]+\.md\b/g;

describe('comment citations in src/', () => {
  const files = sourceFiles(SRC).map((file) => ({ name: path.relative(ROOT, file), text: readFileSync(file, 'utf8') }));

  it('name no document outside the repository', () => {
    const found = files.flatMap(({ name, text }) => text.split('\n').flatMap((line, i) => (OUTSIDE.test(line) ? [`${name}:${i + 1}: ${line.trim()}`] : [])));
    assert.deepEqual(found, []);
  });

  it('name docs/ pages that exist', () => {
    const missing = files.flatMap(({ name, text }) => [...text.matchAll(DOCS_PAGE)].map((m) => m[0]).filter((page) => !existsSync(path.join(ROOT, page))).map((page) => `${name} cites ${page}`));
    assert.deepEqual(missing, []);
  });
});
