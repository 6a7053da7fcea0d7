// TypeScript's transpileModule with a cache on disk, for Node without type stripping (before
// 22.18): scripts/typescript-hooks.mjs loads the sources through it, scripts/test-tree.mjs writes
// the test run's JavaScript with it. transpileModule erases the types and changes nothing else
// (the code uses erasable syntax only: tsconfig.json erasableSyntaxOnly). The cache is keyed by
// the options, the file's path and its text, so a file is transpiled once until it changes.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

const require = createRequire(import.meta.url);
const TYPESCRIPT_VERSION = require('typescript/package.json').version;
const CACHE_DIR = path.join(os.tmpdir(), `gengate-typescript-${TYPESCRIPT_VERSION}`);

/** TypeScript's compiler, loaded at the first file missing from the cache (it takes most of a second). */
let typescript;

/**
 * The JavaScript of the TypeScript `source` of `file`, as ES2022 (tsconfig.json's target) with an
 * inline source map, so stack traces show the .ts lines. `options` are further compiler options.
 */
export async function transpile(file, source, options = {}) {
  const compilerOptions = { target: 'es2022', module: 'esnext', inlineSourceMap: true, ...options };
  const key = createHash('sha256').update(`${JSON.stringify(compilerOptions)}\0${file}\0${source}`).digest('hex');
  const cached = path.join(CACHE_DIR, `${key}.js`);
  try {
    return fs.readFileSync(cached, 'utf8');
  } catch {
    typescript ??= (await import('typescript')).default;
    const { options: parsed } = typescript.convertCompilerOptionsFromJson(compilerOptions, path.dirname(file));
    const code = typescript.transpileModule(source, { fileName: file, compilerOptions: parsed }).outputText;
    fs.mkdirSync(CACHE_DIR, { recursive: true });
    // Processes running side by side may write the same entry: each writes its own file and renames it.
    const written = `${cached}.${process.pid}.tmp`;
    fs.writeFileSync(written, code);
    fs.renameSync(written, cached);
    return code;
  }
}
