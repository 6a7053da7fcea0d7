// Module hooks (registered by scripts/typescript-loader.mjs) that load the project's TypeScript on
// Node without type stripping (before 22.18). TypeScript's transpileModule erases the types and
// changes nothing else (the code uses erasable syntax only: tsconfig.json erasableSyntaxOnly); its
// output is cached by file path and text, so a run transpiles a file once and later processes only
// read it. Resolution is Node's own: every import names its .ts file. tsx does this too, but its
// resolver and its require() hooks cost each test process about a second of CPU.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const TYPESCRIPT_VERSION = require('typescript/package.json').version;
// ES2022 as in tsconfig.json; the source map keeps stack traces on the .ts lines.
const COMPILER_OPTIONS = { target: 'es2022', module: 'esnext', inlineSourceMap: true };
const CACHE_DIR = path.join(os.tmpdir(), `gengate-typescript-${TYPESCRIPT_VERSION}`);
const OPTIONS_KEY = JSON.stringify(COMPILER_OPTIONS);

/** TypeScript's compiler, loaded at the first file missing from the cache (it takes most of a second). */
let typescript;

async function transpile(file, source) {
  typescript ??= (await import('typescript')).default;
  const { options } = typescript.convertCompilerOptionsFromJson(COMPILER_OPTIONS, path.dirname(file));
  return typescript.transpileModule(source, { fileName: file, compilerOptions: options }).outputText;
}

export async function load(url, context, nextLoad) {
  if (!url.startsWith('file:') || !url.endsWith('.ts') || url.includes('/node_modules/')) return nextLoad(url, context);
  const file = fileURLToPath(url);
  const source = fs.readFileSync(file, 'utf8');
  const key = createHash('sha256').update(`${OPTIONS_KEY}\0${file}\0${source}`).digest('hex');
  const cached = path.join(CACHE_DIR, `${key}.js`);
  let code;
  try {
    code = fs.readFileSync(cached, 'utf8');
  } catch {
    code = await transpile(file, source);
    fs.mkdirSync(CACHE_DIR, { recursive: true });
    // Processes running side by side may write the same entry: each writes its own file and renames it.
    const written = `${cached}.${process.pid}.tmp`;
    fs.writeFileSync(written, code);
    fs.renameSync(written, cached);
  }
  return { format: 'module', source: code, shortCircuit: true };
}
