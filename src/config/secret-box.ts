/**
 * Secrets stored by the admin API (channel API keys, literal MCP header values) are kept
 * encrypted with AES-256-GCM under GENGATE_SECRET_KEY; GENGATE_SECRET_KEY_PREVIOUS keeps what was
 * stored before a rotation readable until `gengate secrets rotate` re-encrypts it.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/** One encrypted secret as stored: which key sealed it, the nonce, the tag and the ciphertext (base64). */
export interface SealedSecret {
  /** The first bytes of the key's SHA-256, so the right key is tried first; not secret. */
  kid: string;
  iv: string;
  tag: string;
  data: string;
  /** The last four characters, shown in answers (`api_key_last4`). */
  last4: string;
}

/** No key can read a sealed secret: it was sealed under a key this process does not have. */
export class SecretUnreadableError extends Error {}

/** Storing a secret while GENGATE_SECRET_KEY is not set. */
export class SecretKeyMissingError extends Error {}

const keyId = (key: Buffer) => createHash('sha256').update(key).digest('hex').slice(0, 12);

/** The last four characters of a secret as answers show them (all of it when shorter). */
export const lastFour = (secret: string): string => secret.slice(-4);

export class SecretBox {
  private readonly keys: Buffer[];

  private readonly current: Buffer | undefined;

  constructor(current: Buffer | undefined, previous?: Buffer) {
    this.current = current;
    this.keys = [current, previous].filter((k): k is Buffer => k !== undefined);
  }

  /** Whether new secrets can be stored. */
  get canSeal(): boolean {
    return this.current !== undefined;
  }

  seal(plain: string): SealedSecret {
    if (!this.current) throw new SecretKeyMissingError('GENGATE_SECRET_KEY is not set');
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.current, iv);
    const data = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return { kid: keyId(this.current), iv: iv.toString('base64'), tag: cipher.getAuthTag().toString('base64'), data: data.toString('base64'), last4: lastFour(plain) };
  }

  open(sealed: SealedSecret): string {
    // The key named by kid first; a kid matching none still gets every key tried (GCM's tag decides).
    const ordered = [...this.keys].sort((a, b) => Number(keyId(b) === sealed.kid) - Number(keyId(a) === sealed.kid));
    for (const key of ordered) {
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(sealed.iv, 'base64'));
        decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'));
        return Buffer.concat([decipher.update(Buffer.from(sealed.data, 'base64')), decipher.final()]).toString('utf8');
      } catch {
        // The next key, if any.
      }
    }
    throw new SecretUnreadableError(this.keys.length === 0 ? 'GENGATE_SECRET_KEY is not set' : 'sealed under a key that is neither GENGATE_SECRET_KEY nor GENGATE_SECRET_KEY_PREVIOUS');
  }

  /** Whether the secret is sealed under the current key (rotation leaves those alone). */
  isCurrent(sealed: SealedSecret): boolean {
    return this.current !== undefined && sealed.kid === keyId(this.current);
  }
}

/** Whether a value is a sealed secret as SecretBox.seal makes them. */
export function isSealedSecret(value: unknown): value is SealedSecret {
  return typeof value === 'object' && value !== null && typeof (value as SealedSecret).kid === 'string' && typeof (value as SealedSecret).data === 'string' && typeof (value as SealedSecret).iv === 'string';
}

/**
 * The text with every run of eight or more characters that also occurs in one of the secrets
 * replaced by `***`: an upstream error echoing a key, whole or in part (OpenAI shows its first
 * characters and last four), shows none of its distinctive part. Shorter runs are left: a key's
 * readable words (its provider's name) occur in ordinary error text.
 */
export function scrubSecrets(text: string, secrets: readonly string[]): string {
  const MIN = 8;
  let out = text;
  for (const secret of secrets) {
    if (secret.length < MIN) continue;
    let result = '';
    let i = 0;
    while (i < out.length) {
      let longest = 0;
      if (i + MIN <= out.length && secret.includes(out.slice(i, i + MIN))) {
        longest = MIN;
        while (i + longest < out.length && secret.includes(out.slice(i, i + longest + 1))) longest++;
      }
      if (longest > 0) {
        result += '***';
        i += longest;
      } else {
        result += out[i];
        i++;
      }
    }
    out = result;
  }
  return out;
}
