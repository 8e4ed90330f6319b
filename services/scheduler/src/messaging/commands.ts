import { CommandTypes, createCloudEvent, type RightsExpireBatch, type SubscriptionsRenewBatch } from '@rs/contracts';
import type { DueItem } from '../store/due-store';

const SOURCE = '/scheduler';

/**
 * The scheduler's batch commands (docs/decisions/0011). `time` is when the scheduler found
 * the items due: the consumer judges "due" by it as well as by its own clock, so a clock a
 * little behind never turns a due command into a no-op.
 */
export const expireCommand = (items: DueItem[], now: Date) =>
  createCloudEvent<RightsExpireBatch>({
    source: SOURCE,
    type: CommandTypes.rightsExpire,
    subject: items[0]!.id,
    data: { items: items.map((item) => ({ rightId: item.id, connectId: item.connectId })) },
    time: now,
  });

export const renewCommand = (items: DueItem[], now: Date) =>
  createCloudEvent<SubscriptionsRenewBatch>({
    source: SOURCE,
    type: CommandTypes.subscriptionsRenew,
    subject: items[0]!.id,
    data: { items: items.map((item) => ({ subscriptionId: item.id, connectId: item.connectId })) },
    time: now,
  });
