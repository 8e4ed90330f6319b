import { ClockEvents, ClockEventTypes, Exchanges, parseEvent } from '@rs/contracts';
import type { Logger } from '@rs/logging';
import type { AmqpClient } from './amqp-client';
import { consume } from './consumer';

/**
 * What lives on a test clock goes with it (docs/decisions/0048): a service that keeps such things
 * follows `clock.deleted` on a queue of its own and removes them (`removeClock`, idempotent: a
 * redelivered deletion finds them gone).
 */
export async function followClockDeletions(
  broker: AmqpClient,
  service: string,
  removeClock: (clockId: string) => Promise<number>,
  logger: Logger,
): Promise<void> {
  const log = logger.child({ component: 'clock-deletions' });
  await consume(
    broker,
    {
      queue: `${service}.clock-deletions`,
      bindings: [{ exchange: Exchanges.clocksEvents, routingKey: ClockEventTypes.deleted }],
      parse: (body) => parseEvent(ClockEvents, body),
      // A few clocks at once: one grantor's large deletion does not hold another's back.
      prefetch: 4,
      simulated: true,
      handle: async (event) => {
        const removed = await removeClock(event.data.clockId);
        log.info({ clock_id: event.data.clockId, removed }, 'removed what lived on a deleted test clock');
      },
    },
    log,
  );
}
