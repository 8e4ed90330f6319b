import { Exchanges, parseEvent, RightEvents, RightEventTypes } from '@rs/contracts';
import type { Logger } from '@rs/logging';
import { consume, type AmqpClient } from '@rs/messaging';
import type { ExpiryStore } from '../store/expiry-store';

export const SCHEDULER_RIGHT_EVENTS_QUEUE = 'scheduler.rights-events';

/** Keeps the expiry projection current from `rights.events` (DESIGN.md 1 and 2). */
export async function followRightEvents(broker: AmqpClient, expiries: ExpiryStore, logger: Logger): Promise<void> {
  await consume(
    broker,
    {
      queue: SCHEDULER_RIGHT_EVENTS_QUEUE,
      bindings: [{ exchange: Exchanges.rightsEvents, routingKey: 'right.*' }],
      parse: (body) => parseEvent(RightEvents, body),
      handle: async (event) => {
        const { rightId, connectId, state, timeInterval, sequence } = event.data;
        if (event.type === RightEventTypes.removed || event.type === RightEventTypes.expired) {
          await expiries.forget(rightId);
          return;
        }
        const end = new Date(timeInterval.split('/')[1]!);
        await expiries.record({ rightId, connectId, end, state, sequence });
      },
    },
    logger.child({ component: 'right-events' }),
  );
}
