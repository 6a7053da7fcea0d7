/**
 * Runs the real Codex CLI (`codex exec`) against the gateway, meant to run inside a network
 * namespace with only loopback (test/responses-agent-clients.test.ts starts it so): a fake
 * OpenAI Responses upstream behind provider `openai` (model RESPONSES_MODEL) and a fake
 * chat-completions-only upstream behind provider `deepseek` (model deepseek-chat). For each,
 * Codex answers a plain prompt, then a prompt whose model runs a shell command first. Prints one
 * line `RESULT <json>`: each run's exit code and output, what each fake received, and the ledger.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startFakeChatUpstream } from '../fakes/openai-chat-upstream.ts';
import { startFakeResponsesUpstream } from '../fakes/openai-responses-upstream.ts';
import { codexHome, RESPONSES_MODEL, writeResponsesCatalog } from './agent-clients.ts';
import { startTestServer, tempDataDir } from './server.ts';

const CODEX = fileURLToPath(new URL('../../node_modules/.bin/codex', import.meta.url));
/** The command the shell turns ask for, and the line it prints. */
export const SHELL_COMMAND = 'echo gengate-$((40+2))';
export const SHELL_OUTPUT = 'gengate-42';

interface CodexRun {
  name: string;
  code: number | null;
  stdout: string;
  stderr: string;
}

function runCodex(name: string, home: string, token: string, prompt: string): Promise<CodexRun> {
  const workdir = fs.mkdtempSync(path.join(home, 'work-'));
  return new Promise((resolve, reject) => {
    const child = spawn(CODEX, ['exec', '--skip-git-repo-check', '--color', 'never', prompt], {
      cwd: workdir,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, CODEX_HOME: home, GENGATE_API_KEY: token },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d));
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ name, code, stdout, stderr });
    });
  });
}

const dir = tempDataDir();
const responsesUpstream = await startFakeResponsesUpstream();
const chatUpstream = await startFakeChatUpstream();
const srv = await startTestServer({
  CATALOG_PATH: writeResponsesCatalog(dir),
  GENGATE_CONFIG: JSON.stringify({
    providers: {
      openai: { base_url: responsesUpstream.url, retry: { attempts: 0 } },
      deepseek: { base_url: chatUpstream.url, retry: { attempts: 0 } },
    },
  }),
});
const homes: string[] = [];
try {
  const token = await srv.tokenFor('coder');
  const runs: CodexRun[] = [];
  const shellPrompt = `run \`${SHELL_COMMAND}\` and tell me what it printed`;

  const responsesHome = codexHome(srv.url, RESPONSES_MODEL.alias);
  homes.push(responsesHome);
  runs.push(await runCodex('responses-plain', responsesHome, token, 'say hello'));
  runs.push(await runCodex('responses-shell', responsesHome, token, shellPrompt));

  const chatHome = codexHome(srv.url, 'deepseek-chat');
  homes.push(chatHome);
  chatUpstream.script({ kind: 'reply', content: 'Hello from the chat upstream' });
  runs.push(await runCodex('chat-plain', chatHome, token, 'say hello'));
  chatUpstream.script({ kind: 'tool_call', name: 'exec_command', arguments: JSON.stringify({ cmd: SHELL_COMMAND }) }, { kind: 'read_tool_output' });
  runs.push(await runCodex('chat-shell', chatHome, token, shellPrompt));

  const usage = await (await srv.fetch('/v1/usage?group_by=model', { token })).json();
  const result = {
    runs,
    responsesRequests: responsesUpstream.requests.map((r) => ({ path: r.path, body: r.body })),
    chatRequests: chatUpstream.requests.map((r) => ({ path: r.path, body: r.body })),
    usage,
  };
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
} finally {
  await srv.close();
  await responsesUpstream.close();
  await chatUpstream.close();
  for (const home of homes) fs.rmSync(home, { recursive: true, force: true });
  fs.rmSync(dir, { recursive: true, force: true });
}
