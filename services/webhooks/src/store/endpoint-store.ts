import type { mongo } from 'mongoose';
import {
  BY_ID,
  byGrantor,
  CAS_FIELD,
  declareIndexes,
  isLostCompareAndSet,
  OutboxCollection,
  type CollectionIndexes,
} from '@rs/store';
import { type Sealed, type Sealer } from '@rs/sealing';

/** A secret of an endpoint, sealed; `retiresAt` is set when a newer one replaced it (it signs until then). */
export interface StoredSecret {
  sealed: Sealed;
  createdAt: Date;
  retiresAt: Date | null;
}

export interface Endpoint {
  endpointId: string;
  /** Whose events it receives: a grantor's, or every event (null: an admin's endpoint). */
  grantorId: string | null;
  url: string;
  events: string[];
  description: string | null;
  /** Whether it receives the events of objects on test clocks (docs/api.md "Test clocks"). */
  clocks: boolean;
  secrets: StoredSecret[];
  createdAt: Date;
  /** Bumped by each change: the compare-and-set of a rotation. */
  generation: number;
}

interface EndpointDocument extends Omit<Endpoint, 'endpointId'> {
  _id: string;
  deleted: boolean;
  /** The stamp of its last compare-and-set (`OutboxCollection.compareAndSet`); never part of an endpoint. */
  [CAS_FIELD]?: unknown;
}

const toEndpoint = ({ _id, deleted: _deleted, [CAS_FIELD]: _stamp, ...fields }: EndpointDocument): Endpoint => ({
  endpointId: _id,
  ...fields,
  // Endpoints registered before the option receive no clock events, as its default says.
  clocks: fields.clocks ?? false,
});

/**
 * The endpoints in the webhooks service's own database. A deleted endpoint stays as a
 * tombstone (its deliveries log refers to it); nothing reads its secrets but the dispatcher.
 */
/** Endpoints are read by `_id`, and by grantor for every event: docs/api.md, a grantor's events reach its own endpoints only. */
export const ENDPOINT_INDEXES: CollectionIndexes = {
  collection: 'endpoints',
  queries: [BY_ID, byGrantor('its endpoints, matched against every event')],
};

export class EndpointStore {
  private readonly endpoints: mongo.Collection<EndpointDocument>;
  /**
   * The compare-and-sets of an endpoint's secrets, through the stores' one compare-and-set: on
   * FerretDB a plain `updateOne` on the generation lets two replicas that read the same
   * generation both write, and one rotation's secret, already shown to its caller, was lost
   * (docs/decisions/0046). A deletion moves the generation on, so no live read matches a
   * tombstone.
   */
  private readonly documents: OutboxCollection;

  constructor(private readonly db: mongo.Db) {
    this.endpoints = db.collection<EndpointDocument>(ENDPOINT_INDEXES.collection);
    this.documents = new OutboxCollection(db, ENDPOINT_INDEXES.collection);
  }

  /** @public (called by `runtime.migrated`) */
  async ensureIndexes(): Promise<void> {
    await declareIndexes(this.db, ENDPOINT_INDEXES);
  }

  /** The live endpoints of one grantor (null: the admins' endpoints, which receive every event). */
  async ofGrantor(grantorId: string | null): Promise<Endpoint[]> {
    return (await this.endpoints.find({ grantorId, deleted: false }).toArray()).map(toEndpoint);
  }

  /** How many live endpoints a grantor has (null: the admins'). */
  countOfGrantor(grantorId: string | null): Promise<number> {
    return this.endpoints.countDocuments({ grantorId, deleted: false });
  }

  async insert(endpoint: Endpoint): Promise<void> {
    const { endpointId, ...fields } = endpoint;
    await this.endpoints.insertOne({ _id: endpointId, ...fields, deleted: false });
  }

  /** Every live endpoint (the admins' view, and the backlog gauge). */
  async live(): Promise<Endpoint[]> {
    return (await this.endpoints.find({ deleted: false }).toArray()).map(toEndpoint);
  }

  async find(endpointId: string): Promise<Endpoint | null> {
    const doc = await this.endpoints.findOne({ _id: endpointId, deleted: false });
    return doc ? toEndpoint(doc) : null;
  }

  /**
   * Marks it deleted; false when there was no live endpoint. A new generation, so that a
   * rotation read before it loses its compare-and-set and finds no endpoint. On FerretDB, a
   * rotation that landed after this write read the endpoint has it refused: it reads again.
   */
  async delete(endpointId: string): Promise<boolean> {
    for (;;) {
      try {
        const result = await this.endpoints.updateOne(
          { _id: endpointId, deleted: false },
          { $set: { deleted: true }, $inc: { generation: 1 } },
        );
        return result.modifiedCount === 1;
      } catch (error) {
        if (!isLostCompareAndSet(error)) throw error;
      }
    }
  }

  /** Compare-and-set of its secrets on the generation it was read at; false when it changed meanwhile. */
  replaceSecrets(endpoint: Endpoint, secrets: StoredSecret[]): Promise<boolean> {
    const { endpointId: id, generation } = endpoint;
    return this.documents.compareAndSet({
      id,
      generation,
      set: { secrets, generation: generation + 1 },
      outbox: [],
    });
  }

  /**
   * Migration step of a key rotation (docs/operations.md): seals again, with the current key, every
   * stored secret another key sealed, tombstones included, a page of endpoints at a time; each
   * a compare-and-set on the generation read, which it leaves as it is (and so the ETag: the
   * secrets are the same). An endpoint changed meanwhile is read again. Returns how many
   * endpoints changed.
   */
  async resealSecrets(sealer: Sealer): Promise<number> {
    let resealed = 0;
    let after = '';
    for (;;) {
      const page = await this.endpoints
        .find({ _id: { $gt: after } })
        .sort({ _id: 1 })
        .limit(100)
        .toArray();
      if (page.length === 0) return resealed;
      for (const endpoint of page) {
        for (let stored = endpoint; stored.secrets.some((secret) => !sealer.isCurrent(secret.sealed));) {
          const secrets = stored.secrets.map((secret) =>
            sealer.isCurrent(secret.sealed) ? secret : { ...secret, sealed: sealer.seal(sealer.open(secret.sealed)) },
          );
          // A rotation since the read moved the generation on: this one reads again.
          const { _id: id, generation } = stored;
          if (await this.documents.compareAndSet({ id, generation, set: { secrets }, outbox: [] })) {
            resealed += 1;
            break;
          }
          const again = await this.endpoints.findOne({ _id: stored._id });
          if (!again) break;
          stored = again;
        }
      }
      after = page.at(-1)!._id;
    }
  }
}
