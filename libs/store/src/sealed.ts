import { createCipheriv, createDecipheriv, randomBytes, scryptSync } from 'node:crypto';

/** A secret sealed with AES-256-GCM: what is stored, never the secret itself. */
export interface Sealed {
  iv: string;
  tag: string;
  data: string;
}

/**
 * Encrypts secrets at rest (right-token signing keys, webhook endpoint secrets; DESIGN.md 8)
 * with a key derived by scrypt from an operator's secret; `purpose` separates the keys of
 * different uses of the same operator secret. A tampered or foreign record fails to open.
 */
export class Sealer {
  private readonly key: Buffer;

  constructor(secret: string, purpose: string) {
    this.key = scryptSync(secret, purpose, 32);
  }

  seal(text: string): Sealed {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const data = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()]);
    return { iv: iv.toString('base64'), tag: cipher.getAuthTag().toString('base64'), data: data.toString('base64') };
  }

  open(sealed: Sealed): string {
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(sealed.iv, 'base64'));
    decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(sealed.data, 'base64')), decipher.final()]).toString('utf8');
  }
}
