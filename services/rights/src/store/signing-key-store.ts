import { documentSchema } from '@rs/store';
import { Sealer, type Sealed, type SealingSecrets } from '@rs/sealing';
import type { Connection, Model } from 'mongoose';
import type { SigningKeyLife } from '../domain/right-token';

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
 * The right-token signing keys in the rights service's own database (docs/api.md): shared
 * by every replica, kept across restarts, each private key encrypted at rest with a key
 * derived from RIGHT_TOKEN_KEY_SECRET (or, while it is rotated out, its `_PREVIOUS`). Nothing here logs or returns a private key but
 * `all()`, to the signer.
 */
export class SigningKeyStore {
  private readonly model: Model<SigningKeyDocument>;
  private readonly sealer: Sealer;

  constructor(db: Connection, secrets: SealingSecrets | string) {
    this.model = db.model<SigningKeyDocument>('RightTokenKey', schema);
    this.sealer = new Sealer(secrets, 'rs-right-token-keys');
  }

  async all(): Promise<SigningKey[]> {
    const docs = await this.model.find().lean<SigningKeyDocument[]>();
    return docs.map((doc) => ({
      kid: doc._id,
      createdAt: doc.createdAt,
      retiredAt: doc.retiredAt,
      publicJwk: doc.publicJwk,
      privateJwk: JSON.parse(this.sealer.open(doc.sealed)) as Record<string, unknown>,
    }));
  }

  /** Stores a new key, and retires every other one as of `now`. */
  async add(key: Omit<SigningKey, 'retiredAt'>): Promise<void> {
    await this.model.collection.insertOne({
      _id: key.kid,
      createdAt: key.createdAt,
      retiredAt: null,
      publicJwk: key.publicJwk,
      sealed: this.sealer.seal(JSON.stringify(key.privateJwk)),
    } as never);
    await this.model.updateMany({ _id: { $ne: key.kid }, retiredAt: null }, { $set: { retiredAt: key.createdAt } });
  }

  /**
   * Migration step of a key rotation (docs/operations.md): seals again, with the current key, every
   * private key another key sealed (a compare-and-set on the sealed value as read). Returns
   * how many.
   */
  async reseal(): Promise<number> {
    let resealed = 0;
    for (const doc of await this.model.find().lean<SigningKeyDocument[]>()) {
      if (this.sealer.isCurrent(doc.sealed)) continue;
      const sealed = this.sealer.seal(this.sealer.open(doc.sealed));
      const result = await this.model.collection.updateOne({ _id: doc._id, sealed: doc.sealed } as never, {
        $set: { sealed },
      });
      resealed += result.modifiedCount;
    }
    return resealed;
  }

  /** The id of the key that seals now: names the rotation's migration step. */
  get sealingKeyId(): string {
    return this.sealer.keyId;
  }
}
