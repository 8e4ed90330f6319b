import { randomUUID } from 'node:crypto';
import type { CloudEvent } from '@rs/contracts';
import type { Logger } from '@rs/logging';
import type { Collection, Document } from 'mongoose';
import client from 'prom-client';
import { Schema } from 'mongoose';
import type { AmqpClient } from './amqp-client';
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
  relayLeaseUntil: { type: Date },
  relayLeaseOwner: { type: String },
};

const pendingGauge = new client.Gauge({
  name: 'outbox_pending_documents',
  help: 'Documents with events not yet published, by collection',
  labelNames: ['collection'] as const,
  async collect() {
    for (const relay of relays) this.set({ collection: relay.collectionName }, await relay.backlog().catch(() => -1));
  },
});
const relays = new Set<OutboxRelay>();

export interface OutboxRelayOptions {
  collection: Collection;
  client: AmqpClient;
  logger: Logger;
  /** Backstop polling; writes call `kick()` so events normally go out at once. */
  pollIntervalMs?: number;
  /** How long a relay owns a document it publishes; another replica takes over after that. */
  leaseMs?: number;
}

type OutboxDocument = Document & { _id: unknown; outbox: OutboxEntry[] };

/**
 * Publishes pending events with confirms, then removes each from its document, in order.
 * A crash between the confirm and the removal republishes the event: delivery is at
 * least once and consumers de-duplicate by event id. Several replicas may run: a short
 * lease on each document keeps them from publishing the same events at the same time.
 *
 * Removal is a `$pop` guarded by the entry's id (FerretDB 1.x has no `$pull` by condition;
 * see docs/decisions/0003-outbox-embedded-in-documents.md).
 */
export class OutboxRelay {
  private readonly owner = randomUUID();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = true;
  private readonly log: Logger;

  constructor(private readonly options: OutboxRelayOptions) {
    this.log = options.logger.child({ component: 'outbox', collection: options.collection.collectionName });
    options.client.on('connected', () => this.kick());
  }

  get collectionName(): string {
    return this.options.collection.collectionName;
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
    return this.options.collection.countDocuments({ 'outbox.0.id': { $exists: true } });
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
      for (let document = await this.claim(); document && !this.stopped; document = await this.claim()) {
        const published = await this.publishAll(document);
        await this.release(document);
        if (!published) return; // broker trouble: wait for the next kick or poll
      }
    } catch (error) {
      this.log.warn({ err: error }, 'outbox relay run failed; will retry');
    }
  }

  private async claim(): Promise<OutboxDocument | null> {
    const now = new Date();
    return (await this.options.collection.findOneAndUpdate(
      {
        'outbox.0.id': { $exists: true },
        $or: [{ relayLeaseUntil: { $exists: false } }, { relayLeaseUntil: { $lt: now } }],
      },
      { $set: { relayLeaseUntil: new Date(now.getTime() + (this.options.leaseMs ?? 15_000)), relayLeaseOwner: this.owner } },
      { returnDocument: 'after' },
    )) as OutboxDocument | null;
  }

  /** Publishes the document's entries in order; false when one could not be published. */
  private async publishAll(document: OutboxDocument): Promise<boolean> {
    for (const entry of document.outbox) {
      try {
        await this.options.client.publishEvent(entry.exchange, entry.event, entry.trace);
      } catch (error) {
        this.log.warn({ err: error, event_id: entry.id }, 'cannot publish event yet');
        return false;
      }
      await this.options.collection.updateOne({ _id: document._id, 'outbox.0.id': entry.id } as never, { $pop: { outbox: -1 } });
    }
    return true;
  }

  private async release(document: OutboxDocument): Promise<void> {
    await this.options.collection.updateOne({ _id: document._id, relayLeaseOwner: this.owner } as never, {
      $unset: { relayLeaseUntil: '', relayLeaseOwner: '' },
    });
  }
}

/** The index the relay's query uses, to add to each model that carries an outbox. */
export const OUTBOX_INDEX = { 'outbox.0.id': 1 } as const;
export const OUTBOX_INDEX_OPTIONS = { sparse: true, name: 'outbox_pending' } as const;

void pendingGauge;
