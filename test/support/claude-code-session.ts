/**
 * One Claude Code session against the gateway, run as its own process so that it can be started
 * inside a network namespace holding only loopback (test/claude-code.test.ts): it starts the
 * upstream fake the scenario names, the gateway on it, and `claude -p` with
 * ANTHROPIC_BASE_URL=<gateway>/anthropic, then prints one JSON line: what the CLI printed and what
 * the fake received.
 *
 *   node --import tsx test/support/claude-code-session.ts <local|anthropic|openai> <prompt> [tool]
 *
 * With a tool (`Read`), the fake calls it on a file of the session's directory on the first turn
 * and answers with the tool's result once the result is in the conversation. `{note}` in the
 * prompt stands for that file's path (the local engine takes a tool's arguments from the prompt).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startTestServer } from './server.ts';
import { AnthropicUpstream } from '../fakes/anthropic-upstream.ts';
import { startFakeChatUpstream } from '../fakes/openai-chat-upstream.ts';

const CLAUDE = fileURLToPath(new URL('../../node_modules/.bin/claude', import.meta.url));
const KEY_ENV = 'CLAUDE_CODE_SESSION_UPSTREAM_KEY';
const UPSTREAM_KEY = 'sk-session-upstream';
/** The note the Read tool reads; the answer must quote it. */
const NOTE_TEXT = 'the secret word is periwinkle';
const CLI_TIMEOUT_MS = 120_000;

export interface SessionResult {
  /** The text of the file a tool reads. */
  noteText: string;
  code: number | null;
  stdout: string;
  stderr: string;
  /** The bodies the upstream fake received, in order. */
  upstreamBodies: unknown[];
  /** The headers of the first request the fake received. */
  upstreamHeaders?: Record<string, unknown>;
}

const [scenario = 'local', given = 'Say hello.', tool] = process.argv.slice(2);
const home = fs.mkdtempSync(path.join(os.tmpdir(), 'claude-home-'));
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'claude-work-'));
const note = path.join(work, 'note.txt');
const prompt = given.replaceAll('{note}', note);
fs.writeFileSync(note, `${NOTE_TEXT}\n`);
process.env[KEY_ENV] = UPSTREAM_KEY;

const anthropic = scenario === 'anthropic' ? await new AnthropicUpstream(UPSTREAM_KEY).listen() : undefined;
const openai = scenario === 'openai' ? await startFakeChatUpstream() : undefined;
if (tool) {
  anthropic?.toolLoop(tool, { file_path: note });
  openai?.toolLoop(tool, JSON.stringify({ file_path: note }));
}
const providers = anthropic
  ? { anthropic: { base_url: `${anthropic.url}/v1`, api_key_env: KEY_ENV } }
  : openai ? { openai: { base_url: openai.url, api_key_env: KEY_ENV } } : undefined;
const model = scenario === 'openai' ? 'gpt-4.1' : 'claude-sonnet-5-5';
const srv = await startTestServer(providers ? { GENGATE_CONFIG: JSON.stringify({ providers }) } : {});
const token = await srv.tokenFor('claude-code');

const result = await new Promise<SessionResult>((resolve) => {
  const child = spawn(CLAUDE, ['-p', prompt, '--model', model, ...(tool ? ['--allowedTools', tool] : [])], {
    cwd: work,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: home,
      ANTHROPIC_BASE_URL: `${srv.url}/anthropic`,
      ANTHROPIC_API_KEY: token,
      ANTHROPIC_MODEL: model,
      ANTHROPIC_SMALL_FAST_MODEL: model,
      ANTHROPIC_DEFAULT_HAIKU_MODEL: model,
      DISABLE_AUTOUPDATER: '1',
      DISABLE_TELEMETRY: '1',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => void (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => void (stderr += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), CLI_TIMEOUT_MS);
  child.on('close', (code) => {
    clearTimeout(timer);
    const requests = anthropic ? anthropic.requestsTo('/v1/messages', 'POST') : [];
    resolve({
      noteText: NOTE_TEXT,
      code,
      stdout,
      stderr,
      upstreamBodies: anthropic ? requests.map((r) => r.json) : openai ? openai.requests.map((r) => r.body) : [],
      ...(anthropic && requests[0] ? { upstreamHeaders: requests[0].headers } : openai?.requests[0] ? { upstreamHeaders: openai.requests[0].headers } : {}),
    });
  });
});

await srv.close();
await anthropic?.close();
await openai?.close();
fs.rmSync(home, { recursive: true, force: true });
fs.rmSync(work, { recursive: true, force: true });
process.stdout.write(`${JSON.stringify(result)}\n`);
