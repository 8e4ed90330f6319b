import pLimit from 'p-limit';
import type { Keyset } from '@rs/http';
import { Exchanges, type CloudEvent } from '@rs/contracts';
import {
  OUTBOX_INDEX,
  OUTBOX_INDEX_OPTIONS,
  outboxEntry,
  outboxDocumentFields,
  UserOwnedStore,
  READ_CONCURRENCY,
  loadedEntries,
  storedEntries,
  type OutboxEntry,
  type SetAsideField,
  type StoredOutboxEntry,
  documentSchema,
  OUTBOX_PROJECTION,
} from '@rs/store';
import { type Connection } from 'mongoose';
import type { SubscriptionEntity } from '../domain/subscription';

interface SubscriptionDocument extends Omit<SubscriptionEntity, 'subscriptionId'> {
  _id: string;
  deleted: boolean;
  lastEvents: OutboxEntry[];
  /** See `OutboxStore.setAside`. */
  setAside?: SetAsideField['setAside'];
}

const schema = documentSchema<SubscriptionDocument>('subscriptions', {
  userId: 'string',
  grantorId: 'string',
  grantorContext: 'string?',
  state: 'string',
  rightsSpec: 'json',
  timeSpec: 'string',
  origTimeSpec: 'string',
  paymentAgreement: 'string?',
  nextPeriod: 'number?',
  deleted: 'flag',
  ...outboxDocumentFields,
  /**
   * The events and commands of the last renewal, published by the renewal command's handler
   * before it acks; kept so a redelivered command publishes them again (docs/decisions/0011).
   */
  lastEvents: 'json[]',
});
schema.index({ userId: 1, grantorId: 1, createdAt: -1 }, { name: 'by_user_and_grantor' });
schema.index({ userId: 1, createdAt: -1, _id: -1 }, { name: 'by_user' });
schema.index(OUTBOX_INDEX, OUTBOX_INDEX_OPTIONS);

const PROJECTION = { ...OUTBOX_PROJECTION, lastEvents: 0 } as const;

function toEntity(doc: SubscriptionDocument): SubscriptionEntity {
  const { _id, deleted: _deleted, ...fields } = doc as SubscriptionDocument & { outbox?: unknown };
  delete (fields as { outbox?: unknown }).outbox;
  delete (fields as { lastEvents?: unknown }).lastEvents;
  delete (fields as { setAside?: unknown }).setAside;
  return { subscriptionId: _id, ...fields };
}

const toFields = ({ subscriptionId: _id, ...fields }: SubscriptionEntity) => fields;

export interface SubscriptionQuery {
  userId: string;
  /** Non-admins see only subscriptions of their own grantor (spec 5 rule 1). */
  visibleTo: string | null;
  grantorId: string | null;
  limit: number;
  after: Keyset | null;
}

/** A renewal: the subscription as read, as renewed, and what the renewal emits. */
export interface RenewalChange {
  current: SubscriptionEntity;
  next: SubscriptionEntity;
  outgoing: Outgoing;
}

/** What a change stores besides the new state: its events and the commands it causes. */
export interface Outgoing {
  events: CloudEvent[];
  commands: CloudEvent[];
}

export const entriesOf = (outgoing: Outgoing): OutboxEntry[] => [
  ...outgoing.events.map((event) => outboxEntry(Exchanges.subscriptionsEvents, event)),
  ...outgoing.commands.map((command) => outboxEntry(Exchanges.commands, command)),
];

/**
 * The subscriptions service's own database. A change, its events and its commands (the
 * rights cascade) are stored in one write (DESIGN.md 2; docs/decisions/0003 and 0008).
 */
export class SubscriptionStore extends UserOwnedStore<SubscriptionDocument, SubscriptionEntity> {
  constructor(db: Connection) {
    super(db, 'Subscription', schema, { live: { deleted: { $ne: true } }, hidden: PROJECTION, toEntity });
  }

  /**
   * Every live subscription of one bucket (for the scheduler's rebuild), but those set aside
   * at their current generation (their renewal failed alone; DESIGN.md 9).
   */
  ofBucket(bucket: number): Promise<SubscriptionEntity[]> {
    return this.inBucket(bucket);
  }

  list(query: SubscriptionQuery): Promise<SubscriptionEntity[]> {
    const conditions: object[] = [];
    if (query.visibleTo !== null) conditions.push({ grantorId: query.visibleTo });
    if (query.grantorId !== null) conditions.push({ grantorId: query.grantorId });
    return this.pageNewestFirst({ userId: query.userId }, conditions, query.after, query.limit);
  }

  /** Stores a new subscription with its events; false when its id is taken. */
  insert(subscription: SubscriptionEntity, outgoing: Outgoing): Promise<boolean> {
    const doc = { _id: subscription.subscriptionId, ...toFields(subscription), deleted: false };
    return this.documents.insert(doc, entriesOf(outgoing));
  }

  /** Compare-and-set on `generation`, with the change's messages; a change that `removes` it leaves a tombstone. */
  update(change: {
    current: SubscriptionEntity;
    next: SubscriptionEntity;
    outgoing: Outgoing;
    removes?: true;
  }): Promise<boolean> {
    const { current, next, outgoing, removes } = change;
    return this.documents.compareAndSet(changeOf(current, next, outgoing, removes ?? false));
  }

  /**
   * A batch of renewals, compare-and-set each; for each, whether it was stored. Their events
   * and commands are kept as `lastEvents`, not pending: the renewal command's handler
   * publishes them before it acks (docs/decisions/0011).
   */
  renewMany(changes: readonly RenewalChange[]) {
    return this.documents.compareAndSetMany(
      changes.map(({ current, next, outgoing }) => ({
        id: current.subscriptionId,
        generation: current.generation,
        set: { ...toFields(next), lastEvents: storedEntries(entriesOf(outgoing)) },
        outbox: [],
      })),
    );
  }

  /** The events and commands of each subscription's last renewal (to publish again). */
  async lastEventsOf(keys: ReadonlyArray<{ userId: string; id: string }>): Promise<OutboxEntry[]> {
    const found = await pLimit(READ_CONCURRENCY).map(keys, ({ userId, id }) =>
      this.model.collection.findOne({ _id: id, userId } as never, { projection: { lastEvents: 1 } }),
    );
    return found.flatMap((doc) => loadedEntries((doc?.lastEvents as StoredOutboxEntry[] | undefined) ?? []));
  }
}

const changeOf = (current: SubscriptionEntity, next: SubscriptionEntity, outgoing: Outgoing, deleted: boolean) => ({
  id: current.subscriptionId,
  generation: current.generation,
  set: { ...toFields(next), deleted },
  outbox: entriesOf(outgoing),
});
