// Runs the test suite with node:test. Node 22.18 and later strip TypeScript types themselves
// (the code uses only erasable syntax: tsconfig.json erasableSyntaxOnly), which saves every test
// process the tsx loader; older Node runs the same files through tsx.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const DIRS = ['test', 'test/unit', 'test/console'];
const files = DIRS.flatMap((dir) => fs.readdirSync(dir).filter((f) => f.endsWith('.test.ts')).sort().map((f) => path.join(dir, f)));
const concurrency = process.env.TEST_CONCURRENCY ?? '2';
const runner = process.features.typescript ? [process.execPath] : [process.execPath, path.join('node_modules', 'tsx', 'dist', 'cli.mjs')];
const result = spawnSync(runner[0], [...runner.slice(1), '--test', `--test-concurrency=${concurrency}`, ...files], { stdio: 'inherit' });
process.exit(result.status ?? 1);
