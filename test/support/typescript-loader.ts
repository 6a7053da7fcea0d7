/**
 * Node arguments a child process needs to run the TypeScript sources: none where Node strips
 * types itself (Node 22.18 and later), tsx's loader before that.
 */
export const TYPESCRIPT_LOADER: readonly string[] = (process.features as { typescript?: unknown }).typescript ? [] : ['--import', 'tsx'];
