import { clockLaneOf, commandBindings, COMMAND_QUEUES } from '@rs/contracts';
import type { Logger } from '@rs/logging';
import type { AmqpClient } from './amqp-client';
import { consume, type ConsumerSpec } from './consumer';

/**
 * Messages of a command queue's clock lane one process handles at once, and in one batch: a
 * rehearsal takes at most this share of a consumer, whatever waits in its lane, and real
 * time's commands never queue behind it (docs/decisions/0054).
 */
export const CLOCK_LANE_PREFETCH = 4;
const CLOCK_LANE_BATCH = 2;

/**
 * Consumes a command queue and, beside it, its clock lane (`<queue>.clock`, where the commands of
 * what lives on a test clock are routed: `routingKeyOf`) with the same handler, the lane a few
 * messages at a time.
 */
export async function consumeCommands<T>(
  client: AmqpClient,
  spec: Omit<ConsumerSpec<T>, 'queue' | 'bindings'> & { queue: string },
  logger: Logger,
): Promise<void> {
  await consume(client, { ...spec, bindings: commandBindings(spec.queue) }, logger);
  const lane = clockLaneOf(spec.queue);
  if (!COMMAND_QUEUES[lane]) return;
  await consume(
    client,
    {
      ...spec,
      queue: lane,
      bindings: commandBindings(lane),
      prefetch: CLOCK_LANE_PREFETCH,
      ...(spec.batch ? { batch: { ...spec.batch, max: Math.min(spec.batch.max, CLOCK_LANE_BATCH) } } : {}),
    },
    logger.child({ lane: 'clock' }),
  );
}
