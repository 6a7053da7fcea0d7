/**
 * Node arguments a child process needs to run the TypeScript sources: none where Node strips
 * types itself (Node 22.18 and later), scripts/typescript-loader.mjs before that.
 */
export const TYPESCRIPT_LOADER: readonly string[] = (process.features as { typescript?: unknown }).typescript ? [] : ['--import', new URL('../../scripts/typescript-loader.mjs', import.meta.url).href];
