import {
  bucketPages,
  BY_ID,
  documentSchema,
  outboxDocumentFields,
  OutboxStore,
  PENDING_EVENTS,
  retentionQueries,
  retentionOf,
  type CollectionIndexes,
  type EntityUpdate,
  type OutboxEntry,
} from '@rs/store';
import type { Connection } from 'mongoose';
import type { ConsumptionRecord } from '../domain/consumption';

export const CONSUMPTIONS = 'consumptions';

/**
 * How long a settled record is kept after its holds' time: longer than an Idempotency-Key
 * lives (a day), so that a retry of a consumption across rights or of a commit finds it.
 */
export const CONSUMPTION_RETENTION = retentionOf('until', 3);

interface ConsumptionDocument extends Omit<ConsumptionRecord, 'consumptionId'> {
  _id: string;
}

const consumptionSchema = documentSchema<ConsumptionDocument>(CONSUMPTIONS, {
  userId: 'string',
  sku: 'string',
  clockId: 'string?',
  kind: 'string',
  madeBy: 'json',
  held: 'json[]',
  taken: 'json[]',
  state: 'string',
  until: 'date',
  clock: 'json?',
  ...outboxDocumentFields,
});

/** The consumption records' queries and their indexes (docs/operations.md, "Queries and their indexes"). */
export const CONSUMPTION_INDEXES: CollectionIndexes = {
  collection: CONSUMPTIONS,
  queries: [BY_ID, PENDING_EVENTS, bucketPages("the scheduler's rebuild"), ...retentionQueries(CONSUMPTION_RETENTION)],
};

const toRecord = ({ _id, clock, ...fields }: ConsumptionDocument): ConsumptionRecord => ({
  consumptionId: _id,
  ...fields,
  // Stored as JSON, its instant as text; null for a consumption in real time.
  clock: clock ? { clockId: clock.clockId, until: new Date(clock.until) } : null,
});

/**
 * The records of consumptions across rights and of reservations (docs/decisions/0045), each
 * keyed by its consumption id and changed only by compare-and-set on its generation; its
 * outbox tells the scheduler when its holds lapse.
 */
export class ConsumptionStore extends OutboxStore<ConsumptionDocument, ConsumptionRecord> {
  constructor(db: Connection) {
    super(db, 'Consumption', consumptionSchema, { toEntity: toRecord, indexes: CONSUMPTION_INDEXES });
  }

  /** A user's record by its id (another user's is none). */
  find(userId: string, consumptionId: string): Promise<ConsumptionRecord | null> {
    return this.findLive(consumptionId, { userId });
  }

  /** Stores a new record with its messages; false when its id exists (a retry, or the same request twice). */
  insert(record: ConsumptionRecord, outbox: OutboxEntry[]): Promise<boolean> {
    const { consumptionId, ...fields } = record;
    return this.documents.insert({ _id: consumptionId, ...fields }, outbox);
  }

  /** Compare-and-set: stores `next` (and its messages) only if the record is still at `current`'s generation. */
  update({ current, next, outbox }: EntityUpdate<ConsumptionRecord>): Promise<boolean> {
    const { consumptionId: _id, ...set } = next;
    return this.documents.compareAndSet({ id: current.consumptionId, generation: current.generation, set, outbox });
  }

  /** A page of the records of one bucket still holding units (for the scheduler's rebuild). */
  holding(bucket: number, page: { after: string | undefined; limit: number }) {
    return this.inBucket(bucket, page, { state: 'holding' });
  }

  /** The collection and its retention, for the purge where no TTL index applies it (FerretDB). */
  get retained() {
    return { db: this.model.db.db!, collection: CONSUMPTIONS, retention: CONSUMPTION_RETENTION };
  }
}
