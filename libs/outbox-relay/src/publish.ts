import type { AmqpClient } from '@rs/messaging';
import type { HistoryLog, OutboxEntry } from '@rs/store';

/**
 * How a durable command publishes the changes it made (docs/decisions/0011): their history
 * recorded and every event and command published with confirms, both before the command is
 * acked (side by side: neither waits for the other). A crash anywhere brings the command
 * back, which records (nothing new) and publishes again.
 */
export async function recordAndPublish(
  history: HistoryLog,
  client: AmqpClient,
  entries: readonly OutboxEntry[],
): Promise<void> {
  await Promise.all([
    history.record(entries.map((entry) => entry.event)),
    ...entries.map((entry) => client.publishEvent(entry.exchange, entry.event, entry.trace)),
  ]);
}
