// Runs the test suite with node:test. Node 22.18 and later strip TypeScript types themselves
// (the code uses only erasable syntax: tsconfig.json erasableSyntaxOnly); on older Node the tests
// run from the JavaScript of scripts/test-tree.mjs, and so do the `gengate` processes they start
// (test/support/typescript-loader.ts). With --typecheck, `tsc --noEmit` runs beside
// the suite (the two together take the time of the longer), and either failing fails the run.
// Test files given as arguments run instead of every one.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildTestTree } from './test-tree.mjs';

const DIRS = ['test', 'test/unit', 'test/console'];
const named = process.argv.slice(2).filter((arg) => !arg.startsWith('--'));
const files = named.length > 0 ? named : DIRS.flatMap((dir) => fs.readdirSync(dir).filter((f) => f.endsWith('.test.ts')).sort().map((f) => path.join(dir, f)));
// Two files at a time on two cores. Three made the Node 24 pass faster (241 s against 303 s), but in
// one of two CI runs at three an outage test missed its recovery bound (test/redis-outage.test.ts).
const concurrency = process.env.TEST_CONCURRENCY ?? '2';
// Every test file is a process of its own (and some start more): Node's compile cache (22.1 and
// later) keeps the compiled modules, which a process would otherwise compile all again.
const env = { ...process.env, NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE ?? path.join(os.tmpdir(), 'gengate-node-compile-cache') };

/** Resolves with the exit code of a process; `output` collects what it prints instead of passing it on. */
function run(command, args, output) {
  const child = spawn(command, args, { env, stdio: ['ignore', output ? 'pipe' : 'inherit', output ? 'pipe' : 'inherit'] });
  child.stdout?.on('data', (d) => output.push(d));
  child.stderr?.on('data', (d) => output.push(d));
  return new Promise((resolve) => child.on('close', (code) => resolve(code ?? 1)));
}

const typecheckOutput = [];
const typecheck = process.argv.includes('--typecheck') ? run(process.execPath, ['node_modules/typescript/bin/tsc', '--noEmit'], typecheckOutput) : Promise.resolve(0);
const tree = process.features.typescript ? undefined : await buildTestTree();
const testArgs = tree ? ['--enable-source-maps', ...files.map((file) => path.join(tree, file.replace(/\.ts$/, '.js')))] : files;
const suite = await run(process.execPath, ['--test', `--test-concurrency=${concurrency}`, ...testArgs]);
if (tree) fs.rmSync(tree, { recursive: true, force: true });
const typecheckCode = await typecheck;
if (typecheckCode !== 0) process.stdout.write(`tsc --noEmit failed:\n${Buffer.concat(typecheckOutput).toString()}`);
process.exit(suite !== 0 ? suite : typecheckCode);
