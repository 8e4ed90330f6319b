import { z } from 'zod';
import { PartyId, SkuName } from './catalog';
import { ClockId } from './clocks';
import { ConnectId } from './identity';
import { RightId } from './rights';
import { SubscriptionSnapshot } from './subscriptions';

/**
 * Commands on the `commands` direct exchange (docs/architecture.md), CloudEvents like the events:
 * `type` is the routing key, `subject` the entity the command is about. Consumers are
 * idempotent: a command may arrive more than once.
 */
export const CommandTypes = {
  subscriptionsRenew: 'subscriptions.renew',
  rightsIssue: 'rights.issue',
  rightsExpire: 'rights.expire',
  rightsCascade: 'rights.cascade',
  rightsSettle: 'rights.settle',
  schedulerHold: 'scheduler.hold',
} as const;

/**
 * What lives on a test clock names it (docs/decisions/0048): a command about it is judged at the
 * command's time alone (its clock's time then), an issue's rights live on it, a hold's `until`
 * is an instant of it.
 */
const ON_CLOCK = { clockId: ClockId.optional() };

/**
 * The scheduler asks the rights service to settle a consumption's or reservation's holds whose
 * time is up (one on a test clock is judged at its clock's time).
 */
export const RightsSettleData = z.object({ consumptionId: RightId, connectId: ConnectId, ...ON_CLOCK });
export type RightsSettleData = z.infer<typeof RightsSettleData>;

/**
 * The rights service tells the scheduler when the holds of a consumption or reservation lapse
 * (docs/decisions/0045): the scheduler decides when, and then asks for `rights.settle`.
 */
export const SchedulerHoldData = RightsSettleData.extend({ until: z.iso.datetime({ offset: true }) });
export type SchedulerHoldData = z.infer<typeof SchedulerHoldData>;

/**
 * A record whose holds are still `holding`, as the scheduler's rebuild reads it from the rights
 * service (`/internal/holds`, docs/decisions/0045): what `scheduler.hold` told, again.
 */
export const HoldEntry = SchedulerHoldData.extend({ sequence: z.number().int() });
export type HoldEntry = z.infer<typeof HoldEntry>;
export const HoldPage = z.object({ items: z.array(HoldEntry), next: z.string().nullable() });

/** The scheduler asks the rights service to expire a right whose interval has ended. */
export const RightsExpireData = z.object({
  rightId: RightId,
  connectId: ConnectId,
  /**
   * When it ends (its due time): the rights service reads a command's rights by their bucket
   * and end second, a query per key, instead of one at a time (docs/decisions/0027).
   */
  end: z.iso.datetime({ offset: true }),
  ...ON_CLOCK,
});
export type RightsExpireData = z.infer<typeof RightsExpireData>;

/** One right of a period, from one template of a subscription (docs/api.md). */
export const IssuedRight = z.object({
  templateIndex: z.number().int().min(0),
  sku: SkuName,
  serviceProviderId: PartyId.nullable(),
  grantorContext: z.string().nullable(),
  /** `<start>/<end>` with offsets. */
  timeInterval: z.string(),
  state: z.enum(['ACTIVE', 'SUSPENDED']),
  quantity: z.number().int().nullable(),
  grace: z.string().nullable(),
});
export type IssuedRight = z.infer<typeof IssuedRight>;

/** The subscriptions service issues the rights of one period (docs/api.md "Renewal"). */
export const RightsIssueData = z.object({
  subscriptionId: z.string().regex(/^[0-9A-Za-z]{1,64}$/),
  connectId: ConnectId,
  grantorId: PartyId,
  periodStart: z.iso.datetime({ offset: true }),
  /**
   * When the period fell due: its start, or the subscription's creation when that came later.
   * The rights service measures renewal lag from it.
   */
  dueAt: z.iso.datetime({ offset: true }),
  rights: z.array(IssuedRight).min(1).max(100),
  /** The subscription's plan changes so far (docs/api.md "Plan changes"): part of each right's id; absent, 0. */
  plan: z.number().int().min(0).optional(),
  ...ON_CLOCK,
});
export type RightsIssueData = z.infer<typeof RightsIssueData>;

/**
 * What a subscription's change does to its rights: suspend or reactivate them (docs/api.md
 * "Suspend / activate"), or end the current period's rights of the templates a plan change
 * replaced, at the change's instant (docs/api.md "Plan changes").
 */
export const RightsCascadeData = z.discriminatedUnion('action', [
  z.object({
    subscriptionId: z.string().regex(/^[0-9A-Za-z]{1,64}$/),
    connectId: ConnectId,
    action: z.enum(['suspend', 'activate']),
  }),
  z.object({
    subscriptionId: z.string().regex(/^[0-9A-Za-z]{1,64}$/),
    connectId: ConnectId,
    action: z.literal('end'),
    rightIds: z
      .array(z.string().regex(/^[0-9a-f]{32}$/))
      .min(1)
      .max(20),
    at: z.iso.datetime({ offset: true }),
  }),
]);
export type RightsCascadeData = z.infer<typeof RightsCascadeData>;

/** The scheduler asks the subscriptions service to bring a subscription up to now: issue due periods, expire it at its end. */
export const SubscriptionsRenewData = z.object({
  subscriptionId: z.string().regex(/^[0-9A-Za-z]{1,64}$/),
  connectId: ConnectId,
  /**
   * The subscription as the scheduler last heard of it (docs/decisions/0026): renewal plans
   * from it instead of reading the subscription. Optional: without it (an item of the
   * scheduler's rebuild) the subscription is read.
   */
  snapshot: SubscriptionSnapshot.optional(),
  ...ON_CLOCK,
});
export type SubscriptionsRenewData = z.infer<typeof SubscriptionsRenewData>;

/**
 * Batches (docs/architecture.md "Scale", docs/decisions/0011): the scheduler commands the due work
 * of one partition and second in one message of up to `MAX_BATCH_ITEMS` items, each item
 * the single command's data. Consumers accept the single and the batch shape of a type, so
 * either producer may send either. Events stay one per entity.
 */
export const MAX_BATCH_ITEMS = 500;
const batchOf = <T extends z.ZodType>(item: T) => z.object({ items: z.array(item).min(1).max(MAX_BATCH_ITEMS) });

export const SubscriptionsRenewBatch = batchOf(SubscriptionsRenewData);
export type SubscriptionsRenewBatch = z.infer<typeof SubscriptionsRenewBatch>;
export const RightsExpireBatch = batchOf(RightsExpireData);
export type RightsExpireBatch = z.infer<typeof RightsExpireBatch>;
export const RightsSettleBatch = batchOf(RightsSettleData);
export type RightsSettleBatch = z.infer<typeof RightsSettleBatch>;

/**
 * The rights of many periods in one message (docs/decisions/0020): a renewal command's
 * periods travel together instead of one message each. Bounded by the rights it carries as
 * well, so that a consumer's batch of them stays within a small heap.
 */
export const MAX_ISSUE_BATCH_RIGHTS = 1_000;
export const RightsIssueBatch = batchOf(RightsIssueData).refine(
  (batch) => batch.items.reduce((sum, item) => sum + item.rights.length, 0) <= MAX_ISSUE_BATCH_RIGHTS,
  { message: `at most ${MAX_ISSUE_BATCH_RIGHTS} rights in one batch`, path: ['items'] },
);
export type RightsIssueBatch = z.infer<typeof RightsIssueBatch>;

/** The items of a command in either shape. */
export const itemsOf = <T>(data: T | { items: T[] }): T[] =>
  typeof data === 'object' && data !== null && 'items' in data ? data.items : [data as T];

/** The commands the subscriptions service consumes. */
export const SubscriptionsCommands = {
  [CommandTypes.subscriptionsRenew]: z.union([SubscriptionsRenewBatch, SubscriptionsRenewData]),
};

/** The commands the rights service consumes. */
export const RightsCommands = {
  [CommandTypes.rightsExpire]: z.union([RightsExpireBatch, RightsExpireData]),
  [CommandTypes.rightsIssue]: z.union([RightsIssueBatch, RightsIssueData]),
  [CommandTypes.rightsCascade]: RightsCascadeData,
  [CommandTypes.rightsSettle]: z.union([RightsSettleBatch, RightsSettleData]),
};

/** The commands the scheduler consumes. */
export const SchedulerCommands = {
  [CommandTypes.schedulerHold]: SchedulerHoldData,
};
