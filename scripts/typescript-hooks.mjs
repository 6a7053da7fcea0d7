// Module hooks (registered by scripts/typescript-loader.mjs) that load the project's TypeScript on
// Node without type stripping (before 22.18), through scripts/typescript-transpile.mjs. Resolution
// is Node's own: every import names its .ts file. tsx does this too, but its resolver and its
// require() hooks cost each test process about a second of CPU.
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { transpile } from './typescript-transpile.mjs';

export async function load(url, context, nextLoad) {
  if (!url.startsWith('file:') || !url.endsWith('.ts') || url.includes('/node_modules/')) return nextLoad(url, context);
  const file = fileURLToPath(url);
  return { format: 'module', source: await transpile(file, fs.readFileSync(file, 'utf8')), shortCircuit: true };
}
