// Runs the test suite with node:test. Node 22.18 and later strip TypeScript types themselves
// (the code uses only erasable syntax: tsconfig.json erasableSyntaxOnly); older Node loads the
// same files through scripts/typescript-loader.mjs.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const DIRS = ['test', 'test/unit', 'test/console'];
const files = DIRS.flatMap((dir) => fs.readdirSync(dir).filter((f) => f.endsWith('.test.ts')).sort().map((f) => path.join(dir, f)));
const concurrency = process.env.TEST_CONCURRENCY ?? '2';
const loader = process.features.typescript ? [] : ['--import', './scripts/typescript-loader.mjs'];
// Every test file is a process of its own (and some start more): Node's compile cache (22.1 and
// later) keeps the compiled modules, which a process would otherwise compile all again.
const env = { ...process.env, NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE ?? path.join(os.tmpdir(), 'gengate-node-compile-cache') };
const result = spawnSync(process.execPath, [...loader, '--test', `--test-concurrency=${concurrency}`, ...files], { stdio: 'inherit', env });
process.exit(result.status ?? 1);
