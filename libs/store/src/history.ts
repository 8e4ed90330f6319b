import {
  actorOfEvent,
  historyOf,
  type Actor,
  type CloudEvent,
  type HistoryPageRequest,
  type HistoryPosition,
  type HistoryRecord,
} from '@rs/contracts';
import type { mongo } from 'mongoose';
import { isDuplicateKey } from './items';
import { inChunks } from './server-limits';
import { declareIndexes, type CollectionIndexes } from './indexes';
import { retentionOf, retentionQueries, type RetainedCollection } from './retention';

/**
 * A record as stored: flat, with the resource as JSON text. FerretDB turns every nested
 * field into typed JSONB on each insert; flat records go in several times faster, which keeps
 * renewal's extra cost small (docs/performance.md, "Measurements behind the code").
 */
interface HistoryDocument {
  /** The event's id: recording an event again (a crash before it was published) stores nothing. */
  _id: string;
  subject: string;
  /**
   * The subject and the run of `SPAN` generations the record falls in: the one equality a
   * page of history is read by, so that a page costs at most a few spans, however long the
   * history (an equality is what FerretDB's index serves; a range on `generation` is not).
   */
  span: string;
  generation: number;
  order: number;
  type: string;
  time: Date;
  actorKind: Actor['kind'];
  actorId: string;
  data: string;
}

/** Generations per span: a page of `limit` entries reads about `limit / SPAN + 1` spans, each at most this many records. */
export const HISTORY_SPAN = 16;
const spanNumberOf = (generation: number) => Math.floor(generation / HISTORY_SPAN);
const spanKey = (subject: string, span: number) => `${subject}|${span}`;

/** One page of a resource's history, and the record before it (whose data its first entry's changes are counted from). */
export interface HistoryPageRead {
  records: HistoryRecord[];
  before: HistoryRecord | null;
}

const isAfter = (doc: HistoryDocument, position: HistoryPosition | null) =>
  position === null ||
  doc.generation > position.generation ||
  (doc.generation === position.generation && doc.order > position.order);
const byPosition = (a: HistoryDocument, b: HistoryDocument) => a.generation - b.generation || a.order - b.order;

const toRecord = (doc: HistoryDocument): HistoryRecord => ({
  subject: doc.subject,
  generation: doc.generation,
  order: doc.order,
  type: doc.type,
  time: doc.time,
  actor: { kind: doc.actorKind, id: doc.actorId },
  data: JSON.parse(doc.data) as Record<string, unknown>,
});

/** The field a history's retention goes by: the time of the change. */
const HISTORY_TIME = 'time';

/**
 * A history's queries: one equality per page read (`span`, docs/decisions/0040), and the purge
 * of its retention. Nothing else reads it, and the renewal path writes it: no other index.
 */
export const historyIndexes = (collection: string, retentionDays?: number): CollectionIndexes => ({
  collection,
  queries: [
    {
      query: 'a page of a history (a span of 16 generations at a time)',
      mongodb: [{ key: { span: 1 }, name: 'by_span' }],
      ferretdb: ['span'],
    },
    ...retentionQueries(retentionOf(HISTORY_TIME, retentionDays)),
  ],
});

/**
 * The history of a service's resources (docs/api.md "History"): one record per change event,
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
    this.retained = { db, collection, retention: retentionOf(HISTORY_TIME, retentionDays) };
  }

  /** This history and its retention (`purgeExpired` applies it where no TTL index does). */
  readonly retained: RetainedCollection;

  /** Its queries' indexes (`historyIndexes`). */
  async ensureIndexes(): Promise<void> {
    await declareIndexes(this.db, historyIndexes(this.records.collectionName, this.retained.retention?.days));
  }

  /** Records the changes `events` report (others are left out); those recorded before stay as they are. */
  async record(events: readonly CloudEvent[]): Promise<void> {
    const records = this.recordsOf(events);
    if (records.length === 0) return;
    await inChunks(this.db, records, (chunk) =>
      this.records.insertMany(chunk, { ordered: false }).catch((error: unknown) => {
        if (!isDuplicateKey(error)) throw error;
      }),
    );
  }

  /** The entries of one page of the history of a resource now at `generation`. */
  async entries(subject: string, page: HistoryPageRequest, generation: number) {
    const { records, before } = await this.page(subject, { ...page, lastGeneration: generation });
    return historyOf(records, before);
  }

  /**
   * One page of a resource's history: up to `limit` records after `after` in order, read a
   * span at a time up to the span of `lastGeneration` (the resource's current generation, a
   * bound that spares reading past its end), and the record before the page. A page reads what
   * it shows and at most two spans more, however long the history (docs/decisions/0040); only the records it returns are parsed.
   */
  async page(
    subject: string,
    { after, limit, lastGeneration }: { after: HistoryPosition | null; limit: number; lastGeneration: number },
  ): Promise<HistoryPageRead> {
    const firstSpan = spanNumberOf(after?.generation ?? 0);
    const lastSpan = spanNumberOf(lastGeneration);
    const read: HistoryDocument[] = [];
    const page: HistoryDocument[] = [];
    for (let span = firstSpan; span <= lastSpan && page.length < limit; span += 1) {
      const docs = await this.span(subject, span);
      read.push(...docs);
      page.push(...docs.filter((doc) => isAfter(doc, after)).slice(0, limit - page.length));
    }
    const first = page[0];
    if (!first) return { records: [], before: null };
    let before = read.findLast((doc) => doc.generation < first.generation);
    // The generation before the page's first may lie in the span before those read.
    if (!before && first.generation > 1 && spanNumberOf(first.generation - 1) < firstSpan)
      before = (await this.span(subject, spanNumberOf(first.generation - 1))).at(-1);
    return { records: page.map(toRecord), before: before ? toRecord(before) : null };
  }

  /** The records of one span of a subject's generations, in order. */
  private async span(subject: string, span: number): Promise<HistoryDocument[]> {
    return (await this.records.find({ span: spanKey(subject, span) }).toArray()).sort(byPosition);
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
          span: spanKey(event.subject, spanNumberOf(data.sequence)),
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
