import {
  afterId,
  BY_ID,
  PENDING_EVENTS,
  type CollectionIndexes,
  outboxDocumentFields,
  OutboxStore,
  type EntityUpdate,
  documentSchema,
} from '@rs/store';
import { type Connection } from 'mongoose';
import type { SkuEntry } from '../domain/sku';

interface SkuDocument extends Omit<SkuEntry, 'sku'> {
  _id: string;
}

const skuSchema = documentSchema<SkuDocument>('skus', {
  name: 'string?',
  serviceProviderId: 'string?',
  announceOnUsage: 'flag',
  grantorIds: { type: [String], default: undefined },
  deleted: 'flag',
  ...outboxDocumentFields,
});

/** The catalog's queries: by SKU, and its pending events (docs/operations.md). */
export const SKU_INDEXES: CollectionIndexes = { collection: 'skus', queries: [BY_ID, PENDING_EVENTS] };

const toEntry = (doc: SkuDocument): SkuEntry => ({
  sku: doc._id,
  name: doc.name,
  serviceProviderId: doc.serviceProviderId,
  announceOnUsage: doc.announceOnUsage,
  grantorIds: doc.grantorIds,
  generation: doc.generation,
  createdAt: doc.createdAt,
  updatedAt: doc.updatedAt,
  deleted: doc.deleted,
});

const toFields = (entry: SkuEntry) => ({
  name: entry.name,
  serviceProviderId: entry.serviceProviderId,
  announceOnUsage: entry.announceOnUsage,
  grantorIds: entry.grantorIds,
  generation: entry.generation,
  createdAt: entry.createdAt,
  updatedAt: entry.updatedAt,
  deleted: entry.deleted,
});

/**
 * The catalog's own database. Every change is a compare-and-set on `generation` that
 * stores the new state and its event together (outbox), so a change is never stored
 * without its event, nor an event published for a change that was not stored. The use
 * cases (src/app/catalog.ts) decide what to write.
 */
export class SkuStore extends OutboxStore<SkuDocument, SkuEntry> {
  constructor(db: Connection) {
    // A PUT brings a deleted entry back: writes may change tombstones.
    super(db, 'Sku', skuSchema, {
      tombstone: 'deleted',
      toEntity: toEntry,
      writesRevive: true,
      indexes: SKU_INDEXES,
    });
  }

  find(sku: string): Promise<SkuEntry | null> {
    return this.findLive(sku);
  }

  /** Entries in name order after `after`, at most `limit`. */
  async list(limit: number, after: string | undefined): Promise<SkuEntry[]> {
    const filter = { ...this.liveCondition, ...afterId(after) };
    const docs = await this.model.find(filter, this.hiddenFields).sort({ _id: 1 }).limit(limit).lean<SkuDocument[]>();
    return docs.map(this.toEntity);
  }

  /** The entry as stored, a deletion's tombstone included (a PUT brings it back). */
  async findStored(sku: string): Promise<SkuEntry | null> {
    const stored = await this.model.findOne({ _id: sku }, this.hiddenFields).lean<SkuDocument>();
    return stored ? this.toEntity(stored) : null;
  }

  /**
   * Compare-and-set: stores `next` with its messages only if nobody changed the entry since
   * `current` was read (at generation 0: it was never stored); false when another writer won.
   */
  update({ current, next, outbox }: EntityUpdate<SkuEntry>): Promise<boolean> {
    if (current.generation === 0) return this.documents.insert({ _id: next.sku, ...toFields(next) }, outbox);
    return this.documents.compareAndSet({ id: next.sku, generation: current.generation, set: toFields(next), outbox });
  }
}
