// Runs the shell examples of README.md and docs/ against a started server, so an example that
// stops working fails here. Every ```sh block runs on its own in bash -e -o pipefail, in a
// scratch folder where docs/ (and the sample files) are at hand as from the repository's root,
// with http://127.0.0.1:8080 replaced by the server's address and GG (the server's base URL),
// ADMIN (the admin token) and T (an API token of the user alice) set. curl fails on an HTTP
// error status (--fail-with-body) unless the block's fence says `http-errors`. A fence saying
// `no-run` is not run (examples that need a real upstream, a second terminal or a long-lived
// process).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startTestServer, type TestServer } from './support/server.ts';

const BLOCK_TIMEOUT_MS = 180_000;
/** The blocks of one page: their fence words, first line and script. */
interface ShellBlock {
  file: string;
  line: number;
  flags: string[];
  script: string;
}

/** README.md and every Markdown page under docs/. */
function docPages(dir = 'docs'): string[] {
  const pages = dir === 'docs' ? ['README.md'] : [];
  for (const entry of fs.existsSync(dir) ? fs.readdirSync(dir, { withFileTypes: true }) : []) {
    const at = path.join(dir, entry.name);
    if (entry.isDirectory()) pages.push(...docPages(at));
    else if (entry.name.endsWith('.md')) pages.push(at);
  }
  return pages.sort();
}

function shellBlocks(file: string): ShellBlock[] {
  const text = fs.readFileSync(file, 'utf8');
  const blocks: ShellBlock[] = [];
  for (const match of text.matchAll(/^```sh([^\n]*)\n([\s\S]*?)^```\s*$/gm)) {
    blocks.push({
      file,
      line: text.slice(0, match.index).split('\n').length,
      flags: match[1].trim().split(/\s+/).filter(Boolean),
      script: match[2],
    });
  }
  return blocks;
}

const hasTool = (tool: string) => {
  try {
    execFileSync('bash', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};

/** Runs one block; resolves with its exit code and output. */
function runBlock(block: ShellBlock, env: Record<string, string>, cwd: string): Promise<{ code: number; output: string }> {
  const curlFails = block.flags.includes('http-errors') ? '' : 'curl() { command curl --fail-with-body "$@"; }\n';
  // Pages written for a server on the default address name it directly.
  const body = block.script.replaceAll('http://127.0.0.1:8080', env.GG).replaceAll('ws://127.0.0.1:8080', env.GG.replace(/^http/, 'ws'));
  const script = `set -e -o pipefail\n${curlFails}${body}`;
  return new Promise((resolve) => {
    execFile('bash', ['-c', script], { env, cwd, timeout: BLOCK_TIMEOUT_MS, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, output: `${stdout}\n${stderr}` });
    });
  });
}

const missingTools = ['bash', 'curl', 'jq'].filter((tool) => !hasTool(tool));

describe('the shell examples of README.md and docs/', { skip: missingTools.length > 0 ? `needs ${missingTools.join(', ')}` : false }, () => {
  let srv: TestServer;
  let work: string;
  let env: Record<string, string>;
  before(async () => {
    srv = await startTestServer();
    // The blocks run in a scratch folder, so the files they write land there; docs/ is linked in for the samples.
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'gengate-docs-'));
    fs.symlinkSync(path.resolve('docs'), path.join(work, 'docs'));
    // Examples that upload `photo.png` and the like find the samples in the folder they run in.
    for (const sample of fs.readdirSync('docs/samples')) fs.copyFileSync(path.join('docs/samples', sample), path.join(work, sample));
    env = { PATH: process.env.PATH!, HOME: work, TMPDIR: work, GG: srv.url, ADMIN: srv.adminToken, T: await srv.tokenFor('alice') };
  });
  after(async () => {
    await srv.close();
    fs.rmSync(work, { recursive: true, force: true });
  });

  const blocks = docPages().flatMap(shellBlocks);
  it('finds examples to run', () => {
    assert.ok(blocks.filter((b) => !b.flags.includes('no-run')).length >= 20, `only ${blocks.length} blocks found`);
  });

  for (const block of blocks) {
    const name = `${block.file}:${block.line}`;
    if (block.flags.includes('no-run')) continue;
    it(name, async () => {
      const { code, output } = await runBlock(block, env, work);
      assert.equal(code, 0, `${name} failed (exit ${code}):\n${block.script}\n--- output ---\n${output.slice(-4000)}`);
    });
  }
});
