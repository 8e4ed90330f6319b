import { clockLaneOf, commandBindings, Exchanges, routingKeyOf } from '@rs/contracts';
import type { Logger } from '@rs/logging';
import type { AmqpClient } from './amqp-client';
import { consume, type ConsumerSpec } from './consumer';

/**
 * Consumes a command queue with its clock lane (`<queue>.clock`, where the platform's publisher
 * routes the commands of what lives on a test clock: `routingKeyOf`), both with the same
 * handlers, the lane at a bounded share (docs/decisions/0054).
 */
export async function consumeCommands<T extends { type: string; data: unknown }>(
  client: AmqpClient,
  spec: Omit<ConsumerSpec<T>, 'queue' | 'bindings' | 'lane'> & { queue: string },
  logger: Logger,
): Promise<void> {
  await consume(
    client,
    {
      ...spec,
      bindings: commandBindings(spec.queue),
      lane: {
        // One that reached the queue itself (published before the lane existed) is moved there.
        holds: (command) => routingKeyOf(Exchanges.commands, command) !== command.type,
        bindings: commandBindings(clockLaneOf(spec.queue)),
      },
    },
    logger,
  );
}
