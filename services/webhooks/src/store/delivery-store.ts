import { createHash, randomUUID } from 'node:crypto';
import type { SweepCursor } from '@rs/due';
import {
  compareAndSetWrite,
  declareIndexes,
  GroupCommit,
  isDuplicateKey,
  isLostCompareAndSet,
  retentionQueries,
  BY_ID,
  type CollectionIndexes,
  retentionOf,
  inChunks,
  serverLimits,
  upsertOne,
  type ListPage,
  type ListPosition,
  type RetainedCollection,
} from '@rs/store';
import { SCRAPE_QUERY_MAX_TIME_MS } from '@rs/telemetry/metrics';
import type { mongo } from 'mongoose';
import pLimit from 'p-limit';
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
  /**
   * Moved on by every write of the delivery (0 when stored), so that a claim is a compare-and-set
   * on what its sweeper read, which FerretDB's guard checks across replicas (docs/decisions/0046).
   */
  generation: number;
}

interface DeliveryDocument extends Omit<Delivery, 'deliveryId'> {
  _id: string;
  /**
   * The second (Unix, as text) in which the sweeper looks at it again, while it is pending:
   * when its next attempt is due, or when the lease of an attempt under way ends. Every
   * sweep is one equality on it, which FerretDB answers from an index (docs/decisions/0017).
   * Null while its batch's hold stands for it (stored for a first attempt; decision 0064).
   */
  due: string | null;
  /** Until when an attempt under way holds it; another attempt may start only after. */
  leaseUntil: Date | null;
  /** The stamp of the last claim on FerretDB (`compareAndSetWrite`); not the delivery's. */
  _cas?: unknown;
}

/**
 * The final outcome of an attempt (delivered, or failed for good), inserted beside its delivery
 * rather than written into it (docs/decisions/0064): one insert among many instead of a
 * read-modify-write each, the dearest write FerretDB has. The delivery is read through it. It
 * lies in the slot where the attempt's hold ends, where the sweeper reads it with the delivery.
 */
interface OutcomeDocument {
  /** `deliveryId:attempts`: one outcome per attempt. */
  _id: string;
  deliveryId: string;
  /** The delivery's attempts with this one. */
  attempts: number;
  endpointId: string;
  status: Exclude<DeliveryStatus, 'pending'>;
  lastStatus: number | null;
  due: string;
  /** The delivery's: an outcome is kept (and purged) with its delivery. */
  createdAt: Date;
}

/**
 * The deliveries one process stored leased to itself for their first attempt (a batch of the
 * event consumer's), in the slot where the lease ends. Those deliveries lie in no slot
 * themselves: nothing is written into them when their first attempt ends well. The sweeper
 * reads the hold at its slot, puts those with no outcome by then (their process died) into
 * the slot to be swept like any other, and deletes it.
 */
interface HoldDocument {
  _id: string;
  due: string;
  deliveryIds: string[];
  /** Its lease's end: kept (and purged) like a delivery. */
  createdAt: Date;
}

/** What an attempt came to, as the dispatcher records it. */
export interface AttemptRecord {
  status: DeliveryStatus;
  lastStatus: number | null;
  nextAttemptAt: Date | null;
}

const outcomeIdOf = (deliveryId: string, attempts: number): string => `${deliveryId}:${attempts}`;

/** The second slot of an instant. */
export const slotOf = (at: Date): string => String(Math.floor(at.getTime() / 1000));

/** The delivery of one event to one endpoint: the same id whenever the event is handled again. */
export const deliveryIdOf = (endpointId: string, eventId: string): string =>
  createHash('sha256').update(`${endpointId}|${eventId}`).digest('hex').slice(0, 32);

const toDelivery = ({ _id, due: _due, leaseUntil: _lease, _cas, ...fields }: DeliveryDocument): Delivery => ({
  deliveryId: _id,
  ...fields,
});

/** What a delivery becomes with a final outcome. */
const foldedFields = (outcome: OutcomeDocument) => ({
  status: outcome.status,
  attempts: outcome.attempts,
  lastStatus: outcome.lastStatus,
  nextAttemptAt: null,
  due: null,
  leaseUntil: null,
});

/** A delivery read through the outcome recorded for its next attempt, if there is one. */
const throughOutcome = (doc: DeliveryDocument, outcome: OutcomeDocument | null): DeliveryDocument =>
  outcome ? { ...doc, ...foldedFields(outcome) } : doc;

const DELIVERIES = 'deliveries';
const OUTCOMES = 'delivery_outcomes';
const HOLDS = 'delivery_holds';
/** A delivery (and an outcome not yet folded into it) is kept by the time it was created (WEBHOOK_DELIVERY_RETENTION_DAYS). */
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

/** Outcomes are read by `_id` (a delivery's next attempt) and swept by their slot, as holds are. */
const sweptBySlot = (collection: string, what: string, retentionDays?: number): CollectionIndexes => ({
  collection,
  queries: [
    BY_ID,
    {
      query: `the ${what} in one second (sweeper)`,
      mongodb: [{ key: { due: 1 }, name: 'by_due_second' }],
      ferretdb: ['due'],
    },
    ...retentionQueries(retentionOf(RETAINED_BY, retentionDays)),
  ],
});
export const outcomeIndexes = (retentionDays?: number) => sweptBySlot(OUTCOMES, 'final outcomes', retentionDays);
export const holdIndexes = (retentionDays?: number) => sweptBySlot(HOLDS, 'holds ending', retentionDays);

export class DeliveryStore {
  private readonly deliveries: mongo.Collection<DeliveryDocument>;
  private readonly outcomes: mongo.Collection<OutcomeDocument>;
  private readonly holds: mongo.Collection<HoldDocument>;
  /** Final outcomes waiting to be inserted: those handed in while an insert is under way go together. */
  private readonly outcomeInserts = new GroupCommit<OutcomeDocument, void>((docs) => this.insertOutcomes(docs), 1_000);
  /** Updates of deliveries under way at once (FerretDB: 16 concurrent updates is its best rate). */
  private readonly updates = pLimit(16);

  /** The deliveries, their outcomes and holds, with their retention (`purgeExpired` applies it where no TTL index does). */
  readonly retained: RetainedCollection[];

  /** `retentionDays`: how long a delivery is kept after it was created (WEBHOOK_DELIVERY_RETENTION_DAYS). */
  constructor(
    private readonly db: mongo.Db,
    retentionDays?: number,
  ) {
    this.deliveries = db.collection<DeliveryDocument>(DELIVERIES);
    this.outcomes = db.collection<OutcomeDocument>(OUTCOMES);
    this.holds = db.collection<HoldDocument>(HOLDS);
    const retention = retentionOf(RETAINED_BY, retentionDays);
    this.retained = [DELIVERIES, OUTCOMES, HOLDS].map((collection) => ({ db, collection, retention }));
  }

  async ensureIndexes(): Promise<void> {
    const days = this.retained[0]!.retention?.days;
    for (const indexes of [deliveryIndexes(days), outcomeIndexes(days), holdIndexes(days)])
      await declareIndexes(this.db, indexes);
  }

  /**
   * Stores new deliveries, leased until `leaseUntil` to the process that stores them (it
   * attempts them at once, without a claim), and their hold: if the process dies, the sweeper
   * finds them by it when the lease ends. Those that exist (an event handled again) stay as
   * they are; returns the ids of those stored now.
   */
  async insertMany(deliveries: readonly Delivery[], leaseUntil: Date): Promise<Set<string>> {
    const inserted = new Set<string>();
    await inChunks(this.db, deliveries, async (chunk) => {
      try {
        await this.deliveries.insertMany(
          chunk.map(({ deliveryId, ...fields }) => ({
            _id: deliveryId,
            ...fields,
            due: null,
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
    });
    // Those stored before too: after a crash between their insert and their hold's, the event
    // comes again and finds them stored, leased still, and unheld.
    if (deliveries.length > 0)
      await this.holds.insertOne({
        _id: randomUUID(),
        due: slotOf(leaseUntil),
        deliveryIds: deliveries.map((delivery) => delivery.deliveryId),
        createdAt: leaseUntil,
      });
    return inserted;
  }

  /**
   * Takes a pending delivery for one attempt, until `leaseUntil`: the delivery as claimed, or
   * null when it is not pending at `attempts` any more, another attempt holds it, or anything
   * wrote it since it was read (every replica's sweeper reads the same seconds: of the replicas
   * that found it, one claims it). The sweeper looks again when the lease ends, so an attempt
   * cut short by a crash is made again.
   */
  async claim(delivery: Delivery, now: Date, leaseUntil: Date): Promise<Delivery | null> {
    // FerretDB checks the filter on the document it read: its guard checks the generation again
    // as it writes (docs/decisions/0046).
    const stamped = !(await serverLimits(this.db)).usesDriverIndexes;
    const generation = delivery.generation + 1;
    const { filter, update } = compareAndSetWrite(
      {
        id: delivery.deliveryId,
        generation: delivery.generation,
        set: { leaseUntil, due: slotOf(leaseUntil), generation },
        outbox: [],
      },
      {
        status: 'pending',
        attempts: delivery.attempts,
        $or: [{ leaseUntil: null }, { leaseUntil: { $lte: now } }],
      },
      stamped,
    );
    try {
      const result = await this.deliveries.updateOne(filter, update);
      if (result.modifiedCount !== 1) return null;
    } catch (error) {
      if (isLostCompareAndSet(error)) return null;
      throw error;
    }
    // An attempt whose hold had ended before its final outcome was written (a slow database):
    // that attempt was made, so this one is not.
    const outcome = await this.outcomes.findOne({ _id: outcomeIdOf(delivery.deliveryId, delivery.attempts + 1) });
    if (!outcome) return { ...delivery, generation };
    await this.fold(outcome);
    return null;
  }

  /**
   * A write of a delivery other than a claim: it moves the generation on, so that a claim read
   * before it loses. `lost` when FerretDB's guard refused it because a claim landed after it
   * read: the delivery is that attempt's now.
   */
  private async write(
    filter: mongo.Filter<DeliveryDocument>,
    set: Partial<DeliveryDocument>,
  ): Promise<'written' | 'unmatched' | 'lost'> {
    try {
      const result = await this.deliveries.updateOne(filter, { $set: set, $inc: { generation: 1 } });
      return result.modifiedCount === 1 ? 'written' : 'unmatched';
    } catch (error) {
      if (isLostCompareAndSet(error)) return 'lost';
      throw error;
    }
  }

  /**
   * Records an attempt's outcome (the one that held it at `attempts`, until `heldUntil`): a
   * final one as an inserted outcome in the hold's slot, a retry into the delivery (its slot
   * moves to the retry's second). Resolves with the delivery as it waits for that retry, or null
   * (a final outcome, or a retry another attempt's write came before).
   */
  async recordAttempt(delivery: Delivery, outcome: AttemptRecord, heldUntil: Date): Promise<Delivery | null> {
    if (outcome.status !== 'pending') {
      await this.outcomeInserts.add({
        _id: outcomeIdOf(delivery.deliveryId, delivery.attempts + 1),
        deliveryId: delivery.deliveryId,
        attempts: delivery.attempts + 1,
        endpointId: delivery.endpointId,
        status: outcome.status,
        lastStatus: outcome.lastStatus,
        due: slotOf(heldUntil),
        createdAt: delivery.createdAt,
      });
      return null;
    }
    const retried = { ...delivery, ...outcome, attempts: delivery.attempts + 1 };
    const written = await this.updates(() =>
      this.write(
        { _id: delivery.deliveryId, attempts: delivery.attempts },
        {
          status: retried.status,
          attempts: retried.attempts,
          lastStatus: retried.lastStatus,
          nextAttemptAt: retried.nextAttemptAt,
          due: retried.nextAttemptAt ? slotOf(retried.nextAttemptAt) : null,
          leaseUntil: null,
        },
      ),
    );
    return written === 'written' ? { ...retried, generation: delivery.generation + 1 } : null;
  }

  /** An outcome found there already is another attempt's at the same number (see `claim`): the first stands. */
  private async insertOutcomes(docs: OutcomeDocument[]): Promise<void[]> {
    await inChunks(this.db, docs, (chunk) =>
      this.outcomes.insertMany(chunk, { ordered: false }).catch((error: unknown) => {
        if (!isDuplicateKey(error)) throw error;
      }),
    );
    return docs.map(() => undefined);
  }

  /**
   * Writes an outcome into its delivery (if it is still at the attempt before), and deletes it;
   * false, keeping it, when a claim landed after the delivery was read (whoever reads it next
   * reads through the outcome, and folds it).
   */
  private async fold(outcome: OutcomeDocument): Promise<boolean> {
    const written = await this.write(
      { _id: outcome.deliveryId, attempts: outcome.attempts - 1 },
      foldedFields(outcome),
    );
    if (written === 'lost') return false;
    await this.outcomes.deleteOne({ _id: outcome._id });
    return true;
  }

  /** The outcome recorded for a delivery's next attempt, if it has not been folded in. */
  private async outcomeOf(doc: DeliveryDocument): Promise<OutcomeDocument | null> {
    return doc.status === 'pending' ? this.outcomes.findOne({ _id: outcomeIdOf(doc._id, doc.attempts + 1) }) : null;
  }

  /**
   * A pending delivery waits in the database until `at` (its endpoint's lane is full), free for
   * whoever finds it then. A lease the event consumer gave this process (`ownLease`) goes with
   * the put-off: it would outlast it, the claim of whoever found the delivery at `at` would
   * fail, and nothing would look at it again before the second look, half a minute later. A
   * delivery another attempt holds is left as it is (its lease's end finds it).
   */
  async putOff(delivery: Delivery, { at, now, ownLease }: { at: Date; now: Date; ownLease?: Date | undefined }) {
    await this.write(
      {
        _id: delivery.deliveryId,
        status: 'pending',
        attempts: delivery.attempts,
        $or: [{ leaseUntil: null }, { leaseUntil: { $lte: now } }, ...(ownLease ? [{ leaseUntil: ownLease }] : [])],
      },
      { due: slotOf(at), leaseUntil: null },
    );
  }

  /**
   * Pending deliveries whose slot is `slot` (due, or whose attempt's hold ends then), the held
   * deliveries whose first attempt has no outcome by the end of their hold among them. Those
   * with an outcome recorded in the slot are pending no more.
   */
  async pendingIn(slot: string): Promise<Delivery[]> {
    const [holds, outcomes] = await Promise.all([
      this.holds.find({ due: slot }).toArray(),
      this.outcomes.find({ due: slot }).toArray(),
    ]);
    const recorded = new Set(outcomes.map((outcome) => outcome._id));
    if (holds.length > 0) {
      // Into the slot, unless an attempt took it on since (a retry's, a put-off's or a claim's
      // slot): then it lies where that attempt put it.
      // Read first: most of them were attempted and retried (an endpoint down), and on FerretDB a
      // read is one statement, an update that finds nothing to change three (begin, select, commit).
      const unrecorded = holds.flatMap((hold) => hold.deliveryIds).filter((id) => !recorded.has(outcomeIdOf(id, 1)));
      await Promise.all(
        unrecorded.map((id) =>
          this.updates(async () => {
            const doc = await this.deliveries.findOne({ _id: id });
            if (doc?.attempts === 0 && doc.due === null)
              await this.write({ _id: id, attempts: 0, due: null }, { due: slot });
          }),
        ),
      );
      await this.holds.deleteMany({ due: slot, _id: { $in: holds.map((hold) => hold._id) } });
    }
    const docs = await this.deliveries.find({ due: slot }).toArray();
    return docs
      .filter((doc) => doc.status === 'pending' && !recorded.has(outcomeIdOf(doc._id, doc.attempts + 1)))
      .map(toDelivery);
  }

  /**
   * A delivery of the endpoint. Read by its id alone, the endpoint checked here: on FerretDB a
   * second equality would make PostgreSQL intersect the id's entry with every delivery of the
   * endpoint.
   */
  async find(endpointId: string, deliveryId: string): Promise<Delivery | null> {
    const doc = await this.deliveries.findOne({ _id: deliveryId });
    return doc && doc.endpointId === endpointId ? toDelivery(throughOutcome(doc, await this.outcomeOf(doc))) : null;
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
    const outcomes = await Promise.all(docs.map((doc) => this.outcomeOf(doc)));
    return {
      items: docs.map((doc, index) => toDelivery(throughOutcome(doc, outcomes[index]!))),
      last: last ? { position: last.createdAt.getTime(), id: last._id } : null,
    };
  }

  /** Makes a delivery pending again, due now (a manual retry); null when it is not this endpoint's. */
  async retryNow(endpointId: string, deliveryId: string, now: Date): Promise<Delivery | null> {
    for (;;) {
      // Found first by id alone (see `find`); an endpoint's deliveries stay its own.
      const doc = await this.deliveries.findOne({ _id: deliveryId });
      if (!doc || doc.endpointId !== endpointId) return null;
      // Its last attempt counts before the next one is made: its outcome is folded in first.
      const outcome = await this.outcomeOf(doc);
      if (outcome && !(await this.fold(outcome))) continue;
      try {
        const result = await this.deliveries.findOneAndUpdate(
          { _id: deliveryId },
          {
            $set: { status: 'pending', nextAttemptAt: now, due: slotOf(now), leaseUntil: null },
            $inc: { generation: 1 },
          },
          { returnDocument: 'after' },
        );
        return result ? toDelivery(result) : null;
      } catch (error) {
        // A claim landed after FerretDB read it: read it again, as that attempt left it.
        if (!isLostCompareAndSet(error)) throw error;
      }
    }
  }

  /** Pending deliveries of each endpoint (the backlog metric). */
  async backlog(endpointIds: readonly string[]): Promise<Map<string, number>> {
    // One query for all endpoints (docs/operations.md), served on MongoDB by `by_pending_endpoint`,
    // less the final outcomes stored beside their deliveries (decision 0064: kept as long as
    // they are, so this reads both collections whole, as the deliveries' read alone did before).
    const byEndpoint = (match: object) => [{ $match: match }, { $group: { _id: '$endpointId', count: { $sum: 1 } } }];
    const options = { maxTimeMS: SCRAPE_QUERY_MAX_TIME_MS };
    const [pending, settled] = await Promise.all([
      this.deliveries.aggregate<{ _id: string; count: number }>(byEndpoint({ status: 'pending' }), options).toArray(),
      this.outcomes.aggregate<{ _id: string; count: number }>(byEndpoint({}), options).toArray(),
    ]);
    const counts = new Map(pending.map(({ _id, count }) => [_id, count]));
    for (const { _id, count } of settled) counts.set(_id, Math.max(0, (counts.get(_id) ?? 0) - count));
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
    await upsertOne(this.cursors, { _id: 'deliveries' }, { $max: { second } });
  }
}
