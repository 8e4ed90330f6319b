import {
  commandBindings,
  CommandTypes,
  Exchanges,
  itemsOf,
  parseEvent,
  RightEventTypes,
  RightsCommands,
  type ParsedEvent,
  systemActor,
} from '@rs/contracts';
import type { Logger } from '@rs/logging';
import { batchItemsFailed, consume, type AmqpClient, type FailedItem } from '@rs/messaging';
import { recordAndPublish } from '@rs/outbox-relay';
import { isTransient, outboxEntry, type HistoryLog } from '@rs/store';
import type { Clock } from '@rs/time';
import type { RightEventsOf } from './events';
import { observeExpiryLag, observeRenewalLag } from './lag';
import type { RightsUseCases } from '../app/rights';
import type { ExpiryWrites } from '../app/expiry-writes';

export const RIGHTS_COMMAND_QUEUE = 'rights.commands';

type RightsCommand = ParsedEvent<typeof RightsCommands>;

/**
 * The rights service's command queue (DESIGN.md 2): expiry from the scheduler, issue and
 * cascade from the subscriptions service. Malformed commands are dead-lettered at once;
 * failures are retried, then dead-lettered. Every handler is idempotent.
 */
export async function consumeRightsCommands(
  broker: AmqpClient,
  rights: RightsUseCases,
  history: HistoryLog,
  eventsFor: RightEventsOf,
  logger: Logger,
  clock: Clock,
  onStored: () => void,
  expiryWrites: ExpiryWrites,
): Promise<void> {
  /**
   * Issue and expiry record and publish their events here, all with confirms, before the
   * commands are acked: the durable command is their outbox (docs/decisions/0011).
   * Redelivered after a crash, it builds the same events (same ids) and publishes them again.
   * The platform made these changes: rights issued for a period as the subscriptions service,
   * expiries as the scheduler (DESIGN.md 8 "History").
   */
  const handleBatch = async (commands: RightsCommand[]): Promise<FailedItem[]> => {
    // DESIGN.md 9: what fails alone is dead-lettered alone, as a one-item command.
    const failedItems: FailedItem[] = [];
    // Periods arrive one a command or many (docs/decisions/0020); each fails alone.
    const issues = commands.flatMap((command, message) =>
      command.type === CommandTypes.rightsIssue ? itemsOf(command.data).map((data) => ({ message, data })) : [],
    );
    const { issued, failed: failedIssues, withheld } = await rights.issueForPeriods(issues.map(({ data }) => data));
    // A template whose grantor may no longer grant its SKU issued nothing this period (its
    // period's other rights were issued): counted and logged as an item that failed alone.
    for (const { command, templateIndex, reason } of withheld) {
      batchItemsFailed.inc({ command: CommandTypes.rightsIssue });
      logger.warn(
        { subscription_id: command.subscriptionId, period_start: command.periodStart, template: templateIndex, reason },
        'renewal issued no right for a template its grantor may no longer grant',
      );
    }
    for (const { index, error } of failedIssues) {
      const { message, data } = issues[index]!;
      failedItems.push({ message, data, id: `${data.subscriptionId}@${data.periodStart}`, error });
    }
    // The expiries of every command of the batch are read together: a second's commands split
    // the rights ending together under one key over several commands, and each command read
    // that whole key again (docs/decisions/0039). Judged as of the latest command's instant:
    // each was sent once its items were due, so a right ended by then had ended by its own.
    const expiries = commands.flatMap((command, message) =>
      command.type === CommandTypes.rightsExpire ? itemsOf(command.data).map((item) => ({ message, item })) : [],
    );
    const judgedAt = Math.max(
      ...commands.filter((command) => command.type === CommandTypes.rightsExpire).map((c) => Date.parse(c.time)),
    );
    const { expired, unwritten, failed } =
      expiries.length === 0
        ? { expired: [], unwritten: [], failed: [] }
        : await rights.expireMany(
            expiries.map(({ item }) => item),
            new Date(judgedAt),
          );
    for (const { index, error } of failed) {
      const { message, item } = expiries[index]!;
      failedItems.push({ message, data: item, id: item.rightId, error });
    }
    const events = [
      ...issued.flatMap((right) => eventsFor(right, [RightEventTypes.created], systemActor('subscriptions'))),
      ...expired.flatMap((right) => eventsFor(right, [RightEventTypes.expired], systemActor('scheduler'))),
    ];
    await recordAndPublish(
      history,
      broker,
      events.map((event) => outboxEntry(Exchanges.rightsEvents, event)),
    );
    // Their events are out: the expiries that reads derive are written behind them (docs/decisions/0027).
    expiryWrites.add(unwritten);
    const publishedAt = clock();
    for (const { data } of issues) observeRenewalLag(data.dueAt, publishedAt);
    for (const right of expired) observeExpiryLag(right.end, publishedAt);
    // One by one: each cascade reads and changes every right of its subscription (through the outbox).
    for (const [message, command] of commands.entries()) {
      if (command.type !== CommandTypes.rightsCascade) continue;
      await rights.cascade(command.data).catch((error: unknown) => {
        if (isTransient(error)) throw error;
        failedItems.push({ message, data: command.data, id: command.data.subscriptionId, error });
      });
    }
    onStored();
    return failedItems;
  };
  await consume(
    broker,
    {
      queue: RIGHTS_COMMAND_QUEUE,
      bindings: commandBindings(RIGHTS_COMMAND_QUEUE),
      // A period whose intervals do not parse fails alone when its rights are built: dead-lettered
      // at once as a one-item command, the other periods of its batch issued.
      parse: (body) => parseEvent(RightsCommands, body),
      handle: (command) => handleBatch([command]),
      // Many `rights.issue` arrive at once in a renewal: their rights go into few insertMany
      // calls. Bounded: a command carries up to 1,000 rights (MAX_ISSUE_BATCH_RIGHTS; or 500
      // expiries), so a batch holds at most 8,000 rights (250 messages of 100 rights exhausted
      // a 256 MB heap).
      prefetch: 16,
      batch: { max: 8, lingerMs: 20, handle: (messages) => handleBatch(messages.map(({ message }) => message)) },
    },
    logger.child({ component: 'commands' }),
  );
}
