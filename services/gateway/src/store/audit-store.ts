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
  type CollectionIndexes,
  type ListPage,
  type ListPosition,
  type Lists,
  type OutboxEntry,
  type RetainedCollection,
  type StoredChange,
  WriteFailed,
} from '@rs/store';
import type { mongo } from 'mongoose';
import type { AuditList } from '../domain/audit';

export const AUDIT = 'audit';

/** An entry as stored: the entry, flat where a read filters, and whether its request is still under way. */
interface AuditDocument {
  _id: string;
  generation: number;
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
  /** Its request is under way (or its gateway stopped during it): not yet in any list. */
  open: boolean;
  listed?: Record<string, number>;
}

/** An entry begun, before its answer. */
export type OpenEntry = Omit<AuditEntry, 'status'>;

/** An entry completed: its answer, the lists it goes in, its events. */
interface Completion {
  entry: AuditEntry;
  lists: readonly AuditList[];
  outbox: OutboxEntry[];
}

/**
 * The most entries written together: one `insertMany`, or one placement in the lists and that
 * many compare-and-sets (FerretDB's bound on a batch of updates, docs/decisions/0010).
 */
const MAX_BATCH = 50;

/** The queries of the audit log: by id, a block of a list, open entries, pending events, and the retention's purge. */
export const auditIndexes = (retentionDays: number): CollectionIndexes[] => [
  {
    collection: AUDIT,
    queries: [
      BY_ID,
      LIST_BLOCKS,
      {
        query: 'entries whose request is still open (the sweep of those a stopped gateway left, every minute)',
        mongodb: [{ key: { open: 1 }, name: 'by_open' }],
        ferretdb: ['open'],
      },
      PENDING_EVENTS,
      ...retentionQueries(retentionOf('at', retentionDays)),
    ],
  },
  listCounterIndexes(AUDIT),
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
 * The audit log in the gateway's database (docs/audit.md). Append-only: an entry is inserted
 * open when its request begins, and completed once, with its answer (or closed without one),
 * by a compare-and-set that also places it in its lists and stores its `audit.recorded`.
 * Nothing changes it after that, and nothing but the retention removes it.
 */
export class AuditStore {
  private readonly documents: OutboxCollection;
  private readonly lists: Lists;
  /**
   * Entries begun, and entries completed, while a write of their kind is under way are written
   * together by the next: the log adds to each audited change a share of a write, not a write.
   */
  private readonly openings = new GroupCommit<OpenEntry, void>((entries) => this.insertOpen(entries), MAX_BATCH);
  private readonly completions = new GroupCommit<Completion, boolean | WriteFailed>(
    (completions) => this.completeTogether(completions),
    MAX_BATCH,
  );

  constructor(
    private readonly db: mongo.Db,
    private readonly retentionDays: number,
  ) {
    this.documents = new OutboxCollection(db, AUDIT);
    this.lists = listsOfCollection(db, AUDIT);
  }

  async ensureIndexes(): Promise<void> {
    for (const declaration of auditIndexes(this.retentionDays)) await declareIndexes(this.db, declaration);
  }

  get retained(): RetainedCollection {
    return { db: this.db, collection: AUDIT, retention: retentionOf('at', this.retentionDays) };
  }

  /** Records an entry whose request begins now; resolves once it is stored. */
  open(entry: OpenEntry): Promise<void> {
    return this.openings.add(entry);
  }

  private async insertOpen(entries: readonly OpenEntry[]): Promise<void[]> {
    const docs = entries.map(({ auditId, at, actor, ...rest }) => ({
      doc: {
        _id: auditId,
        generation: 1,
        at: new Date(at),
        actor,
        actorId: actor.id,
        ...rest,
        status: null,
        open: true,
        createdAt: new Date(at),
        updatedAt: new Date(at),
      },
      outbox: [],
    }));
    await this.documents.insertMany(docs);
    return entries.map(() => undefined);
  }

  /**
   * Completes an open entry as `entry` says, in the lists `lists` names, with `outbox`; false
   * when it was completed already (by its request, or closed by the sweep).
   */
  async complete(entry: AuditEntry, lists: readonly AuditList[], outbox: OutboxEntry[]): Promise<boolean> {
    const stored = await this.completions.add({ entry, lists, outbox });
    if (stored instanceof WriteFailed) throw stored.error;
    return stored;
  }

  /** Completions placed in their lists together (a counter write per owner), then each stored. */
  private async completeTogether(completions: readonly Completion[]): Promise<Array<boolean | WriteFailed>> {
    const groups = completions.flatMap(({ lists }, index) => {
      const byOwner = new Map<string, string[]>();
      for (const { owner, name } of lists) byOwner.set(owner, [...(byOwner.get(owner) ?? []), name]);
      return [...byOwner].map(([owner, names]) => ({ index, owner, names }));
    });
    const placements = await this.lists.place(groups, ({ owner, names }) => ({ owner, names }));
    const changes = completions.map(({ entry, outbox }, index): StoredChange => {
      const own = placements.filter((_, group) => groups[group]!.index === index);
      return {
        id: entry.auditId,
        generation: 1,
        set: {
          generation: 2,
          subject: entry.subject,
          grantorId: entry.grantorId,
          status: entry.status,
          open: false,
          listed: Object.assign({}, ...own.map(({ listed }) => listed)) as Record<string, number>,
          listBlocks: own.flatMap(({ listBlocks }) => listBlocks),
          updatedAt: new Date(),
        },
        outbox,
      };
    });
    return this.documents.compareAndSetMany(changes);
  }

  /**
   * Open entries that began before `before`: left by a gateway that stopped during their
   * request. Entries are open only while their request runs, so few are ever open at once.
   */
  async openBefore(before: Date): Promise<AuditEntry[]> {
    const docs = await this.documents.collection
      .find<AuditDocument>({ open: true }, { projection: { outbox: 0, listed: 0, listBlocks: 0 } })
      .toArray();
    return docs.filter((doc) => doc.at < before).map(toEntry);
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
    const page = await this.lists.page<AuditDocument>(this.documents.collection, list, {
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
