import {
  Exchanges,
  parseEvent,
  RightEvents,
  RightEventTypes,
  SubscriptionEvents,
  SubscriptionEventTypes,
} from '@rs/contracts';
import type { Logger } from '@rs/logging';
import { consume, type AmqpClient } from '@rs/messaging';
import { rightDueAt, subscriptionDueAt, type DueFor } from '../schedules';
import type { DueStore } from '../store/due-store';

export const SCHEDULER_RIGHT_EVENTS_QUEUE = 'scheduler.rights-events';
export const SCHEDULER_SUBSCRIPTION_EVENTS_QUEUE = 'scheduler.subscriptions-events';

/** Keeps the scheduler's projections current from the services' events (DESIGN.md 1 and 2). */
export async function followEvents(
  broker: AmqpClient,
  stores: { rightExpiries: DueStore<DueFor>; subscriptionSchedules: DueStore<DueFor> },
  logger: Logger,
): Promise<void> {
  await consume(
    broker,
    {
      queue: SCHEDULER_RIGHT_EVENTS_QUEUE,
      bindings: [{ exchange: Exchanges.rightsEvents, routingKey: 'right.*' }],
      parse: (body) => parseEvent(RightEvents, body),
      handle: async (event) => {
        const { rightId, connectId, sequence } = event.data;
        if (event.type === RightEventTypes.removed || event.type === RightEventTypes.expired) {
          await stores.rightExpiries.forget(rightId);
          return;
        }
        await stores.rightExpiries.record({
          id: rightId,
          sequence,
          dueAt: rightDueAt(event.data),
          data: { connectId },
        });
      },
    },
    logger.child({ component: 'right-events' }),
  );
  await consume(
    broker,
    {
      queue: SCHEDULER_SUBSCRIPTION_EVENTS_QUEUE,
      bindings: [{ exchange: Exchanges.subscriptionsEvents, routingKey: 'subscription.*' }],
      parse: (body) => parseEvent(SubscriptionEvents, body),
      handle: async (event) => {
        const { subscriptionId, connectId, sequence } = event.data;
        if (event.type === SubscriptionEventTypes.deleted || event.type === SubscriptionEventTypes.expired) {
          await stores.subscriptionSchedules.forget(subscriptionId);
          return;
        }
        await stores.subscriptionSchedules.record({
          id: subscriptionId,
          sequence,
          dueAt: subscriptionDueAt(event.data),
          data: { connectId },
        });
      },
    },
    logger.child({ component: 'subscription-events' }),
  );
}
