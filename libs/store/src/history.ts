import { actorOfEvent, type Actor, type CloudEvent, type HistoryRecord } from '@rs/contracts';
import type { mongo } from 'mongoose';
import { isDuplicateKey } from './items';
import { chunks, serverLimits } from './server-limits';
import { declareIndexes } from './indexes';
import { retentionIndexes, retentionOf, type RetainedCollection } from './retention';

/**
 * A record as stored: flat, with the resource as JSON text. FerretDB turns every nested
 * field into typed JSONB on each insert; stored flat, records went in 3-5x faster (measured:
 * 10,000 right-sized records, 3,500 vs 17,300 a second), which keeps renewal's extra cost small.
 */
interface HistoryDocument {
  /** The event's id: recording an event again (a crash before it was published) stores nothing. */
  _id: string;
  subject: string;
  generation: number;
  order: number;
  type: string;
  time: Date;
  actorKind: Actor['kind'];
  actorId: string;
  data: string;
}

const toRecord = (doc: HistoryDocument): HistoryRecord => ({
  subject: doc.subject,
  generation: doc.generation,
  order: doc.order,
  type: doc.type,
  time: doc.time,
  actor: { kind: doc.actorKind, id: doc.actorId },
  data: JSON.parse(doc.data) as Record<string, unknown>,
});

/**
 * The history of a service's resources (DESIGN.md 8 "History"): one record per change event,
 * kept in the service's own database for as long as the database, also after the resource
 * is removed. It is written by whatever publishes the events (the outbox relay, or the
 * handler of the command that made the changes), as it publishes them and before it marks
 * them sent (clears the outbox, acks the command): a change is never done with before its
 * record is stored, and one recorded twice is stored once (the event's id is the record's).
 * So history holds every stored change once, in the order of generations, as soon as its
 * events go out (docs/decisions/0016).
 */
export class HistoryLog {
  private readonly records: mongo.Collection<HistoryDocument>;

  /**
   * `types`: the event types that report a change of the resource (not announcements like
   * `service.announce`, nor the commands some changes send).
   */
  constructor(
    private readonly db: mongo.Db,
    collection: string,
    private readonly types: ReadonlySet<string>,
    /** Who made changes whose events do not say (published before events named their actor). */
    private readonly unknownActor: Actor,
    /** Days a record is kept, by the time of its change (HISTORY_RETENTION_DAYS); unset, kept. */
    retentionDays?: number,
  ) {
    this.records = db.collection<HistoryDocument>(collection);
    this.retained = { db, collection, retention: retentionOf('time', retentionDays) };
  }

  /** This history and its retention (`purgeExpired` applies it where no TTL index does). */
  readonly retained: RetainedCollection;

  /**
   * One equality per read (`subject`; on FerretDB its GIN index comes from
   * ferretdb-indexes.sql), and the retention's TTL index.
   */
  async ensureIndexes(): Promise<void> {
    await declareIndexes(this.db, this.records.collectionName, [
      { key: { subject: 1, generation: 1 }, name: 'by_subject' },
      ...retentionIndexes(this.retained.retention),
    ]);
  }

  /** Records the changes `events` report (others are left out); those recorded before stay as they are. */
  async record(events: readonly CloudEvent[]): Promise<void> {
    const records = this.recordsOf(events);
    if (records.length === 0) return;
    const { maxInsertDocuments } = await serverLimits(this.db);
    for (const chunk of chunks(records, maxInsertDocuments)) {
      try {
        await this.records.insertMany(chunk, { ordered: false });
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
      }
    }
  }

  /** Every record of one resource, in no particular order (`historyOf` orders them). */
  async of(subject: string): Promise<HistoryRecord[]> {
    return (await this.records.find({ subject }).toArray()).map(toRecord);
  }

  private recordsOf(events: readonly CloudEvent[]): HistoryDocument[] {
    const orders = new Map<string, number>();
    return events.flatMap((event) => {
      if (!this.types.has(event.type)) return [];
      const data = event.data as Record<string, unknown> & { sequence: number };
      const change = `${event.subject}|${data.sequence}`;
      const order = orders.get(change) ?? 0;
      orders.set(change, order + 1);
      const actor = actorOfEvent(event) ?? this.unknownActor;
      return [
        {
          _id: event.id,
          subject: event.subject,
          generation: data.sequence,
          order,
          type: event.type,
          time: new Date(event.time),
          actorKind: actor.kind,
          actorId: actor.id,
          data: JSON.stringify(data),
        },
      ];
    });
  }
}
