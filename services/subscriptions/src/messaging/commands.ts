import { COMMAND_QUEUES, CommandTypes, Exchanges, itemsOf, parseEvent, SubscriptionsCommands } from '@rs/contracts';
import type { Logger } from '@rs/logging';
import { consume, type AmqpClient } from '@rs/messaging';
import type { SubscriptionUseCases } from '../subscriptions';

export const SUBSCRIPTIONS_COMMAND_QUEUE = 'subscriptions.commands';

/**
 * `subscriptions.renew` from the scheduler (DESIGN.md 2), a batch per message; idempotent,
 * dead-lettered when malformed. Few messages at once: each carries up to 500 subscriptions.
 */
export async function consumeSubscriptionCommands(
  broker: AmqpClient,
  subscriptions: SubscriptionUseCases,
  logger: Logger,
  onStored: () => void,
): Promise<void> {
  await consume(
    broker,
    {
      queue: SUBSCRIPTIONS_COMMAND_QUEUE,
      bindings: COMMAND_QUEUES[SUBSCRIPTIONS_COMMAND_QUEUE]!.map((routingKey) => ({
        exchange: Exchanges.commands,
        routingKey,
      })),
      prefetch: 4,
      parse: (body) => parseEvent(SubscriptionsCommands, body),
      handle: async (command) => {
        if (command.type === CommandTypes.subscriptionsRenew) {
          await subscriptions.renew(itemsOf(command.data), new Date(command.time));
        }
        onStored();
      },
    },
    logger.child({ component: 'commands' }),
  );
}
