/** Fixed names of DESIGN.md section 2: public interface, never renamed. */
export const Exchanges = {
  rightsEvents: 'rights.events',
  subscriptionsEvents: 'subscriptions.events',
  catalogEvents: 'catalog.events',
  commands: 'commands',
} as const;

export const EXCHANGE_TYPES: Record<(typeof Exchanges)[keyof typeof Exchanges], 'topic' | 'direct'> = {
  'rights.events': 'topic',
  'subscriptions.events': 'topic',
  'catalog.events': 'topic',
  commands: 'direct',
};

export const CatalogEventTypes = {
  skuUpserted: 'sku.upserted',
  skuDeleted: 'sku.deleted',
} as const;
