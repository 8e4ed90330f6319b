import {
  CatalogEventTypes,
  createCloudEvent,
  Exchanges,
  type CloudEvent,
  type SkuDeletedData,
  type SkuUpsertedData,
} from '@rs/contracts';
import { outboxEntry, type OutboxEntry } from '@rs/store';
import { EVENT_SOURCE, representation, type SkuEntry } from '../domain/sku';

/** The catalog's one place that turns a change into its event on `catalog.events` (docs/architecture.md). */
export function eventFor(entry: SkuEntry): CloudEvent<SkuUpsertedData | SkuDeletedData> {
  if (entry.deleted) {
    return createCloudEvent<SkuDeletedData>({
      source: EVENT_SOURCE,
      type: CatalogEventTypes.skuDeleted,
      subject: entry.sku,
      data: { sku: entry.sku, sequence: entry.generation },
      time: entry.updatedAt,
    });
  }
  return createCloudEvent<SkuUpsertedData>({
    source: EVENT_SOURCE,
    type: CatalogEventTypes.skuUpserted,
    subject: entry.sku,
    data: { ...representation(entry), sequence: entry.generation },
    time: entry.updatedAt,
  });
}

/** The outbox entry that publishes `entry`'s new state with the write that stores it. */
export const outboxOf = (entry: SkuEntry): OutboxEntry[] => [outboxEntry(Exchanges.catalogEvents, eventFor(entry))];
