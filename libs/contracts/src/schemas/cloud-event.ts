import { hash } from 'node:crypto';
import { z } from 'zod';
import { Actor } from './history';
import { newId } from './ids';

/** CloudEvents 1.0, structured JSON mode (docs/architecture.md). `type` equals the routing key. */
export const CloudEvent = z.object({
  specversion: z.literal('1.0'),
  id: z.string().min(1),
  source: z.string().min(1),
  type: z.string().min(1),
  subject: z.string().min(1),
  time: z.iso.datetime({ offset: true }),
  datacontenttype: z.literal('application/json'),
  data: z.unknown(),
  /**
   * Extension attributes naming who made the change (docs/api.md "History", `Actor`): on
   * every change event of rights and subscriptions; optional for everything else.
   */
  actorkind: Actor.shape.kind.optional(),
  actorid: z.string().min(1).optional(),
});
export type CloudEvent<Data = unknown> = Omit<z.infer<typeof CloudEvent>, 'data'> & { data: Data };

/** Who made the change an event reports, if it says (see `Actor`). */
export function actorOfEvent(event: CloudEvent): Actor | null {
  return event.actorkind && event.actorid ? { kind: event.actorkind, id: event.actorid } : null;
}

/** Content type of a structured-mode CloudEvent on the wire. */
export const CLOUD_EVENT_CONTENT_TYPE = 'application/cloudevents+json; charset=utf-8';

/**
 * The id of the event of type `type` that an entity's change to generation `sequence`
 * emits: the same whenever that event is built again (a command redelivered after a crash
 * publishes its events again, and consumers de-duplicate them by id).
 */
export function eventIdOf(subject: string, sequence: number, type: string): string {
  return hash('sha256', `${subject}|${sequence}|${type}`, 'hex').slice(0, 32);
}

export function createCloudEvent<Data>(input: {
  source: string;
  type: string;
  subject: string;
  data: Data;
  time?: Date;
  /** Default: a new ULID. */
  id?: string;
  /** Who made the change (change events of rights and subscriptions). */
  actor?: Actor;
}): CloudEvent<Data> {
  return {
    specversion: '1.0',
    id: input.id ?? newId(),
    source: input.source,
    type: input.type,
    subject: input.subject,
    time: (input.time ?? new Date()).toISOString(),
    datacontenttype: 'application/json',
    data: input.data,
    ...(input.actor ? { actorkind: input.actor.kind, actorid: input.actor.id } : {}),
  };
}

/** A family of event types and the schema of each one's `data`. */
export type EventSchemas = Record<string, z.ZodType>;

export type ParsedEvent<S extends EventSchemas> = {
  [K in keyof S & string]: CloudEvent<z.infer<S[K]>> & { type: K };
}[keyof S & string];

export class InvalidMessage extends Error {
  override readonly name = 'InvalidMessage';
}

/**
 * Parses the envelope first, then the payload by its type; unknown types are refused,
 * so a consumer dead-letters what it does not understand (docs/architecture.md).
 */
export function parseEvent<S extends EventSchemas>(schemas: S, raw: unknown): ParsedEvent<S> {
  const envelope = CloudEvent.safeParse(raw);
  if (!envelope.success) throw new InvalidMessage(`not a CloudEvent: ${z.prettifyError(envelope.error)}`);
  const schema = schemas[envelope.data.type];
  if (!schema) throw new InvalidMessage(`unknown event type ${envelope.data.type}`);
  const data = schema.safeParse(envelope.data.data);
  if (!data.success) throw new InvalidMessage(`invalid ${envelope.data.type} data: ${z.prettifyError(data.error)}`);
  return { ...envelope.data, data: data.data } as ParsedEvent<S>;
}

/** The data schema of each event type of a family whose events all carry the same data. */
/** The types of a family of events, `<family>.<name>` by name: `typesOf('clock', ['created'])` is `{ created: 'clock.created' }`. */
export function typesOf<const F extends string, const N extends string>(
  family: F,
  names: readonly N[],
): { readonly [K in N]: `${F}.${K}` } {
  return Object.fromEntries(names.map((name) => [name, `${family}.${name}`])) as { [K in N]: `${F}.${K}` };
}

export function eventFamily<Types extends Record<string, string>, Data>(
  types: Types,
  data: Data,
): Record<Types[keyof Types], Data> {
  return Object.fromEntries(Object.values(types).map((type) => [type, data])) as Record<Types[keyof Types], Data>;
}
