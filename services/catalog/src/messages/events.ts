import { CatalogEventTypes, Exchanges, type SkuDeletedData, type SkuUpsertedData } from '@rs/contracts';
import { changeMessage, type OutboxEntry } from '@rs/store';
import { EVENT_SOURCE, representation, type SkuEntry } from '../domain/sku';

/**
 * The catalog's one place that turns a change into its event on `catalog.events`
 * (docs/architecture.md), stored with the write that makes the change (docs/decisions/0043).
 */
export function outboxOf(entry: SkuEntry): OutboxEntry[] {
  const change = { source: EVENT_SOURCE, subject: entry.sku, sequence: entry.generation, time: entry.updatedAt };
  return [
    entry.deleted
      ? changeMessage<SkuDeletedData>(Exchanges.catalogEvents, {
          ...change,
          type: CatalogEventTypes.skuDeleted,
          data: { sku: entry.sku, sequence: entry.generation },
        })
      : changeMessage<SkuUpsertedData>(Exchanges.catalogEvents, {
          ...change,
          type: CatalogEventTypes.skuUpserted,
          data: { ...representation(entry), sequence: entry.generation },
        }),
  ];
}
