import { systemClock, type Clock } from '@rs/time';
import {
  Exchanges,
  parseEvent,
  RightEvents,
  RightEventTypes,
  SubscriptionEvents,
  SubscriptionEventTypes,
  type CloudEvent,
  type RightEventData,
  type SubscriptionEventData,
} from '@rs/contracts';
import type { Logger } from '@rs/logging';
import { consume, type AmqpClient, type ConsumerSpec } from '@rs/messaging';
import { rightDueAt, subscriptionDueAt } from '../domain/due';
import type { DueItem, DueStore } from '../store/due-store';

export const SCHEDULER_RIGHT_EVENTS_QUEUE = 'scheduler.rights-events';
export const SCHEDULER_SUBSCRIPTION_EVENTS_QUEUE = 'scheduler.subscriptions-events';

/** Events handled together: a bulk renewal's events are recorded in few `insertMany` calls. */
const BATCH = { max: 500, lingerMs: 25 };

/**
 * Keeps the scheduler's projections current from the services' events (DESIGN.md 1 and 2):
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
    dueOf: (event: CloudEvent<Data>) => { id: string; dueAt: Date | null },
    component: string,
  ) => {
    const record = async (events: Array<CloudEvent<Data>>) => {
      const items: DueItem[] = [];
      for (const event of events) {
        const { id, dueAt } = dueOf(event);
        if (dueAt) items.push({ id, dueAt, sequence: event.data.sequence, connectId: event.data.connectId });
      }
      await store.recordMany(items, clock());
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
  await follow<RightEventData>(
    {
      queue: SCHEDULER_RIGHT_EVENTS_QUEUE,
      bindings: [{ exchange: Exchanges.rightsEvents, routingKey: 'right.*' }],
      parse: (body) => parseEvent(RightEvents, body),
    },
    stores.rightExpiries,
    (event) => ({
      id: event.data.rightId,
      dueAt: event.type === RightEventTypes.removed ? null : rightDueAt(event.data),
    }),
    'right-events',
  );
  await follow<SubscriptionEventData>(
    {
      queue: SCHEDULER_SUBSCRIPTION_EVENTS_QUEUE,
      bindings: [{ exchange: Exchanges.subscriptionsEvents, routingKey: 'subscription.*' }],
      parse: (body) => parseEvent(SubscriptionEvents, body),
    },
    stores.subscriptionSchedules,
    (event) => ({
      id: event.data.subscriptionId,
      dueAt: event.type === SubscriptionEventTypes.deleted ? null : subscriptionDueAt(event.data),
    }),
    'subscription-events',
  );
}
