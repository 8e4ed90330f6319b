import { createCipheriv, createDecipheriv, randomBytes, scryptSync } from 'node:crypto';
import { documentSchema } from '@rs/store';
import type { Connection, Model } from 'mongoose';
import type { SigningKeyLife } from '../domain/right-token';

/** A private key sealed with AES-256-GCM: what is stored, never the key itself. */
interface Sealed {
  iv: string;
  tag: string;
  data: string;
}

interface SigningKeyDocument {
  _id: string;
  createdAt: Date;
  retiredAt: Date | null;
  publicJwk: Record<string, unknown>;
  sealed: Sealed;
}

export interface SigningKey extends SigningKeyLife {
  publicJwk: Record<string, unknown>;
  privateJwk: Record<string, unknown>;
}

const schema = documentSchema<SigningKeyDocument>('right_token_keys', {
  createdAt: 'date',
  retiredAt: { type: Date, default: null },
  publicJwk: 'json',
  sealed: 'json',
});

/**
 * The right-token signing keys in the rights service's own database (DESIGN.md 8): shared
 * by every replica, kept across restarts, each private key encrypted at rest with a key
 * derived from RIGHT_TOKEN_KEY_SECRET. Nothing here logs or returns a private key but
 * `all()`, to the signer.
 */
export class SigningKeyStore {
  private readonly model: Model<SigningKeyDocument>;
  private readonly key: Buffer;

  constructor(db: Connection, secret: string) {
    this.model = db.model<SigningKeyDocument>('RightTokenKey', schema);
    this.key = scryptSync(secret, 'rs-right-token-keys', 32);
  }

  async all(): Promise<SigningKey[]> {
    const docs = await this.model.find().lean<SigningKeyDocument[]>();
    return docs.map((doc) => ({
      kid: doc._id,
      createdAt: doc.createdAt,
      retiredAt: doc.retiredAt ?? null,
      publicJwk: doc.publicJwk,
      privateJwk: JSON.parse(this.unseal(doc.sealed)) as Record<string, unknown>,
    }));
  }

  /** Stores a new key, and retires every other one as of `now`. */
  async add(key: Omit<SigningKey, 'retiredAt'>): Promise<void> {
    await this.model.collection.insertOne({
      _id: key.kid,
      createdAt: key.createdAt,
      retiredAt: null,
      publicJwk: key.publicJwk,
      sealed: this.seal(JSON.stringify(key.privateJwk)),
    } as never);
    await this.model.updateMany({ _id: { $ne: key.kid }, retiredAt: null }, { $set: { retiredAt: key.createdAt } });
  }

  private seal(text: string): Sealed {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const data = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()]);
    return { iv: iv.toString('base64'), tag: cipher.getAuthTag().toString('base64'), data: data.toString('base64') };
  }

  private unseal(sealed: Sealed): string {
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(sealed.iv, 'base64'));
    decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(sealed.data, 'base64')), decipher.final()]).toString('utf8');
  }
}
