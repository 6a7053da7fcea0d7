import { spawn } from 'node:child_process';

/** How a child process ended and what it printed. */
export interface ChildRun {
  code: number | null;
  stdout: Buffer;
  /** The end of what it wrote to stderr (at most `stderrTailChars`). */
  stderr: string;
}

export interface RunChildOptions {
  /** The working directory of the child. */
  cwd?: string;
  /** Bytes fed to stdin, which is closed after them. */
  input?: Buffer | string;
  /** How much of the end of stderr is kept (the end holds the reason of a failure). */
  stderrTailChars: number;
  /** Kills the child and rejects with the signal's reason. */
  signal?: AbortSignal;
}

/**
 * Runs `command` as a child process (how GPL programs run, never loaded into the server), feeds
 * it `input`, collects stdout and the end of stderr, and resolves when it exits, whatever the code.
 */
export function runChild(command: string, args: string[], opts: RunChildOptions): Promise<ChildRun> {
  const { signal } = opts;
  return new Promise((resolve, reject) => {
    signal?.throwIfAborted();
    const child = spawn(command, args, { cwd: opts.cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    const stdout: Buffer[] = [];
    let stderr = '';
    const onAbort = () => child.kill('SIGKILL');
    signal?.addEventListener('abort', onAbort, { once: true });
    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-opts.stderrTailChars);
    });
    // A child may stop reading stdin early (ffmpeg probing, -t); a closed pipe is not an error.
    child.stdin.on('error', () => {});
    child.on('error', (err) => {
      signal?.removeEventListener('abort', onAbort);
      reject(err);
    });
    child.on('close', (code) => {
      signal?.removeEventListener('abort', onAbort);
      if (signal?.aborted) reject(signal.reason);
      else resolve({ code, stdout: Buffer.concat(stdout), stderr });
    });
    child.stdin.end(opts.input);
  });
}
