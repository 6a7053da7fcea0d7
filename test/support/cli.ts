import { spawn } from 'node:child_process';
import { NODE_CACHE_ENV, CLI_ARGS } from './typescript-loader.ts';

export interface CliResult {
  code: number | null;
  /** The signal that ended the process, when one did. */
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs `gengate …` (src/cli.ts) in its own process with only the given env, and waits for it to exit. */
export function runCli(args: string[], env: Record<string, string>): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...CLI_ARGS, ...args], { env: { PATH: process.env.PATH!, ...NODE_CACHE_ENV, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}
