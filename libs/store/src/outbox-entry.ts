import { createCloudEvent, eventIdOf, type Actor, type CloudEvent } from '@rs/contracts';
import { currentTraceCarrier, type TraceCarrier } from '@rs/telemetry/trace-context';

/**
 * An event waiting to be published, stored inside the document whose change it reports,
 * in the same single-document write (docs/architecture.md): no dual write, no transaction needed,
 * so it works on a standalone MongoDB and on FerretDB.
 */
export interface OutboxEntry {
  id: string;
  exchange: string;
  event: CloudEvent;
  /** Trace context of the request that made the change, so its trace continues through the broker. */
  trace: TraceCarrier;
  createdAt: Date;
}

/**
 * An entry as stored: its event as JSON text, so that whatever the event carries (a right's
 * payload with keys like `$gt`, `a.b` or `_bsontype`) round-trips on MongoDB and FerretDB
 * (docs/security.md).
 */
export interface StoredOutboxEntry extends Omit<OutboxEntry, 'event'> {
  event: string;
}

export const storedEntries = (entries: readonly OutboxEntry[]): StoredOutboxEntry[] =>
  entries.map((entry) => ({ ...entry, event: JSON.stringify(entry.event) }));

export const loadedEntries = (entries: readonly StoredOutboxEntry[]): OutboxEntry[] =>
  entries.map((entry) => ({
    ...entry,
    event: JSON.parse(entry.event) as CloudEvent,
  }));

export function outboxEntry(exchange: string, event: CloudEvent): OutboxEntry {
  return { id: event.id, exchange, event, trace: currentTraceCarrier(), createdAt: new Date() };
}

/**
 * The outbox entry of one message of a change, on `exchange`: its id derived from (subject,
 * sequence, type), so a message built again for the same change (a redelivered command, a
 * retried write) is the same message, and consumers apply it once.
 */
export function changeMessage<Data>(
  exchange: string,
  message: { source: string; type: string; subject: string; sequence: number; time: Date; data: Data; actor?: Actor },
): OutboxEntry {
  const { sequence, ...fields } = message;
  return outboxEntry(
    exchange,
    createCloudEvent<Data>({ id: eventIdOf(fields.subject, sequence, fields.type), ...fields }),
  );
}
