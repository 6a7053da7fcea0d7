import fs from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The JavaScript of src/cli.ts, which only the test tree (scripts/test-tree.mjs) has. */
const treeCli = new URL('../../src/cli.js', import.meta.url);

/**
 * Node arguments that run `gengate` (src/cli.ts) in a child process: the source itself where Node
 * strips types (22.18 and later). Before that, when the tests run from the test tree, its
 * JavaScript of the CLI (stack traces on the .ts lines through its source maps), which needs no
 * module hooks: they cost each process over a second, most of it the hooks' thread. Else the
 * source through scripts/typescript-loader.mjs.
 */
export const CLI_ARGS: readonly string[] = (process.features as { typescript?: unknown }).typescript
  ? ['src/cli.ts']
  : fs.existsSync(treeCli)
    ? ['--enable-source-maps', fileURLToPath(treeCli)]
    : ['--import', new URL('../../scripts/typescript-loader.mjs', import.meta.url).href, 'src/cli.ts'];

/**
 * The test run's compile cache (scripts/run-tests.mjs sets it), for a child started with an env of
 * its own: without it the child compiles every module again.
 */
export const NODE_CACHE_ENV: Readonly<Record<string, string>> = process.env.NODE_COMPILE_CACHE ? { NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE } : {};
