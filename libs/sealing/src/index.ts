import { createCipheriv, createDecipheriv, createHash, randomBytes, scryptSync } from 'node:crypto';

/** A secret sealed with AES-256-GCM: what is stored, never the secret itself. */
export interface Sealed {
  /** Which key sealed it (`Sealer.keyId`); absent on what was sealed before keys rotated. */
  kid?: string;
  iv: string;
  tag: string;
  data: string;
}

/** The operator's secret and, while it is being rotated out, the one before it (docs/operations.md). */
export interface SealingSecrets {
  current: string;
  previous: string | null;
}

interface SealingKey {
  id: string;
  key: Buffer;
}

/**
 * Encrypts secrets at rest (right-token signing keys, webhook endpoint secrets; docs/api.md)
 * with a key derived by scrypt from an operator's secret; `purpose` separates the keys of
 * different uses of the same operator secret. A tampered or foreign record fails to open.
 *
 * Rotation (docs/operations.md): what is sealed records the id of its key (a hash of the derived
 * key, which says nothing of it); the current secret seals, and the previous one, while set,
 * still opens what it sealed. `isCurrent` tells what a migration step must seal again.
 */
export class Sealer {
  private readonly current: SealingKey;
  private readonly previous: SealingKey | null;

  constructor(secrets: SealingSecrets | string, purpose: string) {
    const { current, previous } = typeof secrets === 'string' ? { current: secrets, previous: null } : secrets;
    this.current = sealingKey(current, purpose);
    this.previous = previous ? sealingKey(previous, purpose) : null;
  }

  /** The id of the key that seals now. */
  get keyId(): string {
    return this.current.id;
  }

  seal(text: string): Sealed {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.current.key, iv);
    const data = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()]);
    return {
      kid: this.current.id,
      iv: iv.toString('base64'),
      tag: cipher.getAuthTag().toString('base64'),
      data: data.toString('base64'),
    };
  }

  /**
   * Opens with the key that sealed it; one sealed before keys had ids is tried with the current
   * key, then the previous. Throws when no key this sealer holds opens it.
   */
  open(sealed: Sealed): string {
    const keys = [this.current, this.previous].filter((key): key is SealingKey => key !== null);
    const candidates = sealed.kid ? keys.filter((key) => key.id === sealed.kid) : keys;
    if (candidates.length === 0)
      throw new Error(`sealed with key ${sealed.kid}, which is neither the current nor the previous one`);
    let failure: unknown;
    for (const { key } of candidates) {
      try {
        return openWith(key, sealed);
      } catch (error) {
        failure ??= error;
      }
    }
    throw failure;
  }

  /** Whether `sealed` is sealed with the current key (otherwise a migration step seals it again). */
  isCurrent(sealed: Sealed): boolean {
    return sealed.kid === this.current.id;
  }
}

function sealingKey(secret: string, purpose: string): SealingKey {
  const key = scryptSync(secret, purpose, 32);
  return { key, id: createHash('sha256').update(key).digest('base64url').slice(0, 16) };
}

function openWith(key: Buffer, sealed: Sealed): string {
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(sealed.iv, 'base64'));
  decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'));
  return Buffer.concat([decipher.update(Buffer.from(sealed.data, 'base64')), decipher.final()]).toString('utf8');
}
