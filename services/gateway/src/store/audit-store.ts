import type { AuditEntry } from '@rs/contracts';
import {
  BY_ID,
  declareIndexes,
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

  /** Records an entry whose request begins now. */
  async open(entry: OpenEntry): Promise<void> {
    const { auditId, at, actor, ...rest } = entry;
    const doc = {
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
    };
    await this.documents.insert(doc, []);
  }

  /**
   * Completes an open entry as `entry` says, in the lists `lists` names, with `outbox`; false
   * when it was completed already (by its request, or closed by the sweep).
   */
  async complete(entry: AuditEntry, lists: readonly AuditList[], outbox: OutboxEntry[]): Promise<boolean> {
    const byOwner = new Map<string, string[]>();
    for (const { owner, name } of lists) byOwner.set(owner, [...(byOwner.get(owner) ?? []), name]);
    // One placement per owner (each one counter write, shared with the entries completed beside it).
    const placements = await this.lists.place([...byOwner], ([owner, names]) => ({ owner, names }));
    const placed = {
      listed: Object.assign({}, ...placements.map(({ listed }) => listed)) as Record<string, number>,
      listBlocks: placements.flatMap(({ listBlocks }) => listBlocks),
    };
    return this.documents.compareAndSet({
      id: entry.auditId,
      generation: 1,
      set: {
        generation: 2,
        subject: entry.subject,
        grantorId: entry.grantorId,
        status: entry.status,
        open: false,
        listed: placed.listed,
        listBlocks: placed.listBlocks,
        updatedAt: new Date(),
      },
      outbox,
    });
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
