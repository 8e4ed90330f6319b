import type { AmqpClient } from '@rs/messaging';
import type { HistoryLog, OutboxEntry } from '@rs/store';

/**
 * The one way a change's messages leave the service, whoever sends them (the outbox relay, or
 * a durable command that publishes its changes itself, docs/decisions/0011): their history
 * recorded and every entry published with confirms, side by side, in order.
 * Resolves each entry's outcome; rejects when the history cannot be recorded, so nothing is
 * taken as done whose history is missing.
 */
export async function publishRecorded(
  history: HistoryLog | undefined,
  client: AmqpClient,
  entries: readonly OutboxEntry[],
): Promise<Array<PromiseSettledResult<void>>> {
  const [outcomes] = await Promise.all([
    Promise.allSettled(entries.map((entry) => client.publishEvent(entry.exchange, entry.event, entry.trace))),
    history?.record(entries.map((entry) => entry.event)),
  ]);
  return outcomes;
}

/**
 * `publishRecorded` for a durable command, all or nothing, before the command is acked: a
 * crash or a refusal anywhere brings the command back, which records (nothing new) and
 * publishes again.
 */
export async function recordAndPublish(
  history: HistoryLog,
  client: AmqpClient,
  entries: readonly OutboxEntry[],
): Promise<void> {
  const refused = (await publishRecorded(history, client, entries)).find((outcome) => outcome.status === 'rejected');
  if (refused) throw (refused as PromiseRejectedResult).reason;
}
