import { randomUUID } from 'node:crypto';
import type { CloudEvent } from '@rs/contracts';
import type { Logger } from '@rs/logging';
import type { mongo } from 'mongoose';
import client from 'prom-client';
import { Schema } from 'mongoose';
import type { AmqpClient } from './amqp-client';
import { documentLock } from './document-lock';
import { currentTraceCarrier, type TraceCarrier } from './trace-context';

/**
 * An event waiting to be published, stored inside the document whose change it reports,
 * in the same single-document write (DESIGN.md 2): no dual write, no transaction needed,
 * so it works on a standalone MongoDB and on FerretDB.
 */
export interface OutboxEntry {
  id: string;
  exchange: string;
  event: CloudEvent;
  /** Trace context of the request that made the change, so its trace continues through the broker. */
  trace: TraceCarrier;
  createdAt: Date;
}

export function outboxEntry(exchange: string, event: CloudEvent): OutboxEntry {
  return { id: event.id, exchange, event, trace: currentTraceCarrier(), createdAt: new Date() };
}

/** Fields a document needs to carry an outbox. */
export const outboxFields = {
  /**
   * True while `outbox` may hold entries: the relay finds pending documents by this equality,
   * which every store can answer from an index (FerretDB cannot push `$exists` on an array
   * element down to its backend and would read every document; docs/decisions/0010).
   */
  outboxPending: { type: Boolean, default: false },
  outbox: {
    type: [
      new Schema(
        {
          id: { type: String, required: true },
          exchange: { type: String, required: true },
          event: { type: Schema.Types.Mixed, required: true },
          trace: { type: Schema.Types.Mixed, default: {} },
          createdAt: { type: Date, required: true },
        },
        { _id: false, minimize: false },
      ),
    ],
    default: [],
  },
};

// Registered on the process registry; its value is computed at scrape time.
new client.Gauge({
  name: 'outbox_pending_documents',
  help: 'Documents with events not yet published, by collection',
  labelNames: ['collection'] as const,
  async collect() {
    for (const relay of relays) this.set({ collection: relay.collectionName }, await relay.backlog().catch(() => -1));
  },
});
const relays = new Set<OutboxRelay>();

export interface OutboxRelayOptions {
  /** The service's database (mongoose's `connection.db`). */
  db: mongo.Db;
  /** The collection whose documents carry an outbox. */
  collection: string;
  client: AmqpClient;
  logger: Logger;
  /** Backstop polling; writes call `kick()` so events normally go out at once. */
  pollIntervalMs?: number;
  /** How long a relay holds the collection's relay lease without renewing it. */
  leaseMs?: number;
  /** Documents read and published per round. */
  batchSize?: number;
}

type OutboxDocument = { _id: unknown; outbox: OutboxEntry[] };

const PENDING = { outboxPending: true };
const LEASES = 'outbox_leases';

/** The outbox fields of a new document carrying `entries`. */
export function newOutbox(entries: OutboxEntry[]): { outbox: OutboxEntry[]; outboxPending: boolean } {
  return { outbox: entries, outboxPending: entries.length > 0 };
}

/** An update that sets `fields` and appends `entries` to the document's outbox, in one write. */
export function setWithOutbox(fields: object, entries: OutboxEntry[]): object {
  if (entries.length === 0) return { $set: fields };
  return { $set: { ...fields, outboxPending: true }, $push: { outbox: { $each: entries } } };
}

/**
 * Brings documents written before `outboxPending` existed under the relay's query, and drops
 * the index that query used before. Part of each outbox-carrying service's migration.
 */
export async function migrateOutbox(collection: mongo.Collection): Promise<void> {
  await collection.updateMany({ 'outbox.0.id': { $exists: true }, outboxPending: { $ne: true } }, {
    $set: { outboxPending: true },
  } as never);
  await collection.dropIndex('outbox_pending').catch(() => undefined); // absent: nothing to drop
}

/**
 * Publishes pending events with confirms, then removes each from its document, in order.
 * A crash between the confirm and the removal republishes the event: delivery is at
 * least once and consumers de-duplicate by event id.
 *
 * Several replicas may run: a lease per collection (in `outbox_leases`) lets one relay
 * publish at a time, and another take over when it stops renewing. Removal is a `$pop`
 * guarded by the entry's id, so it is safe even if two relays ever overlap. (One lease per
 * collection rather than per document: FerretDB 1.x pays a write per leased document, and
 * has no `$pull` by condition; see docs/decisions/0003-outbox-embedded-in-documents.md.)
 */
export class OutboxRelay {
  private readonly owner = randomUUID();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = true;
  private readonly log: Logger;
  private readonly documents: mongo.Collection;
  private readonly leases: mongo.Collection<{ _id: string; owner: string; until: Date }>;

  constructor(private readonly options: OutboxRelayOptions) {
    this.log = options.logger.child({ component: 'outbox', collection: options.collection });
    this.documents = options.db.collection(options.collection);
    this.leases = options.db.collection(LEASES);
    options.client.on('connected', () => this.kick());
  }

  get collectionName(): string {
    return this.options.collection;
  }

  start(): void {
    this.stopped = false;
    relays.add(this);
    this.schedule();
    this.kick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    relays.delete(this);
    clearTimeout(this.timer);
    await this.running;
    await this.leases
      .updateOne({ _id: this.leaseId, owner: this.owner }, { $set: { until: new Date(0) } })
      .catch(() => undefined);
  }

  /** Publish now (coalesced with a run already under way). */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.drain().finally(() => {
      this.running = undefined;
      if (this.again) {
        this.again = false;
        this.kick();
      }
    });
  }

  backlog(): Promise<number> {
    return this.documents.countDocuments(PENDING);
  }

  private get leaseId(): string {
    return `outbox:${this.options.collection}`;
  }

  private schedule(): void {
    this.timer = setTimeout(() => {
      this.kick();
      if (!this.stopped) this.schedule();
    }, this.options.pollIntervalMs ?? 500);
    this.timer.unref();
  }

  private async drain(): Promise<void> {
    if (!this.options.client.connected) return;
    try {
      while (!this.stopped && (await this.holdLease())) {
        // Unsorted: events of different documents have no order to keep (each document's
        // are in order in its array), and a sort would make FerretDB read the whole backlog
        // each round instead of stopping after a batch.
        const batch = (await this.documents
          .find(PENDING, { projection: { _id: 1, outbox: 1 } })
          .limit(this.options.batchSize ?? 100)
          .toArray()) as unknown as OutboxDocument[];
        if (batch.length === 0) return;
        if (!(await this.publishBatch(batch))) return; // broker trouble: wait for the next kick or poll
      }
    } catch (error) {
      this.log.warn({ err: error }, 'outbox relay run failed; will retry');
    }
  }

  /** Takes or renews this collection's lease; false while another relay holds it. */
  private async holdLease(): Promise<boolean> {
    const now = new Date();
    try {
      await this.leases.updateOne(
        { _id: this.leaseId, $or: [{ owner: this.owner }, { until: { $lt: now } }] },
        { $set: { owner: this.owner, until: new Date(now.getTime() + (this.options.leaseMs ?? 10_000)) } },
        { upsert: true },
      );
      return true;
    } catch (error) {
      if ((error as { code?: number }).code === 11000) return false; // held by another relay
      throw error;
    }
  }

  /**
   * Publishes every entry of the batch, pipelined on the confirm channel (entries of one
   * document in order), then removes each confirmed entry from its document, and clears
   * `outboxPending` of a document whose outbox is then empty (unless a write appended more
   * meanwhile). False when some entry could not be published; it stays pending.
   */
  private async publishBatch(batch: OutboxDocument[]): Promise<boolean> {
    const results = await Promise.all(
      batch.map(async (document) => {
        const confirmed: string[] = [];
        for (const entry of document.outbox) {
          try {
            await this.options.client.publishEvent(entry.exchange, entry.event, entry.trace);
            confirmed.push(entry.id);
          } catch (error) {
            this.log.warn({ err: error, event_id: entry.id }, 'cannot publish event yet');
            break;
          }
        }
        return { document, confirmed };
      }),
    );
    // One by one: FerretDB 1.x slows down sharply on large bulk or parallel writes.
    for (const { document, confirmed } of results) {
      await documentLock.run(this.options.collection, document._id, async () => {
        for (const id of confirmed) {
          await this.documents.updateOne({ _id: document._id, 'outbox.0.id': id } as never, { $pop: { outbox: -1 } });
        }
        if (confirmed.length === document.outbox.length) {
          await this.documents.updateOne({ _id: document._id, outbox: { $size: 0 } } as never, {
            $set: { outboxPending: false },
          });
        }
      });
    }
    return results.every(({ document, confirmed }) => confirmed.length === document.outbox.length);
  }
}

/** The index the relay's query uses, to add to each model that carries an outbox. */
export const OUTBOX_INDEX = { outboxPending: 1 } as const;
export const OUTBOX_INDEX_OPTIONS = { name: 'outbox_pending_flag' } as const;
