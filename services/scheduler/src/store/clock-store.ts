import {
  BY_ID,
  byGrantor,
  documentSchema,
  type CollectionIndexes,
  outboxDocumentFields,
  OutboxStore,
  PENDING_EVENTS,
  type OutboxEntry,
} from '@rs/store';
import type { Connection } from 'mongoose';
import type { ClockEntity } from '../domain/clock';

interface ClockDocument extends Omit<ClockEntity, 'clockId'> {
  _id: string;
  deleted: boolean;
  /**
   * The subscriptions and rights created on it through the API: a counter beside the entity,
   * which no compare-and-set of the clock writes (`takePlace`).
   */
  objects?: number;
}

const schema = documentSchema<ClockDocument>('clocks', {
  grantorId: 'string',
  time: 'date',
  advancingTo: 'date',
  status: 'string',
  objects: 'number?',
  deleted: 'flag',
  ...outboxDocumentFields,
});

/** The clocks' queries: by id, and a grantor's (its list and its limit). */
export const CLOCK_INDEXES: CollectionIndexes = {
  collection: 'clocks',
  queries: [BY_ID, byGrantor('its clocks: their list, its limit'), PENDING_EVENTS],
};

const toEntity = ({ _id, deleted: _deleted, objects: _objects, ...fields }: ClockDocument): ClockEntity => ({
  clockId: _id,
  ...fields,
  // Clocks stored before advances stepped were where their advance went.
  status: fields.status ?? 'ready',
});

/** The scheduler's test clocks (docs/decisions/0048): each change a compare-and-set on its generation. */
export class ClockStore extends OutboxStore<ClockDocument, ClockEntity> {
  constructor(db: Connection) {
    super(db, 'Clock', schema, { tombstone: 'deleted', toEntity, indexes: CLOCK_INDEXES });
  }

  async find(clockId: string): Promise<ClockEntity | null> {
    return this.findLive(clockId);
  }

  /** A grantor's live clocks (every grantor's for null), oldest first. */
  async list(grantorId: string | null): Promise<ClockEntity[]> {
    const docs = await this.model
      .find({ ...(grantorId === null ? {} : { grantorId }), ...this.liveCondition }, this.hiddenFields)
      .lean<ClockDocument[]>();
    return docs.map(toEntity).sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
  }

  /** Those of these clocks that are live (not deleted), by id. */
  async live(clockIds: readonly string[]): Promise<Map<string, ClockEntity>> {
    const found = await Promise.all(clockIds.map((clockId) => this.find(clockId)));
    return new Map(found.flatMap((clock) => (clock ? [[clock.clockId, clock] as const] : [])));
  }

  countOfGrantor(grantorId: string): Promise<number> {
    return this.model.countDocuments({ grantorId, ...this.liveCondition });
  }

  /**
   * Takes one of a live clock's places for an object created on it: false once it holds `max`
   * (TEST_CLOCK_MAX_OBJECTS). One conditional increment, whatever changes the clock meanwhile
   * (an advance's steps do not contend with it). FerretDB applies it by reading and writing
   * (docs/decisions/0010): creations racing on one clock may take a few places more than `max`.
   */
  async takePlace(clockId: string, max: number): Promise<boolean> {
    const taken = await this.model.collection.updateOne(
      {
        _id: clockId as never,
        ...this.liveCondition,
        $or: [{ objects: { $lt: max } }, { objects: { $exists: false } }],
      },
      { $inc: { objects: 1 } },
    );
    return taken.modifiedCount === 1;
  }

  /** Stores a new clock with its events (through the outbox). */
  insert(clock: ClockEntity, outbox: OutboxEntry[]): Promise<boolean> {
    const { clockId, ...fields } = clock;
    const doc: ClockDocument = { _id: clockId, ...fields, deleted: false };
    return this.documents.insert(doc, outbox);
  }

  /**
   * Stores `next` with its events if the clock is still at `current`'s generation; a change that
   * `removes` it deletes it.
   */
  update(current: ClockEntity, next: ClockEntity, outbox: OutboxEntry[], removes = false): Promise<boolean> {
    const { clockId: _id, ...fields } = next;
    return this.documents.compareAndSet({
      id: current.clockId,
      generation: current.generation,
      set: { ...fields, deleted: removes },
      outbox,
    });
  }
}
