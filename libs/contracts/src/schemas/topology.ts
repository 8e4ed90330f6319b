/** Fixed names of docs/architecture.md section 2: public interface, never renamed. */
export const Exchanges = {
  rightsEvents: 'rights.events',
  subscriptionsEvents: 'subscriptions.events',
  catalogEvents: 'catalog.events',
  clocksEvents: 'clocks.events',
  commands: 'commands',
} as const;

export const EXCHANGE_TYPES: Record<(typeof Exchanges)[keyof typeof Exchanges], 'topic' | 'direct'> = {
  'rights.events': 'topic',
  'subscriptions.events': 'topic',
  'catalog.events': 'topic',
  'clocks.events': 'topic',
  commands: 'direct',
};

export const CatalogEventTypes = {
  skuUpserted: 'sku.upserted',
  skuDeleted: 'sku.deleted',
} as const;

/**
 * The durable command queues and what they receive. Every service declares them when it
 * connects, so a command published before its consumer ever started is kept, not dropped.
 */
export const COMMAND_QUEUES: Record<string, string[]> = {
  'rights.commands': ['rights.issue', 'rights.expire', 'rights.cascade', 'rights.settle'],
  'subscriptions.commands': ['subscriptions.renew'],
  'scheduler.commands': ['scheduler.hold'],
};

/** The bindings of a command queue: each of its command types on the `commands` exchange. */
export const commandBindings = (queue: string) =>
  (COMMAND_QUEUES[queue] ?? []).map((routingKey) => ({ exchange: Exchanges.commands, routingKey }));
