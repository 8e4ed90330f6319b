import {
  CommandTypes,
  createCloudEvent,
  type RightsExpireBatch,
  type RightsSettleBatch,
  type SubscriptionsRenewBatch,
} from '@rs/contracts';
import type { DueItem } from '../store/due-store';

/**
 * An item a command names: a due item, and for what lives on a test clock its clock, whose time
 * the command's `time` is then (docs/decisions/0048).
 */
export type CommandedItem = DueItem & { clockId?: string };

const SOURCE = '/scheduler';

/**
 * The scheduler's batch commands (docs/decisions/0011). `time` is when the scheduler found
 * the items due: the consumer judges "due" by it as well as by its own clock, so a clock a
 * little behind never turns a due command into a no-op; for what lives on a test clock, by it
 * alone (its clock's time).
 */
const batchCommand =
  <Data extends { items: unknown[] }>(type: string, itemOf: (item: CommandedItem) => Data['items'][number]) =>
  (items: CommandedItem[], now: Date) =>
    createCloudEvent<Data>({
      source: SOURCE,
      type,
      subject: items[0]!.id,
      data: {
        items: items.map((item) => ({
          ...(itemOf(item) as object),
          ...(item.clockId ? { clockId: item.clockId } : {}),
        })),
      } as Data,
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
