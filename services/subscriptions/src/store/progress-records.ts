import type { SubscriptionState } from '@rs/contracts';
import type { SubscriptionEntity } from '../domain/subscription';

/*
 * How the store keeps a subscription's changes, and reads them back: the document as created,
 * and a record per later change (docs/decisions/0026, 0036, 0047). Folding them into the
 * subscription is the store's own business: the domain and the use cases see subscriptions.
 */

/**
 * What changes in a subscription after its creation (docs/decisions/0026). Every change is
 * stored as one of these, keyed by (subscription, generation): a writer claims the next
 * generation by inserting it, so of two writers that decided from the same generation one
 * stores and the other finds it taken, as a compare-and-set would, at the cost of an insert.
 */
export interface Progress {
  generation: number;
  state: SubscriptionState;
  nextPeriod: number | null;
  updatedAt: Date;
  deleted: boolean;
  /** Its plan, on the records of changes that changed it only (docs/decisions/0047). */
  planned?: PlanFields;
}

/** What a plan change changes. */
export type PlanFields = Pick<SubscriptionEntity, 'plan' | 'rightsSpec' | 'pendingChange'>;

const planOf = ({ plan, rightsSpec, pendingChange }: PlanFields): PlanFields => ({ plan, rightsSpec, pendingChange });

/** The record of the change from `current` to `next`: its plan too when the change changed it. */
export function progressOf(current: PlanFields, next: SubscriptionEntity, deleted: boolean): Progress {
  const replanned =
    current.plan !== next.plan ||
    current.rightsSpec !== next.rightsSpec ||
    current.pendingChange !== next.pendingChange;
  return {
    generation: next.generation,
    state: next.state,
    nextPeriod: next.nextPeriod,
    updatedAt: next.updatedAt,
    deleted,
    ...(replanned ? { planned: planOf(next) } : {}),
  };
}

/**
 * The plan as of `generation`: that of the latest record up to it that changed the plan, or
 * the plan it was created with (a document keeps its creation's plan; docs/decisions/0047). Pure.
 */
export function planAsOf(created: PlanFields, records: readonly Progress[], generation = Infinity): PlanFields {
  let latest: Progress | null = null;
  for (const record of records)
    if (record.planned && record.generation <= generation && record.generation > (latest?.generation ?? 0))
      latest = record;
  return latest?.planned ?? planOf(created);
}

/**
 * Where a renewal started from: stored with its record instead of its events and commands,
 * which follow from it (docs/decisions/0036).
 */
export interface RenewalOrigin {
  fromState: SubscriptionState;
  fromPeriod: number | null;
}

/**
 * The subscription as the renewal stored as `record` found it: its fixed fields as stored,
 * its progress as the renewal started from it. Renewing that at `record.updatedAt` plans the
 * same periods and builds the same events (their ids derive from the change) as the renewal
 * did, so a redelivered command can publish them again without keeping them. Pure.
 */
export function beforeRenewal(
  stored: SubscriptionEntity,
  record: Progress & RenewalOrigin,
  plan: PlanFields,
): SubscriptionEntity {
  return {
    ...stored,
    ...plan,
    generation: record.generation - 1,
    state: record.fromState,
    nextPeriod: record.fromPeriod,
  };
}

/**
 * The subscription as of its latest change: as created (or as last compacted), with the
 * record of the highest generation above it applied; and whether that change deleted it. Pure.
 */
export function latestOf(
  stored: SubscriptionEntity,
  deleted: boolean,
  records: readonly Progress[],
): { entity: SubscriptionEntity; deleted: boolean } {
  let latest: Progress | null = null;
  for (const record of records) if (record.generation > (latest ?? stored).generation) latest = record;
  const plan = planAsOf(stored, records);
  if (!latest) return { entity: { ...stored, ...plan }, deleted };
  const { deleted: removed, planned: _planned, ...fields } = latest;
  return { entity: { ...stored, ...fields, ...plan }, deleted: removed };
}
