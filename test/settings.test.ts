import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { runCli } from './support/cli.ts';
import { startTestServer, tempDataDir } from './support/server.ts';

describe('settings', () => {
  it('refuses to start on a bad GENGATE_CONFIG, naming the key', async () => {
    const dataDir = tempDataDir();
    const result = await runCli(['serve'], {
      PORT: '0', DATA_DIR: dataDir, LOG_LEVEL: 'silent',
      GENGATE_CONFIG: JSON.stringify({ providers: { openai: { base_url: 'http://x', api_key: 'sk-oops' } }, limits: { max_file_bytes: '20' } }),
    });
    assert.equal(result.code, 1, JSON.stringify(result));
    assert.match(result.stderr, /GENGATE_CONFIG\.providers\.openai\.api_key: unknown key/);
    assert.match(result.stderr, /GENGATE_CONFIG\.limits\.max_file_bytes: must be integer/);
    assert.ok(!result.stderr.includes('sk-oops'), 'values are not echoed');
  });

  it('refuses a provider code the catalog does not know, listing the known ones', async () => {
    const result = await runCli(['serve'], {
      PORT: '0', DATA_DIR: tempDataDir(), LOG_LEVEL: 'silent',
      GENGATE_CONFIG: JSON.stringify({ providers: { openia: { api_key_env: 'OPENAI_API_KEY' } } }),
    });
    assert.equal(result.code, 1, JSON.stringify(result));
    assert.match(result.stderr, /GENGATE_CONFIG\.providers\.openia: unknown provider code "openia"; the catalog's provider codes are [^\n]*\bopenai\b/);
    assert.doesNotMatch(result.stdout, /Providers configured/);
  });

  it('accepts a workflow provider under a name of its own', async () => {
    const workflowsDir = tempDataDir();
    const srv = await startTestServer({ GENGATE_CONFIG: JSON.stringify({ providers: { 'comfy-gpu2': { adapter: 'comfyui', base_url: 'http://127.0.0.1:1', options: { workflows_dir: workflowsDir } } } }) });
    try {
      const res = await srv.fetch('/v1/models/list?type=all', { token: srv.adminToken });
      assert.equal(res.status, 200);
    } finally {
      await srv.close();
      fs.rmSync(workflowsDir, { recursive: true, force: true });
    }
  });

  it('refuses a malformed number setting', async () => {
    const result = await runCli(['serve'], { PORT: 'eighty', DATA_DIR: tempDataDir(), LOG_LEVEL: 'silent' });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /PORT: expected an integer/);
  });

  it('reads GENGATE_CONFIG from a file when it is a path', async () => {
    const dir = tempDataDir();
    const file = path.join(dir, 'gengate.json');
    fs.writeFileSync(file, JSON.stringify({ callback: { callback_url: 'http://127.0.0.1:1/from-file' } }));
    const srv = await startTestServer({ GENGATE_CONFIG: file });
    try {
      const config = (await (await srv.fetch('/admin/config', { token: srv.adminToken })).json()) as { callback_url: string };
      assert.equal(config.callback_url, 'http://127.0.0.1:1/from-file');
    } finally {
      await srv.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
