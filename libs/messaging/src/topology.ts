import { COMMAND_QUEUES, EXCHANGE_TYPES, Exchanges } from '@rs/contracts';
import type { Channel } from 'amqplib';

export const retryQueueOf = (queue: string) => `${queue}.retry`;
export const deadLetterQueueOf = (queue: string) => `${queue}.dlq`;

/**
 * A durable quorum queue shared by a service's replicas, with `<queue>.retry` (a TTL queue
 * that dead-letters back into it) and `<queue>.dlq` beside it (DESIGN.md 2).
 */
export async function declareDurableQueue(channel: Channel, queue: string): Promise<void> {
  await channel.assertQueue(queue, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
  await channel.assertQueue(deadLetterQueueOf(queue), { durable: true, arguments: { 'x-queue-type': 'quorum' } });
  await channel.assertQueue(retryQueueOf(queue), {
    durable: true,
    arguments: { 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': queue },
  });
}

/** The fixed topology of DESIGN.md 2: the four exchanges and the command queues. */
export async function declareTopology(channel: Channel): Promise<void> {
  for (const [name, type] of Object.entries(EXCHANGE_TYPES))
    await channel.assertExchange(name, type, { durable: true });
  for (const [queue, routingKeys] of Object.entries(COMMAND_QUEUES)) {
    await declareDurableQueue(channel, queue);
    for (const key of routingKeys) await channel.bindQueue(queue, Exchanges.commands, key);
  }
}
