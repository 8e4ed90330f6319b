import { CommandTypes, itemsOf, parseEvent, SubscriptionsCommands } from '@rs/contracts';
import type { Logger } from '@rs/logging';
import { consumeCommands, type AmqpClient } from '@rs/messaging';
import { recordAndPublish } from '@rs/outbox-relay';
import type { HistoryLog } from '@rs/store';
import type { Renewals } from '../app/renewals';
import { batchedIssues } from './issue-batches';
import { reportMissedRights } from './missed-rights';

export const SUBSCRIPTIONS_COMMAND_QUEUE = 'subscriptions.commands';

/**
 * `subscriptions.renew` from the scheduler (docs/architecture.md), a batch per message; idempotent,
 * dead-lettered when malformed. Few messages at once: each carries up to 500 subscriptions.
 * A delivery that may have been handled before (redelivered after a crash, or a retry)
 * publishes the last renewal's events and commands of its subscriptions again.
 */
export async function consumeSubscriptionCommands(options: {
  broker: AmqpClient;
  renewals: Renewals;
  /** Where renewals' changes are recorded as they are published. */
  history: HistoryLog;
  logger: Logger;
}): Promise<void> {
  const { broker, renewals, history, logger } = options;
  const log = logger.child({ component: 'commands' });
  // With its clock lane, a few at a time: a rehearsal's renewals never queue ahead of real time's.
  await consumeCommands(
    broker,
    {
      queue: SUBSCRIPTIONS_COMMAND_QUEUE,
      prefetch: 4,
      parse: (body) => parseEvent(SubscriptionsCommands, body),
      handle: async (command, delivery) => {
        if (command.type !== CommandTypes.subscriptionsRenew) return;
        const replay = delivery.redelivered || delivery.attempt > 1;
        const items = itemsOf(command.data);
        const renewed = await renewals.renew(items, new Date(command.time), replay);
        // The durable command is the outbox of its renewals: recorded and published, with confirms, before it is acked.
        await recordAndPublish(history, broker, batchedIssues(renewed.emitted));
        reportMissedRights(renewed.missed, log);
        // docs/api.md: a subscription that failed alone is dead-lettered alone.
        return renewed.failed.map(({ index, error }) => ({
          message: 0,
          data: items[index],
          id: items[index]!.subscriptionId,
          error,
        }));
      },
    },
    log,
  );
}
