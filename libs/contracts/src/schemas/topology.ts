/** Fixed names of docs/architecture.md section 2: public interface, never renamed. */
export const Exchanges = {
  rightsEvents: 'rights.events',
  subscriptionsEvents: 'subscriptions.events',
  catalogEvents: 'catalog.events',
  clocksEvents: 'clocks.events',
  /** The platform's own events: the audit log's entries (docs/audit.md). */
  platformEvents: 'platform.events',
  commands: 'commands',
} as const;

export const EXCHANGE_TYPES: Record<(typeof Exchanges)[keyof typeof Exchanges], 'topic' | 'direct'> = {
  'rights.events': 'topic',
  'subscriptions.events': 'topic',
  'catalog.events': 'topic',
  'clocks.events': 'topic',
  'platform.events': 'topic',
  commands: 'direct',
};

export const CatalogEventTypes = {
  skuUpserted: 'sku.upserted',
  skuDeleted: 'sku.deleted',
} as const;

/**
 * The lane of a command about what lives on a test clock (docs/decisions/0054): its routing key
 * is its type with this suffix, and it waits in a queue of its own, which its consumers take
 * from at a bounded share, so that a rehearsal never queues ahead of real time's work.
 */
export const CLOCK_LANE = '.clock';
export const clockLaneOf = (name: string) => `${name}${CLOCK_LANE}`;

/**
 * The durable command queues and what they receive. Every service declares them when it
 * connects, so a command published before its consumer ever started is kept, not dropped.
 */
export const COMMAND_QUEUES: Record<string, string[]> = {
  'rights.commands': ['rights.issue', 'rights.expire', 'rights.cascade', 'rights.settle'],
  'rights.commands.clock': ['rights.issue', 'rights.expire', 'rights.settle'].map(clockLaneOf),
  'subscriptions.commands': ['subscriptions.renew'],
  'subscriptions.commands.clock': [clockLaneOf('subscriptions.renew')],
  'scheduler.commands': ['scheduler.hold'],
};

/**
 * Whether a message is about what lives on a test clock: its data (an event's entity, a batch's
 * items, or the command itself) names one. A batch names one clock or none (docs/decisions/0048).
 */
export function namesAClock(data: unknown): boolean {
  const named = (value: unknown) => typeof (value as { clockId?: unknown } | null)?.clockId === 'string';
  const items = (data as { items?: unknown } | null)?.items;
  return named(data) || (Array.isArray(items) && items.some(named));
}

/** The routing key of a message on `exchange`: its type; a command of a clock's, in the clock lane. */
export function routingKeyOf(exchange: string, message: { type: string; data?: unknown }): string {
  const lane = exchange === Exchanges.commands && namesAClock(message.data);
  return lane && COMMAND_QUEUES[clockLaneOf(queueOfCommand(message.type))] ? clockLaneOf(message.type) : message.type;
}

const queueOfCommand = (type: string): string =>
  Object.entries(COMMAND_QUEUES).find(([, keys]) => keys.includes(type))?.[0] ?? '';

/** The bindings of a command queue: each of its command types on the `commands` exchange. */
export const commandBindings = (queue: string) =>
  (COMMAND_QUEUES[queue] ?? []).map((routingKey) => ({ exchange: Exchanges.commands, routingKey }));
