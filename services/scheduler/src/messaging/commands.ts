import {
  CommandTypes,
  createCloudEvent,
  type RightsExpireBatch,
  type RightsSettleBatch,
  type SubscriptionsRenewBatch,
} from '@rs/contracts';
import type { DueItem } from '../store/due-store';

const SOURCE = '/scheduler';

/**
 * The scheduler's batch commands (docs/decisions/0011). `time` is when the scheduler found
 * the items due: the consumer judges "due" by it as well as by its own clock, so a clock a
 * little behind never turns a due command into a no-op.
 */
const batchCommand =
  <Data extends { items: unknown[] }>(type: string, itemOf: (item: DueItem) => Data['items'][number]) =>
  (items: DueItem[], now: Date) =>
    createCloudEvent<Data>({
      source: SOURCE,
      type,
      subject: items[0]!.id,
      data: { items: items.map(itemOf) } as Data,
      time: now,
    });

export const expireCommand = batchCommand<RightsExpireBatch>(CommandTypes.rightsExpire, (item) => ({
  rightId: item.id,
  connectId: item.connectId,
  end: item.dueAt.toISOString(),
}));
export const renewCommand = batchCommand<SubscriptionsRenewBatch>(CommandTypes.subscriptionsRenew, (item) => ({
  subscriptionId: item.id,
  connectId: item.connectId,
  ...(item.snapshot ? { snapshot: item.snapshot } : {}),
}));
export const settleCommand = batchCommand<RightsSettleBatch>(CommandTypes.rightsSettle, (item) => ({
  consumptionId: item.id,
  connectId: item.connectId,
}));
