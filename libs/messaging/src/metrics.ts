import { counter, gauge } from '@rs/telemetry/metrics';
import { deadLetterQueueOf } from './topology';

export const messagesHandled = counter(
  'amqp_messages_handled_total',
  'Messages consumed, by queue and outcome (ok, retried, dead_lettered, dropped, moved_to_lane)',
  ['queue', 'outcome'],
);
export const messagesPublished = counter(
  'amqp_messages_published_total',
  'Messages confirmed by the broker, by exchange',
  ['exchange'],
);
/** docs/api.md "One bad item fails alone": items of batch commands that failed on their own, dead-lettered alone. */
export const batchItemsFailed = counter(
  'batch_items_failed_total',
  'Items of batch commands that failed on their own and were dead-lettered as one-item commands, by command',
  ['command'],
);
/** docs/decisions/0061: units of simulated work that waited for real time's. */
export const laneWaits = counter(
  'clock_lane_waits_total',
  "Units of a test clock's work (a lane's message or batch, a clock's step) that waited for real time",
);
export const brokerConnected = gauge('amqp_connected', '1 while the broker connection is open');

/** What the queue gauges ask of a broker client (an `AmqpClient`). */
interface QueueCounter {
  messageCounts(queues: string[]): Promise<Map<string, number>>;
}

/** The durable queues this process consumes, by the client that consumes them. */
const consumed = new Map<QueueCounter, Set<string>>();

export function watchQueue(client: QueueCounter, queue: string): void {
  const queues = consumed.get(client) ?? new Set<string>();
  consumed.set(client, queues.add(queue));
}

/** Both gauges below come from one round of passive declares per scrape. */
let depths: { at: number; counts: Promise<Map<string, number>> } | undefined;
function queueDepths(): Promise<Map<string, number>> {
  if (depths && Date.now() - depths.at < 1000) return depths.counts;
  const counts = Promise.all(
    [...consumed].map(([client, queues]) =>
      client.messageCounts([...queues].flatMap((queue) => [queue, deadLetterQueueOf(queue)])).catch(() => new Map()),
    ),
  ).then((maps) => new Map(maps.flatMap((map) => [...map])));
  depths = { at: Date.now(), counts };
  return counts;
}

/** A gauge of one count per consumed queue, read from `queueOf(queue)` (the queue or its `.dlq`). */
function queueGauge(name: string, help: string, queueOf: (queue: string) => string): void {
  gauge(name, help, ['queue'], async function collect() {
    this.reset();
    const counts = await queueDepths();
    for (const queues of consumed.values())
      for (const queue of queues) {
        const count = counts.get(queueOf(queue));
        if (count !== undefined) this.set({ queue }, count);
      }
  });
}

queueGauge('amqp_queue_messages', 'Messages waiting in a consumed queue, by queue', (queue) => queue);
queueGauge(
  'amqp_dead_letter_messages',
  "Messages in a consumed queue's dead-letter queue (<queue>.dlq), by queue",
  deadLetterQueueOf,
);
