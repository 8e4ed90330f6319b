import { Exchanges } from '@rs/contracts';
import {
  OUTBOX_INDEX,
  OUTBOX_INDEX_OPTIONS,
  outboxEntry,
  outboxDocumentFields,
  OutboxStore,
  RACE_LOST,
  untilStored,
} from '@rs/store';
import { Schema, type Connection } from 'mongoose';
import type { SkuUpsertBody } from '@rs/contracts';
import { deleted, eventFor, isUnchanged, upserted, type SkuEntry } from '../domain/sku';

interface SkuDocument {
  _id: string;
  name: string | null;
  serviceProviderId: string | null;
  announceOnUsage: boolean;
  generation: number;
  createdAt: Date;
  updatedAt: Date;
  deleted: boolean;
}

const skuSchema = new Schema<SkuDocument>(
  {
    name: { type: String, default: null },
    serviceProviderId: { type: String, default: null },
    announceOnUsage: { type: Boolean, default: false },
    deleted: { type: Boolean, default: false },
    ...outboxDocumentFields,
  },
  { collection: 'skus', versionKey: false, minimize: false },
);
skuSchema.index(OUTBOX_INDEX, OUTBOX_INDEX_OPTIONS);

const toEntry = (doc: SkuDocument): SkuEntry => ({
  sku: doc._id,
  name: doc.name ?? null,
  serviceProviderId: doc.serviceProviderId ?? null,
  announceOnUsage: doc.announceOnUsage ?? false,
  generation: doc.generation,
  createdAt: doc.createdAt,
  updatedAt: doc.updatedAt,
  deleted: doc.deleted ?? false,
});

const toFields = (entry: SkuEntry) => ({
  name: entry.name,
  serviceProviderId: entry.serviceProviderId,
  announceOnUsage: entry.announceOnUsage,
  generation: entry.generation,
  createdAt: entry.createdAt,
  updatedAt: entry.updatedAt,
  deleted: entry.deleted,
});

export type WriteResult =
  | { outcome: 'created' | 'updated' | 'unchanged'; entry: SkuEntry }
  | { outcome: 'not-found' }
  | { outcome: 'precondition-failed'; entry: SkuEntry | null };

const PROJECTION = { outbox: 0 } as const;
const LIVE = { deleted: { $ne: true } };

/**
 * The catalog's own database. Every change is a compare-and-set on `generation` that
 * stores the new state and its event together (outbox), so a change is never stored
 * without its event, nor an event published for a change that was not stored.
 */
export class SkuStore extends OutboxStore<SkuDocument, SkuEntry> {
  constructor(db: Connection) {
    // A PUT brings a deleted entry back: writes may change tombstones.
    super(db, 'Sku', skuSchema, { live: LIVE, hidden: PROJECTION, toEntity: toEntry, writesRevive: true });
  }

  find(sku: string): Promise<SkuEntry | null> {
    return this.findLive({ _id: sku });
  }

  /** Entries in name order after `after`, at most `limit`. */
  async list(limit: number, after: string | undefined): Promise<SkuEntry[]> {
    const filter = after === undefined ? { deleted: { $ne: true } } : { deleted: { $ne: true }, _id: { $gt: after } };
    const docs = await this.model.find(filter, PROJECTION).sort({ _id: 1 }).limit(limit).lean<SkuDocument[]>();
    return docs.map(toEntry);
  }

  /** PUT: creates or replaces the entry; `expectedGeneration` is the If-Match value. */
  upsert(sku: string, body: SkuUpsertBody, expectedGeneration?: number, now = () => new Date()): Promise<WriteResult> {
    return untilStored(`SKU ${sku}`, async () => {
      const stored = await this.model.findOne({ _id: sku }, PROJECTION).lean<SkuDocument>();
      const current = stored ? toEntry(stored) : null;
      const visible = current && !current.deleted ? current : null;
      if (expectedGeneration !== undefined && visible?.generation !== expectedGeneration) {
        return { outcome: 'precondition-failed', entry: visible };
      }
      if (visible && isUnchanged(visible, body)) return { outcome: 'unchanged', entry: visible };
      const next = upserted(current, sku, body, now());
      if (!(await this.write(current, next))) return RACE_LOST;
      return { outcome: visible ? 'updated' : 'created', entry: next };
    });
  }

  remove(sku: string, expectedGeneration?: number, now = () => new Date()): Promise<WriteResult> {
    return untilStored(`SKU ${sku}`, async () => {
      const current = await this.find(sku);
      if (!current) return { outcome: 'not-found' };
      if (expectedGeneration !== undefined && current.generation !== expectedGeneration) {
        return { outcome: 'precondition-failed', entry: current };
      }
      const next = deleted(current, now());
      return (await this.write(current, next)) ? { outcome: 'updated', entry: next } : RACE_LOST;
    });
  }

  /** Compare-and-set: writes `next` and its event only if nobody changed the entry since `current` was read. */
  private write(current: SkuEntry | null, next: SkuEntry): Promise<boolean> {
    const outbox = [outboxEntry(Exchanges.catalogEvents, eventFor(next))];
    if (!current) return this.documents.insert({ _id: next.sku, ...toFields(next) }, outbox);
    return this.documents.compareAndSet({ id: next.sku, generation: current.generation, set: toFields(next), outbox });
  }
}
