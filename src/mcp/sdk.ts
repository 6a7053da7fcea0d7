/**
 * The MCP SDK, loaded at its first use: with zod it is some two hundred modules, which an instance
 * that neither serves nor calls MCP would otherwise load at every start.
 */
function loadOnce<T>(load: () => Promise<T>): () => Promise<T> {
  let loading: Promise<T> | undefined;
  return () => (loading ??= load());
}

/** What /mcp serves with: the server, its web-standard transport and the protocol's schemas. */
export const loadServerSdk = loadOnce(async () => ({
  ...(await import('@modelcontextprotocol/sdk/server/index.js')),
  ...(await import('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js')),
  ...(await import('@modelcontextprotocol/sdk/types.js')),
}));
export type ServerSdk = Awaited<ReturnType<typeof loadServerSdk>>;

/** What upstream servers are called with. */
export const loadClientSdk = loadOnce(async () => ({
  ...(await import('@modelcontextprotocol/sdk/client/index.js')),
  ...(await import('@modelcontextprotocol/sdk/client/streamableHttp.js')),
  ...(await import('@modelcontextprotocol/sdk/types.js')),
}));
