/** What the tests use of the MCP everything server (it ships no types). */
declare module '@modelcontextprotocol/server-everything/dist/server/index.js' {
  /** A new everything server for one session, and its cleanup. */
  export function createServer(): { server: { connect(transport: unknown): Promise<void> }; cleanup(): void };
}
