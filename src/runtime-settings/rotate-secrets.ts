/**
 * `gengate secrets rotate`: every secret stored through the admin API re-encrypted under
 * GENGATE_SECRET_KEY. The values do not change, so instances running meanwhile go on reading
 * them (with the new key, or the old one kept in GENGATE_SECRET_KEY_PREVIOUS).
 */
import { SettingsError } from '../config/settings.ts';
import type { SecretBox, SealedSecret } from '../config/secret-box.ts';
import type { ChannelRecord, ConfigRecord, McpServerRecord } from '../config/stored-config.ts';
import type { ConfigRecordsRepo } from '../storage/repos/config-records-repo.ts';

/** `gengate secrets rotate`: re-encrypts every stored secret under the current key; answers the names of those no key reads. */
export async function rotateSecrets(repo: ConfigRecordsRepo, secrets: SecretBox): Promise<{ rotated: number; unreadable: string[] }> {
  if (!secrets.canSeal) throw new SettingsError('GENGATE_SECRET_KEY: not set; rotation encrypts every stored secret under it');
  const { records } = await repo.load();
  const unreadable: string[] = [];
  let rotated = 0;
  const reseal = (sealed: SealedSecret, name: string): SealedSecret => {
    if (secrets.isCurrent(sealed)) {
      try {
        secrets.open(sealed);
        return sealed;
      } catch {
        unreadable.push(name);
        return sealed;
      }
    }
    try {
      const next = secrets.seal(secrets.open(sealed));
      rotated++;
      return next;
    } catch {
      unreadable.push(name);
      return sealed;
    }
  };
  const changed: ConfigRecord[] = [];
  for (const record of records) {
    if (record.kind === 'channel') {
      const value = record.value as ChannelRecord;
      if (!value.api_key) continue;
      changed.push({ ...record, value: { ...value, api_key: reseal(value.api_key, `channel ${record.key} api_key`) } });
    } else if (record.kind === 'mcp_server') {
      const value = record.value as McpServerRecord;
      if (!value.headers) continue;
      const headers = Object.fromEntries(Object.entries(value.headers).map(([h, v]) => [h, typeof v === 'string' ? v : reseal(v, `mcp server ${record.key} headers.${h}`)]));
      changed.push({ ...record, value: { ...value, headers } });
    }
  }
  await repo.rewrite(changed);
  return { rotated, unreadable };
}
