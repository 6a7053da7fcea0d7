/**
 * Claude Code (`claude -p`) against the gateway's /anthropic surface, offline: each session runs in
 * a network namespace that holds only loopback (test/support/claude-code-session.ts starts the
 * upstream fake, the gateway and the CLI there), so nothing can leave the machine.
 */
import { spawn, spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { SessionResult } from './support/claude-code-session.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/** Why sessions cannot run here (no unshare, no right to make a network namespace), or undefined. */
function namespaceUnavailable(): string | undefined {
  const probe = spawnSync('unshare', ['-n', 'sh', '-c', 'ip link set lo up'], { encoding: 'utf8' });
  if (probe.error) return `unshare is not available (${probe.error.message})`;
  if (probe.status !== 0) return `unshare -n failed: ${probe.stderr.trim() || `exit ${probe.status}`}`;
  return undefined;
}

const unavailable = namespaceUnavailable();
if (unavailable) console.log(`# skipping the Claude Code sessions: ${unavailable}`);

/** Runs one session (scenario, prompt, tool the fake calls) in its own network namespace. */
function session(scenario: 'local' | 'anthropic' | 'openai', prompt: string, tool?: string): Promise<SessionResult> {
  const args = ['test/support/claude-code-session.ts', scenario, prompt, ...(tool ? [tool] : [])].map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
  return new Promise((resolve, reject) => {
    const child = spawn('unshare', ['-n', 'sh', '-c', `ip link set lo up && exec "${process.execPath}" --import tsx ${args}`], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => void (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => void (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      const line = stdout.trim().split('\n').at(-1) ?? '';
      try {
        resolve(JSON.parse(line) as SessionResult);
      } catch {
        reject(new Error(`the session ended with ${code} and no result: ${stderr.slice(-2000)}`));
      }
    });
  });
}

const READ_PROMPT = 'Read note.txt and tell me what it says.';

describe('Claude Code through /anthropic (offline, loopback only)', { skip: unavailable, concurrency: 1, timeout: 600_000 }, () => {
  it('claude -p answers from the local engine with no provider configured', async () => {
    const result = await session('local', 'Say hello to the gateway.');
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /Say hello to the gateway\. \(message 1 of this conversation, answered by the local model claude-sonnet-5-5\)/);
  });

  it('runs Claude Code\'s Read tool on the local engine and answers after its result', async () => {
    const result = await session('local', 'Use Read with {"file_path": "{note}"}', 'Read');
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, new RegExp(`Tool results: Read returned 1\\t${result.noteText}`));
  });

  it('runs a Read tool turn through an anthropic upstream, the requests passed as they came', async () => {
    const result = await session('anthropic', READ_PROMPT, 'Read');
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, new RegExp(`Tool said: 1\\t${result.noteText}`));
    const [first, second] = result.upstreamBodies as Json[];
    assert.equal(result.upstreamBodies.length, 2);
    assert.equal(first.model, 'claude-sonnet-5-5');
    assert.equal(first.stream, true);
    assert.ok(first.messages.some((m: Json) => m.role === 'system'), 'Claude Code\'s system turn kept');
    assert.ok(first.system.some((b: Json) => b.cache_control), 'cache_control kept');
    assert.ok(first.thinking && first.context_management && first.output_config, 'fields only Anthropic knows kept');
    assert.match(String(result.upstreamHeaders?.['anthropic-beta']), /claude-code-20250219/);
    const results = second.messages.at(-1).content;
    assert.equal(results[0].type, 'tool_result');
    assert.match(JSON.stringify(results[0].content), new RegExp(result.noteText));
  });

  it('runs a Read tool turn through an OpenAI-compatible upstream, translated', async () => {
    const result = await session('openai', READ_PROMPT, 'Read');
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, new RegExp(`Tool said: 1\\t${result.noteText}`));
    const [first, second] = result.upstreamBodies as Json[];
    assert.equal(result.upstreamBodies.length, 2);
    assert.equal(first.model, 'gpt-4.1');
    for (const field of ['thinking', 'context_management', 'output_config', 'metadata', 'system']) assert.equal(first[field], undefined, `${field} is not sent`);
    assert.ok(first.tools.some((t: Json) => t.type === 'function' && t.function.name === 'Read'));
    assert.ok(first.max_completion_tokens <= 32768, 'max_tokens held to the model\'s limit');
    const call = second.messages.find((m: Json) => m.role === 'assistant').tool_calls[0];
    assert.equal(call.function.name, 'Read');
    const answer = second.messages.at(-1);
    assert.equal(answer.role, 'tool');
    assert.equal(answer.tool_call_id, call.id);
    assert.match(answer.content, new RegExp(result.noteText));
  });
});
