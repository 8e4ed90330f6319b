import { COMMAND_QUEUES, EXCHANGE_TYPES, Exchanges } from '@rs/contracts';
import type { Logger } from '@rs/logging';
import type { Channel, ChannelModel } from 'amqplib';

/** Delay before attempt n+1 is `DEFAULT_RETRY_DELAYS_MS[n-1]` (the last one repeats). */
export const DEFAULT_RETRY_DELAYS_MS: readonly number[] = [500, 2_000, 10_000, 30_000];
/**
 * Deliveries of one message a consumed queue allows before the broker gives up on it and
 * dead-letters it (docs/operations.md). Failures the consumer sees are retried through the retry
 * queues and counted there; what this limit counts is a consumer that dies, or loses its
 * channel, while holding the message: one that takes its process down every time ends in the
 * `.dlq` instead of cycling forever (or, with RabbitMQ 4's default of 20 and no dead-letter
 * route, being dropped).
 */
export const DELIVERY_LIMIT = 20;

export const deadLetterQueueOf = (queue: string) => `${queue}.dlq`;
/** One retry queue per delay, so a short retry never waits behind a long one (docs/operations.md). */
export const retryQueueOf = (queue: string, delayMs: number) => `${queue}.retry.${delayMs}ms`;

const QUORUM = { 'x-queue-type': 'quorum' };
/**
 * Dead-letters into `target` through the default exchange, at least once: the broker keeps a
 * message until the target has confirmed it (quorum queues; needs `reject-publish` overflow,
 * which without a length limit never refuses a publish).
 */
const deadLettersInto = (target: string) => ({
  'x-dead-letter-exchange': '',
  'x-dead-letter-routing-key': target,
  'x-dead-letter-strategy': 'at-least-once',
  'x-overflow': 'reject-publish',
});

/** The queues of one consumed queue and the arguments each is declared with (docs/architecture.md). */
export function durableQueues(
  queue: string,
  retryDelaysMs: readonly number[] = DEFAULT_RETRY_DELAYS_MS,
): Array<{ name: string; arguments: Record<string, unknown> }> {
  return [
    {
      name: queue,
      arguments: { ...QUORUM, 'x-delivery-limit': DELIVERY_LIMIT, ...deadLettersInto(deadLetterQueueOf(queue)) },
    },
    { name: deadLetterQueueOf(queue), arguments: QUORUM },
    ...[...new Set(retryDelaysMs)].map((delay) => ({
      name: retryQueueOf(queue, delay),
      // A queue-wide TTL: every message of the queue waits as long, so none waits behind another.
      arguments: { ...QUORUM, 'x-message-ttl': delay, ...deadLettersInto(queue) },
    })),
  ];
}

/**
 * Declares a consumed queue with its `.dlq` and retry queues (see `durableQueues`) on a
 * channel of its own. A queue that already exists with other arguments (declared by a release
 * before docs/operations.md) is left as it is, with an error logged naming the upgrade step in
 * docs/operations.md: a declaration with other arguments would close the channel and stop
 * the service from connecting at all.
 */
export async function declareDurableQueue(
  connection: ChannelModel,
  queue: string,
  logger: Logger,
  retryDelaysMs?: readonly number[],
): Promise<void> {
  let channel = await scratchChannel(connection);
  try {
    for (const declared of durableQueues(queue, retryDelaysMs)) {
      try {
        await channel.assertQueue(declared.name, { durable: true, arguments: declared.arguments });
      } catch (error) {
        if ((error as { code?: number }).code !== PRECONDITION_FAILED) throw error;
        logger.error(
          { queue: declared.name, err: error },
          'queue exists with other arguments (declared before delivery limits); see "Upgrading queues" in docs/operations.md',
        );
        channel = await scratchChannel(connection);
        await channel.checkQueue(declared.name);
      }
    }
  } finally {
    await channel.close().catch(() => undefined);
  }
}

const PRECONDITION_FAILED = 406;

async function scratchChannel(connection: ChannelModel): Promise<Channel> {
  const channel = await connection.createChannel();
  channel.on('error', () => undefined); // a refused declaration closes it; reported where it is caught
  return channel;
}

/** The fixed topology of docs/architecture.md: the four exchanges and the command queues. */
export async function declareTopology(connection: ChannelModel, channel: Channel, logger: Logger): Promise<void> {
  for (const [name, type] of Object.entries(EXCHANGE_TYPES))
    await channel.assertExchange(name, type, { durable: true });
  for (const [queue, routingKeys] of Object.entries(COMMAND_QUEUES)) {
    await declareDurableQueue(connection, queue, logger);
    for (const key of routingKeys) await channel.bindQueue(queue, Exchanges.commands, key);
  }
}
