import { createHash } from 'node:crypto';
import type { SweepCursor } from '@rs/due';
import {
  declareIndexes,
  isDuplicateKey,
  retentionQueries,
  BY_ID,
  type CollectionIndexes,
  retentionOf,
  serverLimits,
  type ListPage,
  type ListPosition,
  type RetainedCollection,
} from '@rs/store';
import { chunks } from '@rs/batching';
import { SCRAPE_QUERY_MAX_TIME_MS } from '@rs/telemetry/metrics';
import type { mongo } from 'mongoose';
import type { DeliveryStatus } from '../domain/delivery';

export interface Delivery {
  deliveryId: string;
  endpointId: string;
  eventId: string;
  type: string;
  /** The CloudEvent JSON document, as sent on every attempt (and signed). */
  body: string;
  status: DeliveryStatus;
  attempts: number;
  /** The endpoint's last answer; null before the first attempt, or when it did not answer. */
  lastStatus: number | null;
  nextAttemptAt: Date | null;
  createdAt: Date;
}

interface DeliveryDocument extends Omit<Delivery, 'deliveryId'> {
  _id: string;
  /**
   * The second (Unix, as text) in which the sweeper looks at it again, while it is pending:
   * when its next attempt is due, or when the lease of an attempt under way ends. Every
   * sweep is one equality on it, which FerretDB answers from an index (docs/decisions/0017).
   */
  due: string | null;
  /** Until when an attempt under way holds it; another attempt may start only after. */
  leaseUntil: Date | null;
}

/** The second slot of an instant. */
export const slotOf = (at: Date): string => String(Math.floor(at.getTime() / 1000));

/** The delivery of one event to one endpoint: the same id whenever the event is handled again. */
export const deliveryIdOf = (endpointId: string, eventId: string): string =>
  createHash('sha256').update(`${endpointId}|${eventId}`).digest('hex').slice(0, 32);

const toDelivery = ({ _id, due: _due, leaseUntil: _lease, ...fields }: DeliveryDocument): Delivery => ({
  deliveryId: _id,
  ...fields,
});

const DELIVERIES = 'deliveries';
/** A delivery is kept by the time it was created (WEBHOOK_DELIVERY_RETENTION_DAYS). */
const RETAINED_BY = 'createdAt';

/**
 * Deliveries are claimed by `_id`, swept by the second they are due, listed by endpoint; the
 * backlog gauge reads the pending ones by endpoint (one replica, at scrape time).
 */
export const deliveryIndexes = (retentionDays?: number): CollectionIndexes => ({
  collection: DELIVERIES,
  queries: [
    BY_ID,
    {
      query: "an endpoint's deliveries, newest first (lists)",
      mongodb: [{ key: { endpointId: 1, createdAt: -1, _id: -1 }, name: 'by_endpoint' }],
      ferretdb: ['endpointId'],
    },
    {
      query: 'pending deliveries by endpoint (backlog gauge, one replica)',
      mongodb: [
        {
          key: { status: 1, endpointId: 1 },
          name: 'by_pending_endpoint',
          partialFilterExpression: { status: 'pending' },
        },
      ],
      ferretdb: [],
      scan: 'at scrape time, on one replica',
    },
    {
      query: 'the deliveries due in one second (sweeper)',
      mongodb: [{ key: { due: 1 }, name: 'by_due_second', sparse: true }],
      ferretdb: ['due'],
    },
    ...retentionQueries(retentionOf(RETAINED_BY, retentionDays)),
  ],
});

export class DeliveryStore {
  private readonly deliveries: mongo.Collection<DeliveryDocument>;

  /** The deliveries and their retention (`purgeExpired` applies it where no TTL index does). */
  readonly retained: RetainedCollection;

  /** `retentionDays`: how long a delivery is kept after it was created (WEBHOOK_DELIVERY_RETENTION_DAYS). */
  constructor(
    private readonly db: mongo.Db,
    retentionDays?: number,
  ) {
    this.deliveries = db.collection<DeliveryDocument>(DELIVERIES);
    this.retained = {
      db,
      collection: this.deliveries.collectionName,
      retention: retentionOf(RETAINED_BY, retentionDays),
    };
  }

  async ensureIndexes(): Promise<void> {
    await declareIndexes(this.db, deliveryIndexes(this.retained.retention?.days));
  }

  /**
   * Stores new deliveries, leased until `leaseUntil` to the process that stores them (it
   * attempts them at once, without a claim; if it dies, the sweeper finds them when the lease
   * ends). Those that exist (an event handled again) stay as they are; returns the ids of
   * those stored now.
   */
  async insertMany(deliveries: readonly Delivery[], leaseUntil: Date): Promise<Set<string>> {
    const { maxInsertDocuments } = await serverLimits(this.db);
    const inserted = new Set<string>();
    for (const chunk of chunks(deliveries, maxInsertDocuments)) {
      try {
        await this.deliveries.insertMany(
          chunk.map(({ deliveryId, ...fields }) => ({
            _id: deliveryId,
            ...fields,
            due: slotOf(leaseUntil),
            leaseUntil,
          })),
          { ordered: false },
        );
        for (const delivery of chunk) inserted.add(delivery.deliveryId);
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
        const taken = new Set((error as { writeErrors: Array<{ index: number }> }).writeErrors.map((e) => e.index));
        chunk.forEach((delivery, index) => {
          if (!taken.has(index)) inserted.add(delivery.deliveryId);
        });
      }
    }
    return inserted;
  }

  /**
   * Takes a pending delivery for one attempt, until `leaseUntil`: false when it is not pending
   * at `attempts` any more, or another attempt holds it. The sweeper looks again when the lease
   * ends, so an attempt cut short by a crash is made again.
   */
  async claim(delivery: Delivery, now: Date, leaseUntil: Date): Promise<boolean> {
    const result = await this.deliveries.updateOne(
      {
        _id: delivery.deliveryId,
        status: 'pending',
        attempts: delivery.attempts,
        $or: [{ leaseUntil: null }, { leaseUntil: { $lte: now } }],
      },
      { $set: { leaseUntil, due: slotOf(leaseUntil) } },
    );
    return result.modifiedCount === 1;
  }

  /** Records an attempt's outcome (the one that claimed it at `attempts`). */
  async recordAttempt(
    delivery: Delivery,
    outcome: { status: DeliveryStatus; lastStatus: number | null; nextAttemptAt: Date | null },
  ): Promise<void> {
    await this.deliveries.updateOne(
      { _id: delivery.deliveryId, attempts: delivery.attempts },
      {
        $set: {
          status: outcome.status,
          attempts: delivery.attempts + 1,
          lastStatus: outcome.lastStatus,
          nextAttemptAt: outcome.nextAttemptAt,
          due: outcome.nextAttemptAt ? slotOf(outcome.nextAttemptAt) : null,
          leaseUntil: null,
        },
      },
    );
  }

  /**
   * A pending delivery waits in the database until `at` (its endpoint's lane is full), free for
   * whoever finds it then. A lease the event consumer gave this process (`ownLease`) goes with
   * the put-off: it would outlast it, the claim of whoever found the delivery at `at` would
   * fail, and nothing would look at it again before the second look, half a minute later. A
   * delivery another attempt holds is left as it is (its lease's end finds it).
   */
  async putOff(delivery: Delivery, { at, now, ownLease }: { at: Date; now: Date; ownLease?: Date | undefined }) {
    await this.deliveries.updateOne(
      {
        _id: delivery.deliveryId,
        status: 'pending',
        attempts: delivery.attempts,
        $or: [{ leaseUntil: null }, { leaseUntil: { $lte: now } }, ...(ownLease ? [{ leaseUntil: ownLease }] : [])],
      },
      { $set: { due: slotOf(at), leaseUntil: null } },
    );
  }

  /** Pending deliveries whose slot is `slot` (due, or whose attempt's lease ends then). */
  async pendingIn(slot: string): Promise<Delivery[]> {
    const docs = await this.deliveries.find({ due: slot }).toArray();
    return docs.filter((doc) => doc.status === 'pending').map(toDelivery);
  }

  /**
   * A delivery of the endpoint. Read by its id alone, the endpoint checked here: on FerretDB a
   * second equality would make PostgreSQL intersect the id's entry with every delivery of the
   * endpoint.
   */
  async find(endpointId: string, deliveryId: string): Promise<Delivery | null> {
    const doc = await this.deliveries.findOne({ _id: deliveryId });
    return doc && doc.endpointId === endpointId ? toDelivery(doc) : null;
  }

  /**
   * One page of an endpoint's deliveries, newest first, after the previous page's last (its
   * position is its creation time in milliseconds).
   */
  async page(endpointId: string, limit: number, after: ListPosition | null): Promise<ListPage<Delivery>> {
    const createdAt = new Date(after?.position ?? 0);
    const keyset = after ? [{ $or: [{ createdAt: { $lt: createdAt } }, { createdAt, _id: { $lt: after.id } }] }] : [];
    const docs = await this.deliveries
      .find({ endpointId, ...(keyset.length ? { $and: keyset } : {}) })
      .sort({ createdAt: -1, _id: -1 })
      .limit(limit)
      .batchSize(limit)
      .toArray();
    const last = docs.at(-1);
    return { items: docs.map(toDelivery), last: last ? { position: last.createdAt.getTime(), id: last._id } : null };
  }

  /** Makes a delivery pending again, due now (a manual retry); null when it is not this endpoint's. */
  async retryNow(endpointId: string, deliveryId: string, now: Date): Promise<Delivery | null> {
    // Found first by id alone (see `find`); an endpoint's deliveries stay its own.
    if (!(await this.find(endpointId, deliveryId))) return null;
    const result = await this.deliveries.findOneAndUpdate(
      { _id: deliveryId },
      { $set: { status: 'pending', nextAttemptAt: now, due: slotOf(now), leaseUntil: null } },
      { returnDocument: 'after' },
    );
    return result ? toDelivery(result) : null;
  }

  /** Pending deliveries of each endpoint (the backlog metric). */
  async backlog(endpointIds: readonly string[]): Promise<Map<string, number>> {
    // One query for all endpoints (docs/operations.md), served on MongoDB by `by_pending_endpoint`.
    const pending = await this.deliveries
      .aggregate<{ _id: string; count: number }>(
        [{ $match: { status: 'pending' } }, { $group: { _id: '$endpointId', count: { $sum: 1 } } }],
        { maxTimeMS: SCRAPE_QUERY_MAX_TIME_MS },
      )
      .toArray();
    const counts = new Map(pending.map(({ _id, count }) => [_id, count]));
    return new Map(endpointIds.map((endpointId) => [endpointId, counts.get(endpointId) ?? 0]));
  }
}

/** Where the sweeper of deliveries has looked up to (shared by the replicas: any of them may go on). */
export class DeliverySweepCursor implements SweepCursor {
  private readonly cursors: mongo.Collection<{ _id: string; second: number }>;

  constructor(db: mongo.Db) {
    this.cursors = db.collection('sweep_cursors');
  }

  async read(): Promise<number | null> {
    return (await this.cursors.findOne({ _id: 'deliveries' }))?.second ?? null;
  }

  async save(second: number): Promise<void> {
    await this.cursors.updateOne({ _id: 'deliveries' }, { $max: { second } }, { upsert: true });
  }
}
