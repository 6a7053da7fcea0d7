// The test run's JavaScript on Node without type stripping (before 22.18): `.test-build/` mirrors
// the project, with each .ts file of src/, test/ and scripts/ written as .js (its relative imports naming
// the .js files) beside a link to the .ts file, and links to everything else. Test processes then
// load plain JavaScript: through module hooks (scripts/typescript-hooks.mjs), every module of a
// process passes through the hooks' thread, about 0.6 s of CPU per test process on Node 20. Paths
// relative to a module (fixtures, docs/, node_modules/) lead where they lead from the sources.
import fs from 'node:fs';
import path from 'node:path';
import { transpile } from './typescript-transpile.mjs';

const TEST_TREE = '.test-build';
const TRANSPILED = ['src', 'test', 'scripts'];

/** Writes `.test-build/` afresh for the project at the working directory; resolves with its path. */
export async function buildTestTree() {
  fs.rmSync(TEST_TREE, { recursive: true, force: true });
  fs.mkdirSync(TEST_TREE);
  const writes = [];
  for (const entry of fs.readdirSync('.')) {
    if (entry === TEST_TREE || entry === '.git') continue;
    if (!TRANSPILED.includes(entry)) {
      fs.symlinkSync(path.resolve(entry), path.join(TEST_TREE, entry));
      continue;
    }
    for (const file of fs.readdirSync(entry, { recursive: true, withFileTypes: true })) {
      if (file.isDirectory()) continue;
      const source = path.join(file.parentPath, file.name);
      const target = path.join(TEST_TREE, source);
      fs.mkdirSync(path.dirname(target), { recursive: true });
      fs.symlinkSync(path.resolve(source), target);
      if (file.name.endsWith('.ts') && !file.name.endsWith('.d.ts')) {
        writes.push(transpile(path.resolve(source), fs.readFileSync(source, 'utf8'), { rewriteRelativeImportExtensions: true })
          .then((code) => fs.promises.writeFile(`${target.slice(0, -3)}.js`, code)));
      }
    }
  }
  await Promise.all(writes);
  return TEST_TREE;
}
