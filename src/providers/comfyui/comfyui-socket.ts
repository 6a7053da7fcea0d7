import type { Logger } from 'pino';
import WebSocket from 'ws';
import { applyMessage, newProgress, previewOf, type PromptProgress } from './mapping.ts';
import { ComfyPromptMessage } from './reply-schemas.ts';

/** Prompts whose messages are kept before a run asks for them (their events can beat POST /prompt's answer). */
const MAX_TRACKED_PROMPTS = 1000;
/** After a failed connect, runs poll instead of trying again for this long. */
const RETRY_AFTER_FAILURE_MS = 30_000;

export interface ComfySocketOptions {
  /** ws(s)://host/ws?clientId=… */
  url: string;
  headers: Record<string, string>;
  connectTimeoutMs: number;
  logger: Logger;
}

/**
 * The one WebSocket of this gateway instance to ComfyUI (`/ws?clientId=…`): open while runs
 * use it, closed when the last one ends. Messages are folded into per-prompt progress, and
 * runs waiting on a prompt are woken by its messages and by the socket closing.
 */
export class ComfySocket {
  #ws: WebSocket | undefined;
  #connecting: Promise<boolean> | undefined;
  #users = 0;
  #failedAt = 0;
  /** The prompt ComfyUI runs now (it runs one at a time): plain preview frames are its. */
  #running: string | undefined;
  readonly #prompts = new Map<string, PromptProgress>();
  /** Per prompt, how many messages and previews arrived; with #closings, what `mark` counts. */
  readonly #changes = new Map<string, number>();
  #closings = 0;
  readonly #waiters = new Map<string, Set<() => void>>();

  private readonly opts: ComfySocketOptions;

  constructor(opts: ComfySocketOptions) {
    this.opts = opts;
  }

  get connected(): boolean {
    return this.#ws?.readyState === WebSocket.OPEN;
  }

  /** Joins the socket's users, opening it if needed; answers whether it is open (else the run polls). */
  async acquire(): Promise<boolean> {
    this.#users++;
    if (this.connected) return true;
    if (Date.now() - this.#failedAt < RETRY_AFTER_FAILURE_MS) return false;
    this.#connecting ??= this.#connect().finally(() => (this.#connecting = undefined));
    return this.#connecting;
  }

  release(): void {
    this.#users = Math.max(0, this.#users - 1);
    if (this.#users === 0 && this.#ws) {
      this.#ws.close();
      this.#ws = undefined;
      this.#prompts.clear();
      this.#changes.clear();
    }
  }

  /** What the messages so far say about the prompt. */
  progress(promptId: string): PromptProgress | undefined {
    return this.#prompts.get(promptId);
  }

  forget(promptId: string): void {
    this.#prompts.delete(promptId);
    this.#changes.delete(promptId);
  }

  /** A count of what happened to the prompt so far (its messages, the socket closing): it only grows. */
  mark(promptId: string): number {
    return (this.#changes.get(promptId) ?? 0) + this.#closings;
  }

  /**
   * Resolves at once if the prompt changed since `mark` was taken (a message that arrived while the
   * run was busy elsewhere is not missed), else at its next message, when the socket closes, after
   * `timeoutMs`, or when `signal` aborts.
   */
  waitForChange(promptId: string, mark: number, timeoutMs: number, signal: AbortSignal): Promise<void> {
    if (this.mark(promptId) !== mark) return Promise.resolve();
    return new Promise((resolve) => {
      const set = this.#waiters.get(promptId) ?? new Set();
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        set.delete(done);
        if (set.size === 0) this.#waiters.delete(promptId);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, timeoutMs));
      signal.addEventListener('abort', done, { once: true });
      set.add(done);
      this.#waiters.set(promptId, set);
    });
  }

  #wake(promptId?: string): void {
    if (promptId === undefined) this.#closings++;
    else this.#changes.set(promptId, (this.#changes.get(promptId) ?? 0) + 1);
    const sets = promptId === undefined ? [...this.#waiters.values()] : [this.#waiters.get(promptId)];
    for (const set of sets) for (const wake of [...(set ?? [])]) wake();
  }

  #connect(): Promise<boolean> {
    return new Promise((resolve) => {
      const ws = new WebSocket(this.opts.url, { headers: this.opts.headers, handshakeTimeout: this.opts.connectTimeoutMs });
      let opened = false;
      ws.on('open', () => {
        opened = true;
        if (this.#users === 0) {
          ws.close();
          resolve(false);
          return;
        }
        this.#ws = ws;
        resolve(true);
      });
      ws.on('message', (raw, isBinary) => {
        // Binary frames are previews; only JSON messages carry progress.
        if (!isBinary) this.#onMessage(raw.toString());
        else if (Buffer.isBuffer(raw)) this.#onPreview(raw);
      });
      ws.on('error', (err) => {
        if (!opened) {
          this.#failedAt = Date.now();
          this.opts.logger.warn({ err: err.message }, 'ComfyUI WebSocket unavailable; runs poll /history instead');
          resolve(false);
        }
      });
      ws.on('close', () => {
        if (this.#ws === ws) {
          this.#ws = undefined;
          if (this.#users > 0) this.opts.logger.warn('ComfyUI WebSocket closed; running prompts are polled');
        }
        if (!opened) resolve(false);
        // Runs waiting on messages switch to polling now.
        this.#wake();
      });
    });
  }

  #onMessage(text: string): void {
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      return;
    }
    // Messages about no prompt (status) say nothing of a run.
    if (!ComfyPromptMessage.Check(message)) return;
    const promptId = message.data.prompt_id;
    let state = this.#prompts.get(promptId);
    if (!state) {
      if (this.#prompts.size >= MAX_TRACKED_PROMPTS) this.forget(this.#prompts.keys().next().value!);
      state = newProgress();
      this.#prompts.set(promptId, state);
    }
    applyMessage(state, message.type, message.data);
    if (state.finished || state.error || state.interrupted) {
      if (this.#running === promptId) this.#running = undefined;
    } else if (['execution_start', 'executing', 'progress'].includes(message.type)) this.#running = promptId;
    this.#wake(promptId);
  }

  /** Keeps the newest preview of the prompt it belongs to, for its run to pass on. */
  #onPreview(frame: Buffer): void {
    const preview = previewOf(frame);
    const promptId = preview?.promptId ?? this.#running;
    const state = promptId === undefined ? undefined : this.#prompts.get(promptId);
    if (!preview || !state) return;
    // A copy: the frame's buffer may be reused by the socket.
    state.preview = { ...preview, image: Buffer.from(preview.image) };
    this.#wake(promptId);
  }
}
