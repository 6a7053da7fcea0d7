/** The pure parts of the runtime settings: sealing secrets, scrubbing them, masking audit rows, merging over the file. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { SecretBox, SecretKeyMissingError, SecretUnreadableError, scrubSecrets } from '../../src/config/secret-box.ts';
import { emptyStoredConfig, mergeConfig, sealedSecrets } from '../../src/config/stored-config.ts';
import { maskSecrets } from '../../src/runtime-settings/audit-log.ts';
import { loadSettings, SettingsError } from '../../src/config/settings.ts';

describe('SecretBox', () => {
  const key1 = randomBytes(32);
  const key2 = randomBytes(32);

  it('seals with AES-256-GCM: a fresh nonce each time, no clear text, the last four kept', () => {
    const box = new SecretBox(key1);
    const a = box.seal('sk-secret-value-1234');
    const b = box.seal('sk-secret-value-1234');
    assert.notEqual(a.iv, b.iv);
    assert.equal(a.last4, '1234');
    assert.ok(!JSON.stringify(a).includes('sk-secret'));
    assert.equal(box.open(a), 'sk-secret-value-1234');
  });

  it('reads with the previous key, refuses a wrong one and a tampered value, and cannot seal without a key', () => {
    const old = new SecretBox(key1).seal('value');
    assert.equal(new SecretBox(key2, key1).open(old), 'value');
    assert.throws(() => new SecretBox(key2).open(old), SecretUnreadableError);
    assert.throws(() => new SecretBox(key1).open({ ...old, data: Buffer.from('tampered').toString('base64') }), SecretUnreadableError);
    assert.throws(() => new SecretBox(undefined).seal('x'), SecretKeyMissingError);
    assert.equal(new SecretBox(key2, key1).isCurrent(old), false);
  });

  it('takes GENGATE_SECRET_KEY as 32 bytes of base64 only', () => {
    assert.throws(() => loadSettings({ GENGATE_SECRET_KEY: 'c2hvcnQ=' }), (err: Error) => err instanceof SettingsError && /^GENGATE_SECRET_KEY: expected 32 bytes/.test(err.message));
    assert.equal(loadSettings({ GENGATE_SECRET_KEY: key1.toString('base64') }).secretKey?.equals(key1), true);
  });
});

describe('scrubSecrets', () => {
  it('removes a key whole or in part, and leaves other text alone', () => {
    const key = 'sk-proj-AbCdEfGhIjKlMnOp1234';
    assert.equal(scrubSecrets(`Incorrect API key provided: sk-proj-AbCd***1234. You passed ${key}.`, [key]), 'Incorrect API key provided: ******1234. You passed ***.');
    assert.equal(scrubSecrets('nothing to see', [key]), 'nothing to see');
    assert.equal(scrubSecrets('minimax refused the request', ['minimax-test-key']), 'minimax refused the request');
  });
});

describe('maskSecrets', () => {
  it('shows secret fields as *** at any depth', () => {
    assert.deepEqual(maskSecrets({ a: 1, api_key: 'k', nested: [{ callback_secret: 's', token: null }] }), { a: 1, api_key: '***', nested: [{ callback_secret: '***', token: null }] });
  });
});

describe('mergeConfig', () => {
  const file = {
    providers: { openai: { api_key_env: 'K', channels: [{ name: 'main', base_url: 'http://a' }] }, google: { base_url: 'http://g' } },
    models: { 'gpt-4.1': { enabled: false } },
    mcp_servers: [{ name: 'filed', url: 'http://m', headers: { A: 'literal' } }],
  };

  it('lets stored values win key by key, and says where each comes from', () => {
    const box = new SecretBox(randomBytes(32));
    const stored = emptyStoredConfig();
    stored.channels.openai = { main: { weight: 2 }, extra: { base_url: 'http://b', api_key: box.seal('sk-stored-key') } };
    stored.channels.google = { google: { deleted: true } };
    stored.models['gpt-4.1'] = { pricing: { per_request: 1 } };
    stored.mcpServers.added = { url: 'http://n', headers: { B: box.seal('hidden') } };
    const merged = mergeConfig(file, stored, (s) => box.open(s));
    assert.deepEqual(merged.config.providers!.openai!.channels, [{ name: 'main', base_url: 'http://a', weight: 2 }, { name: 'extra', base_url: 'http://b' }]);
    assert.equal(merged.config.providers!.google!.channels, undefined);
    assert.deepEqual(merged.config.models!['gpt-4.1'], { enabled: false, pricing: { per_request: 1 } });
    assert.deepEqual([...merged.sources.channels], [['openai/main', 'file'], ['openai/extra', 'admin']]);
    assert.equal(merged.channelKeys.get('openai/extra'), 'sk-stored-key');
    assert.deepEqual(merged.mcpServers.map((s) => [s.name, s.headers, s.headerViews, s.source]), [['filed', { A: 'literal' }, { A: '***' }, 'file'], ['added', { B: 'hidden' }, { B: '***' }, 'admin']]);
    assert.ok(!JSON.stringify(merged.config).includes('hidden'), 'opened secrets stay out of the merged document');
    assert.deepEqual(sealedSecrets(stored).map((s) => s.name), ['channel openai/extra api_key', 'mcp server added headers.B']);
  });
});
