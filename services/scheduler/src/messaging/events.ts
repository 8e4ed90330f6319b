import { systemClock, type Clock } from '@rs/time';
import {
  Exchanges,
  parseEvent,
  RightEvents,
  SubscriptionEvents,
  type CloudEvent,
  type EventSchemas,
} from '@rs/contracts';
import type { Logger } from '@rs/logging';
import { consume, type AmqpClient, type ConsumerSpec } from '@rs/messaging';
import { counter } from '@rs/telemetry/metrics';
import { dueAfterRightEvent, dueAfterSubscriptionEvent, type DueAfter } from '../domain/due';
import type { DueItem, DueStore } from '../store/due-store';

export const SCHEDULER_RIGHT_EVENTS_QUEUE = 'scheduler.rights-events';
export const SCHEDULER_SUBSCRIPTION_EVENTS_QUEUE = 'scheduler.subscriptions-events';

/** The events the scheduler follows: its own queue bound to the events of one kind. */
const followed = <S extends EventSchemas>(queue: string, exchange: string, routingKey: string, schemas: S) => ({
  queue,
  bindings: [{ exchange, routingKey }],
  parse: (body: unknown) => parseEvent(schemas, body),
});
const RIGHT_EVENTS = followed(SCHEDULER_RIGHT_EVENTS_QUEUE, Exchanges.rightsEvents, 'right.*', RightEvents);
const SUBSCRIPTION_EVENTS = followed(
  SCHEDULER_SUBSCRIPTION_EVENTS_QUEUE,
  Exchanges.subscriptionsEvents,
  'subscription.*',
  SubscriptionEvents,
);

const landedLate = counter(
  'scheduler_due_items_landed_late_total',
  'Due items whose recording finished after their second may have been swept (also recorded as soon)',
  ['collection'],
);

/** Events handled together: a bulk renewal's events are recorded in few `insertMany` calls. */
const BATCH = { max: 500, lingerMs: 25 };

/**
 * Keeps the scheduler's projections current from the services' events (docs/architecture.md):
 * each event that leaves something due records that due time, as of the event's sequence.
 * An event after which nothing is due (expired, removed, deleted) records nothing: the
 * version due before it finds nothing to do when its time comes.
 */
export async function followEvents(
  broker: AmqpClient,
  stores: { rightExpiries: DueStore; subscriptionSchedules: DueStore },
  logger: Logger,
  clock: Clock = systemClock,
): Promise<void> {
  const follow = async <Data extends { connectId: string; sequence: number }>(
    spec: Pick<ConsumerSpec<CloudEvent<Data>>, 'queue' | 'bindings' | 'parse'>,
    store: DueStore,
    dueOf: (event: CloudEvent<Data>) => DueAfter,
    component: string,
  ) => {
    const record = async (events: Array<CloudEvent<Data>>) => {
      const items: DueItem[] = [];
      for (const event of events) {
        const { id, dueAt, snapshot } = dueOf(event);
        if (dueAt)
          items.push({
            id,
            dueAt,
            sequence: event.data.sequence,
            connectId: event.data.connectId,
            ...(snapshot ? { snapshot } : {}),
          });
      }
      const late = await store.recordMany(items, clock);
      if (late > 0) {
        landedLate.inc({ collection: store.collection }, late);
        logger.warn({ collection: store.collection, items: late }, 'due items landed late: recorded as soon too');
      }
    };
    await consume(
      broker,
      {
        ...spec,
        prefetch: BATCH.max * 2,
        handle: (event) => record([event]),
        batch: { ...BATCH, handle: (messages) => record(messages.map(({ message }) => message)) },
      },
      logger.child({ component }),
    );
  };
  await follow(RIGHT_EVENTS, stores.rightExpiries, dueAfterRightEvent, 'right-events');
  await follow(SUBSCRIPTION_EVENTS, stores.subscriptionSchedules, dueAfterSubscriptionEvent, 'subscription-events');
}
