import { z } from 'zod';
import { PartyId, SkuName } from './catalog';
import { ConnectId } from './identity';
import { RightId } from './rights';

/**
 * Commands on the `commands` direct exchange (DESIGN.md 2), CloudEvents like the events:
 * `type` is the routing key, `subject` the entity the command is about. Consumers are
 * idempotent: a command may arrive more than once.
 */
export const CommandTypes = {
  subscriptionsRenew: 'subscriptions.renew',
  rightsIssue: 'rights.issue',
  rightsExpire: 'rights.expire',
  rightsCascade: 'rights.cascade',
} as const;

/** The scheduler asks the rights service to expire a right whose interval has ended. */
export const RightsExpireData = z.object({ rightId: RightId, connectId: ConnectId });
export type RightsExpireData = z.infer<typeof RightsExpireData>;

/** One right of a period, from one template of a subscription (spec 2.3). */
export const IssuedRight = z.object({
  templateIndex: z.number().int().min(0),
  sku: SkuName,
  serviceProviderId: PartyId.nullable(),
  grantorContext: z.string().nullable(),
  /** `<start>/<end>` with offsets. */
  timeInterval: z.string(),
  state: z.enum(['ACTIVE', 'SUSPENDED']),
});
export type IssuedRight = z.infer<typeof IssuedRight>;

/** The subscriptions service issues the rights of one period (DESIGN.md 3 "Renewal"). */
export const RightsIssueData = z.object({
  subscriptionId: z.string().regex(/^[0-9A-Za-z]{1,64}$/),
  connectId: ConnectId,
  grantorId: PartyId,
  periodStart: z.iso.datetime({ offset: true }),
  rights: z.array(IssuedRight).min(1).max(100),
});
export type RightsIssueData = z.infer<typeof RightsIssueData>;

/** Suspend or reactivate the rights of a subscription (DESIGN.md 3 "Suspend / activate"). */
export const RightsCascadeData = z.object({
  subscriptionId: z.string().regex(/^[0-9A-Za-z]{1,64}$/),
  connectId: ConnectId,
  action: z.enum(['suspend', 'activate']),
});
export type RightsCascadeData = z.infer<typeof RightsCascadeData>;

/** The scheduler asks the subscriptions service to bring a subscription up to now: issue due periods, expire it at its end. */
export const SubscriptionsRenewData = z.object({
  subscriptionId: z.string().regex(/^[0-9A-Za-z]{1,64}$/),
  connectId: ConnectId,
});
export type SubscriptionsRenewData = z.infer<typeof SubscriptionsRenewData>;

/** The commands the subscriptions service consumes. */
export const SubscriptionsCommands = {
  [CommandTypes.subscriptionsRenew]: SubscriptionsRenewData,
};

/** The commands the rights service consumes. */
export const RightsCommands = {
  [CommandTypes.rightsExpire]: RightsExpireData,
  [CommandTypes.rightsIssue]: RightsIssueData,
  [CommandTypes.rightsCascade]: RightsCascadeData,
};
