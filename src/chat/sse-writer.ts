import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';

/**
 * Server-sent events on a raw HTTP response: one `data:` event per write, sent at once, and the
 * writer held back while the client's socket buffer is full (it resumes on drain, or when the
 * client goes away).
 */
export class SseWriter {
  /** `headers`: those already set for the response (request id, …). */
  constructor(private readonly res: ServerResponse, headers: Record<string, string | number | string[] | undefined> = {}) {
    res.writeHead(200, {
      ...(headers as OutgoingHttpHeaders),
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      // Proxies such as nginx would otherwise hold the events back.
      'x-accel-buffering': 'no',
    });
  }

  /** The client is gone; nothing more will reach it. */
  get closed(): boolean {
    return this.res.destroyed;
  }

  /** Writes `data: <data>` (after `event: <event>` when named); resolves when the socket can take more. */
  async send(data: string, event?: string): Promise<void> {
    if (this.res.write(`${event === undefined ? '' : `event: ${event}\n`}data: ${data}\n\n`) || this.res.destroyed) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        this.res.off('drain', done);
        this.res.off('close', done);
        resolve();
      };
      this.res.on('drain', done);
      this.res.on('close', done);
    });
  }

  /** Writes a last event (when given) and ends the response. */
  end(data?: string): void {
    if (this.res.destroyed) return;
    this.res.end(data === undefined ? undefined : `data: ${data}\n\n`);
  }
}
