import { randomUUID } from 'node:crypto';
import type { AuditEntry } from '@rs/contracts';
import {
  BY_ID,
  declareIndexes,
  GroupCommit,
  LIST_BLOCKS,
  listCounterIndexes,
  listsOfCollection,
  OutboxCollection,
  PENDING_EVENTS,
  retentionOf,
  retentionQueries,
  LISTING_PROJECTION,
  type CollectionIndexes,
  type ListPage,
  type ListPosition,
  type Lists,
  type OutboxEntry,
  type RetainedCollection,
  WriteFailed,
} from '@rs/store';
import type { mongo } from 'mongoose';
import type { AuditList } from '../domain/audit';

export const AUDIT = 'audit';
/** Groups of entries begun together whose requests may still be under way. */
export const AUDIT_BEGUN = 'audit_begun';
/** The `audit.recorded` events of each group of entries completed together, until relayed. */
export const AUDIT_EVENTS = 'audit_events';

/** An entry as stored once complete: the entry, flat where a read filters, and its place in its lists. */
interface AuditDocument {
  _id: string;
  at: Date;
  actor: AuditEntry['actor'];
  actorId: string;
  action: string;
  subject: string;
  grantorId: string | null;
  reason: string | null;
  requestId: string | null;
  traceId: string | null;
  status: number | null;
  listed?: Record<string, number>;
}

/** An entry begun, before its answer. */
export type OpenEntry = Omit<AuditEntry, 'status'>;

/** Entries begun together, as stored until each is completed. */
interface BegunDocument {
  _id: string;
  at: Date;
  entries: OpenEntry[];
}

/** Entries a stopped gateway left begun. */
export interface BegunGroup {
  groupId: string;
  entries: OpenEntry[];
}

/** An entry completed: its answer, the lists it goes in, its events. */
export interface Completion {
  entry: AuditEntry;
  lists: readonly AuditList[];
  outbox: OutboxEntry[];
}

/**
 * The most entries written together: one `insertMany`, or one placement in the lists (FerretDB's
 * bound on a batch of updates, docs/decisions/0010, bounds the counters' compare-and-sets).
 */
const MAX_BATCH = 50;

/**
 * How long completions wait for more to be stored with them: no caller waits for a completion
 * (its request has its answer), and each store is a few statements whatever its size
 * (`npm run bench:staff-writes`, docs/performance.md). An entry is listed that much later.
 */
const COMPLETION_LINGER_MS = 50;

/** The queries of the audit log: by id, a block of a list, the retention's purge; its groups and events. */
export const auditIndexes = (retentionDays: number): CollectionIndexes[] => [
  {
    collection: AUDIT,
    queries: [BY_ID, LIST_BLOCKS, ...retentionQueries(retentionOf('at', retentionDays))],
  },
  listCounterIndexes(AUDIT),
  // Groups stay only while their requests run: the sweep reads them all, a few at most.
  { collection: AUDIT_BEGUN, queries: [BY_ID] },
  {
    collection: AUDIT_EVENTS,
    queries: [BY_ID, PENDING_EVENTS, ...retentionQueries(retentionOf('createdAt', retentionDays))],
  },
];

const toEntry = (doc: AuditDocument): AuditEntry => ({
  auditId: doc._id,
  at: doc.at.toISOString(),
  actor: doc.actor,
  action: doc.action,
  subject: doc.subject,
  grantorId: doc.grantorId,
  reason: doc.reason,
  requestId: doc.requestId,
  traceId: doc.traceId,
  status: doc.status,
});

/**
 * The audit log in the gateway's database (docs/audit.md, docs/decisions/0059). Entries begun
 * while a write is under way are stored together by the next, as one group document of
 * `audit_begun`, before their requests are forwarded. Completed (with their answers, or closed
 * without), entries are inserted into `audit` once each, placed in their lists, and their
 * `audit.recorded` events stored together in one document of `audit_events`, which the relay
 * publishes; a group is removed once all its entries are. Nothing changes an entry after its
 * insert, and nothing but the retention removes one: a second completion of an entry (its
 * request's and the sweep's) finds its id taken and stores nothing.
 */
export class AuditStore {
  private readonly entries: OutboxCollection;
  private readonly events: OutboxCollection;
  private readonly begun: mongo.Collection<BegunDocument>;
  private readonly lists: Lists;
  /** The group of each entry begun here and not yet completed. */
  private readonly groupOf = new Map<string, string>();
  /** Entries of each group begun here that are not yet completed. */
  private readonly remaining = new Map<string, number>();
  /**
   * Entries begun, and entries completed, while a write of their kind is under way are written
   * together by the next: the log adds to each audited change a share of a write, not a write.
   */
  private readonly openings = new GroupCommit<OpenEntry, void>((entries) => this.insertBegun(entries), MAX_BATCH);
  private readonly completions = new GroupCommit<Completion, boolean | WriteFailed>(
    (completions) => this.completeTogether(completions),
    MAX_BATCH,
    COMPLETION_LINGER_MS,
  );

  constructor(
    private readonly db: mongo.Db,
    private readonly retentionDays: number,
  ) {
    this.entries = new OutboxCollection(db, AUDIT);
    this.events = new OutboxCollection(db, AUDIT_EVENTS);
    this.begun = db.collection<BegunDocument>(AUDIT_BEGUN);
    this.lists = listsOfCollection(db, AUDIT);
  }

  /** @public (called by `runtime.migrated`) */
  async ensureIndexes(): Promise<void> {
    for (const declaration of auditIndexes(this.retentionDays)) await declareIndexes(this.db, declaration);
  }

  /** The entries, and the documents of their relayed events, each kept as long as the log keeps entries. */
  get retained(): RetainedCollection[] {
    return [
      { db: this.db, collection: AUDIT, retention: retentionOf('at', this.retentionDays) },
      { db: this.db, collection: AUDIT_EVENTS, retention: retentionOf('createdAt', this.retentionDays) },
    ];
  }

  /** Stores the completions handed in so far now (a stopping gateway's answered requests). */
  flush(): Promise<void> {
    return this.completions.flush();
  }

  /** Records an entry whose request begins now; resolves once it is stored. */
  open(entry: OpenEntry): Promise<void> {
    return this.openings.add(entry);
  }

  private async insertBegun(entries: readonly OpenEntry[]): Promise<void[]> {
    const groupId = entries[0]!.auditId;
    await this.begun.insertOne({ _id: groupId, at: new Date(entries[0]!.at), entries: [...entries] });
    for (const { auditId } of entries) this.groupOf.set(auditId, groupId);
    this.remaining.set(groupId, entries.length);
    return entries.map(() => undefined);
  }

  /**
   * Completes a begun entry as `entry` says, in the lists `lists` names, with `outbox`; false
   * when it was completed already (by its request, or closed by the sweep).
   */
  async complete(entry: AuditEntry, lists: readonly AuditList[], outbox: OutboxEntry[]): Promise<boolean> {
    const stored = await this.completions.add({ entry, lists, outbox });
    if (stored instanceof WriteFailed) throw stored.error;
    return stored;
  }

  /**
   * Completions placed in their lists together (a counter write per owner), stored with one
   * `insertMany`, their events with one insert; then the groups they complete are removed. A
   * stop before the events are stored leaves the group: the sweep publishes its entries' events
   * again (at least once).
   */
  private async completeTogether(completions: readonly Completion[]): Promise<Array<boolean | WriteFailed>> {
    try {
      const groups = completions.flatMap(({ lists }, index) => {
        const byOwner = new Map<string, string[]>();
        for (const { owner, name } of lists) byOwner.set(owner, [...(byOwner.get(owner) ?? []), name]);
        return [...byOwner].map(([owner, names]) => ({ index, owner, names }));
      });
      const placements = await this.lists.place(groups, ({ owner, names }) => ({ owner, names }));
      const now = new Date();
      const stored = await this.entries.insertEach(
        completions.map(({ entry: { auditId, at, actor, ...rest } }, index) => {
          const own = placements.filter((_, group) => groups[group]!.index === index);
          return {
            doc: {
              _id: auditId,
              at: new Date(at),
              actor,
              actorId: actor.id,
              ...rest,
              listed: Object.assign({}, ...own.map(({ listed }) => listed)) as Record<string, number>,
              listBlocks: own.flatMap(({ listBlocks }) => listBlocks),
              createdAt: now,
            },
            outbox: [],
          };
        }),
      );
      await this.publish(completions.flatMap(({ outbox }, index) => (stored[index] === true ? outbox : [])));
      await this.release(completions.filter((_, index) => !(stored[index] instanceof WriteFailed)));
      return stored;
    } catch (error) {
      // The groups of these entries are left to the sweep.
      for (const { entry } of completions) this.forget(entry.auditId);
      throw error;
    }
  }

  /** Stores events of completed entries, for the relay to publish. */
  async publish(outbox: OutboxEntry[]): Promise<void> {
    if (outbox.length === 0) return;
    await this.events.insertMany([
      { doc: { _id: randomUUID(), generation: 1, createdAt: new Date() } as { _id: string }, outbox },
    ]);
  }

  /** Counts these entries done in their groups; removes the groups this completes. */
  private async release(completions: readonly Completion[]): Promise<void> {
    const done: string[] = [];
    for (const { entry } of completions) {
      const groupId = this.groupOf.get(entry.auditId);
      if (groupId === undefined) continue;
      this.groupOf.delete(entry.auditId);
      const left = (this.remaining.get(groupId) ?? 1) - 1;
      if (left > 0) this.remaining.set(groupId, left);
      else {
        this.remaining.delete(groupId);
        done.push(groupId);
      }
    }
    if (done.length > 0) await this.removeGroups(done);
  }

  private forget(auditId: string): void {
    const groupId = this.groupOf.get(auditId);
    this.groupOf.delete(auditId);
    if (groupId !== undefined) this.remaining.delete(groupId);
  }

  /** Removes groups whose every entry is stored complete. */
  async removeGroups(groupIds: readonly string[]): Promise<void> {
    await this.begun.deleteMany({ _id: { $in: [...groupIds] } });
  }

  /**
   * Groups begun before `before` that are still stored: left by a gateway that stopped during
   * their requests, or whose completion failed. Groups stay only while their requests run, so
   * few are ever stored at once.
   */
  async begunBefore(before: Date): Promise<BegunGroup[]> {
    const docs = await this.begun.find({}).toArray();
    return docs.filter((doc) => doc.at < before).map((doc) => ({ groupId: doc._id, entries: doc.entries }));
  }

  /** The stored entries of these ids (those completed). */
  async find(auditIds: readonly string[]): Promise<AuditEntry[]> {
    const docs = await Promise.all(
      auditIds.map((id) =>
        this.entries.collection.findOne<AuditDocument>({ _id: id } as never, { projection: LISTING_PROJECTION }),
      ),
    );
    return docs.filter((doc) => doc !== null).map(toEntry);
  }

  /**
   * A page of list `list`, newest first, after `after`: the entries of `grantorId` (when
   * named) and of `actorId`, begun in [since, before). A list holds entries in the order they
   * were completed, within a request's longest time of the order they began: a page since an
   * instant stops reading once it meets an entry begun `margin` before it.
   */
  async page(
    list: AuditList,
    query: {
      grantorId: string | null;
      actorId?: string;
      since?: Date;
      before?: Date;
      margin: number;
      after: ListPosition | null;
      limit: number;
    },
  ): Promise<ListPage<AuditEntry>> {
    const { since, before } = query;
    const filter = {
      ...(query.grantorId === null ? {} : { grantorId: query.grantorId }),
      ...(query.actorId === undefined ? {} : { actorId: query.actorId }),
      ...(before === undefined ? {} : { at: { $lt: before } }),
    };
    const page = await this.lists.page<AuditDocument>(this.entries.collection, list, {
      filter,
      projection: { outbox: 0, listBlocks: 0 },
      after: query.after,
      limit: query.limit,
      ...(since === undefined
        ? {}
        : {
            keep: (doc: AuditDocument) => doc.at >= since,
            until: (doc: AuditDocument) => doc.at.getTime() < since.getTime() - query.margin,
          }),
    });
    return { items: page.items.map(toEntry), last: page.last };
  }
}
