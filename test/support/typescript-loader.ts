/**
 * Node arguments a child process needs to run the TypeScript sources: none where Node strips
 * types itself (Node 22.18 and later), scripts/typescript-loader.mjs before that.
 */
export const TYPESCRIPT_LOADER: readonly string[] = (process.features as { typescript?: unknown }).typescript ? [] : ['--import', new URL('../../scripts/typescript-loader.mjs', import.meta.url).href];

/**
 * The test run's compile cache (scripts/run-tests.mjs sets it), for a child started with an env of
 * its own: without it the child compiles every module again.
 */
export const NODE_CACHE_ENV: Readonly<Record<string, string>> = process.env.NODE_COMPILE_CACHE ? { NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE } : {};
