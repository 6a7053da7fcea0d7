import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';

/** Bytes of events held back before they are written at once, whatever the event loop is doing. */
const MAX_PENDING_CHARS = 64 * 1024;

/**
 * Server-sent events on a raw HTTP response. The events of one turn of the event loop (those one
 * upstream read produced) go out in one socket write at the end of that turn, not one write
 * each; the writer is held back while the client's socket buffer is full (it resumes on drain,
 * or when the client goes away).
 */
export class SseWriter {
  private pending = '';
  private flushScheduled = false;
  /** The last write found the socket buffer full. */
  private full = false;

  /** `headers`: those already set for the response (request id, …). */
  private readonly res: ServerResponse;

  constructor(res: ServerResponse, headers: Record<string, string | number | string[] | undefined> = {}) {
    this.res = res;
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

  /**
   * Queues `data: <data>` (after `id: <id>` and `event: <event>` when given) for this turn's write.
   * Answers undefined while the socket takes more (no promise for each event), else a promise
   * that settles when it can take more or the client went away.
   */
  send(data: string, event?: string, id?: number): Promise<void> | undefined {
    this.pending += `${id === undefined ? '' : `id: ${id}\n`}${event === undefined ? '' : `event: ${event}\n`}data: ${data}\n\n`;
    if (this.pending.length >= MAX_PENDING_CHARS) this.flush();
    else if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flush);
    }
    if (!this.full || this.res.destroyed) return undefined;
    return new Promise<void>((resolve) => {
      const done = () => {
        this.res.off('drain', done);
        this.res.off('close', done);
        resolve();
      };
      this.res.on('drain', done);
      this.res.on('close', done);
    });
  }

  /** Queues a comment line (`: <text>`), which clients ignore and proxies see as traffic. */
  comment(text: string): void {
    this.pending += `: ${text}\n\n`;
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flush);
    }
  }

  private readonly flush = (): void => {
    this.flushScheduled = false;
    if (this.pending === '' || this.res.destroyed || this.res.writableEnded) return;
    const chunk = this.pending;
    this.pending = '';
    if (this.res.write(chunk)) return;
    this.full = true;
    this.res.once('drain', () => (this.full = false));
  };

  /** Writes what is queued and a last event (when given), and ends the response. */
  end(data?: string): void {
    if (this.res.destroyed || this.res.writableEnded) return;
    const last = this.pending + (data === undefined ? '' : `data: ${data}\n\n`);
    this.pending = '';
    this.res.end(last === '' ? undefined : last);
  }
}
