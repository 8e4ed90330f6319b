import { CommandTypes, itemsOf, parseEvent, RightsCommands, type ParsedEvent } from '@rs/contracts';
import type { Logger } from '@rs/logging';
import { batchItemsFailed, consumeCommands, type AmqpClient, type FailedItem } from '@rs/messaging';
import { recordAndPublish } from '@rs/outbox-relay';
import { isTransient, type HistoryLog } from '@rs/store';
import type { Clock } from '@rs/time';
import { observeExpiryLag, observeRenewalLag } from './lag';
import type { RightCommands } from '../app/right-commands';
import type { ExpiryWrites } from '../app/expiry-writes';
import type { ReservationUseCases } from '../app/reservations';

export const RIGHTS_COMMAND_QUEUE = 'rights.commands';

type RightsCommand = ParsedEvent<typeof RightsCommands>;

/**
 * The items of a batch's commands of one type the scheduler sent (each with the message it came
 * in), in groups each judged at one instant: the latest command's of the group (each was sent
 * once its items were due, so what was due by then was due by its own). What lives on a test
 * clock is grouped by its clock, whose time only moves forward (docs/decisions/0048); the rest
 * together.
 */
function scheduled<Item extends { clockId?: string }>(
  commands: readonly RightsCommand[],
  itemsIfOfType: (command: RightsCommand) => Item[] | null,
): Array<{ items: Array<{ message: number; item: Item }>; judgedAt: Date }> {
  const groups = new Map<string, { items: Array<{ message: number; item: Item }>; judgedAt: Date }>();
  commands.forEach((command, message) => {
    for (const item of itemsIfOfType(command) ?? []) {
      const key = item.clockId ?? '';
      const group = groups.get(key) ?? { items: [], judgedAt: new Date(0) };
      group.items.push({ message, item });
      if (Date.parse(command.time) > group.judgedAt.getTime()) group.judgedAt = new Date(command.time);
      groups.set(key, group);
    }
  });
  return [...groups.values()];
}

/** What the rights service's command handlers work with. */
export interface RightsCommandsOptions {
  broker: AmqpClient;
  rights: RightCommands;
  reservations: ReservationUseCases;
  /** Where issued and expired rights' changes are recorded as they are published. */
  history: HistoryLog;
  logger: Logger;
  clock: Clock;
  /** Writes, behind their published events, the expiries that reads derive already. */
  expiryWrites: ExpiryWrites;
}

/**
 * The rights service's command queue (docs/architecture.md): expiry from the scheduler, issue and
 * cascade from the subscriptions service. Malformed commands are dead-lettered at once;
 * failures are retried, then dead-lettered. Every handler is idempotent.
 */
export async function consumeRightsCommands(options: RightsCommandsOptions): Promise<void> {
  const { broker, rights, reservations, history, logger, clock, expiryWrites } = options;

  /**
   * `rights.issue`: every period of the batch issued together (docs/decisions/0020); each
   * fails alone. Their `right.created` go out through `recordAndPublish` before the commands
   * are acked: the durable command is their outbox (docs/decisions/0011), and redelivered
   * after a crash it builds the same messages (same ids) and publishes them again.
   */
  const issue = async (commands: readonly RightsCommand[], failedItems: FailedItem[]) => {
    const issues = commands.flatMap((command, message) =>
      command.type === CommandTypes.rightsIssue ? itemsOf(command.data).map((data) => ({ message, data })) : [],
    );
    if (issues.length === 0) return;
    const { failed, withheld, outbox } = await rights.issueForPeriods(issues.map(({ data }) => data));
    // A template whose grantor may no longer grant its SKU issued nothing this period (its
    // period's other rights were issued): counted and logged as an item that failed alone.
    for (const { command, templateIndex, reason } of withheld) {
      batchItemsFailed.inc({ command: CommandTypes.rightsIssue });
      logger.warn(
        { subscription_id: command.subscriptionId, period_start: command.periodStart, template: templateIndex, reason },
        'renewal issued no right for a template its grantor may no longer grant',
      );
    }
    for (const { index, error } of failed) {
      const { message, data } = issues[index]!;
      failedItems.push({ message, data, id: `${data.subscriptionId}@${data.periodStart}`, error });
    }
    await recordAndPublish(history, broker, outbox);
    const publishedAt = clock();
    for (const { data } of issues) if (!data.clockId) observeRenewalLag(data.dueAt, publishedAt);
  };

  /**
   * `rights.expire`: the expiries of every command of the batch read together, since a
   * second's commands split the rights ending together under one key over several commands
   * (docs/decisions/0039); judged as of the latest command's instant (each was sent once its
   * items were due, so a right ended by then had ended by its own). Published as issues are,
   * then the expiries that reads derive are written behind their events (docs/decisions/0027).
   */
  const expire = async (commands: readonly RightsCommand[], failedItems: FailedItem[]) => {
    const groups = scheduled(commands, (command) =>
      command.type === CommandTypes.rightsExpire ? itemsOf(command.data) : null,
    );
    for (const { items: expiries, judgedAt } of groups) {
      const { expired, unwritten, failed, outbox } = await rights.expireMany(
        expiries.map(({ item }) => item),
        judgedAt,
      );
      for (const { index, error } of failed) {
        const { message, item } = expiries[index]!;
        failedItems.push({ message, data: item, id: item.rightId, error });
      }
      await recordAndPublish(history, broker, outbox);
      expiryWrites.add(unwritten);
      const publishedAt = clock();
      // How late real expiries are (a clock's are as late as its advances make them).
      for (const right of expired) if (!right.clockId) observeExpiryLag(right.expiresAt, publishedAt);
    }
  };

  /** `rights.cascade`, one by one: each reads and changes every right of its subscription (through the outbox). */
  const cascade = async (commands: readonly RightsCommand[], failedItems: FailedItem[]) => {
    for (const [message, command] of commands.entries()) {
      if (command.type !== CommandTypes.rightsCascade) continue;
      await rights.cascade(command.data).catch((error: unknown) => {
        if (isTransient(error)) throw error;
        failedItems.push({ message, data: command.data, id: command.data.subscriptionId, error });
      });
    }
  };

  /**
   * `rights.settle`: the holds whose time is up (docs/decisions/0045), judged as of the latest
   * command's instant (each was sent once its items were due). Their events go out through the
   * rights' outbox.
   */
  const settle = async (commands: readonly RightsCommand[], failedItems: FailedItem[]) => {
    const groups = scheduled(commands, (command) =>
      command.type === CommandTypes.rightsSettle ? itemsOf(command.data) : null,
    );
    for (const { items: settles, judgedAt } of groups) {
      for (const { index, error } of await reservations.settle(
        settles.map(({ item }) => item),
        judgedAt,
      )) {
        const { message, item } = settles[index]!;
        failedItems.push({ message, data: item, id: item.consumptionId, error });
      }
    }
  };

  /** A batch of commands, each kind by its handler; what fails alone is dead-lettered alone. */
  const handleBatch = async (commands: RightsCommand[]): Promise<FailedItem[]> => {
    const failedItems: FailedItem[] = [];
    await issue(commands, failedItems);
    await expire(commands, failedItems);
    await cascade(commands, failedItems);
    await settle(commands, failedItems);
    return failedItems;
  };
  // With its clock lane, a few at a time: a rehearsal's commands never queue ahead of real time's.
  await consumeCommands(
    broker,
    {
      queue: RIGHTS_COMMAND_QUEUE,
      // A period whose intervals do not parse fails alone when its rights are built: dead-lettered
      // at once as a one-item command, the other periods of its batch issued.
      parse: (body) => parseEvent(RightsCommands, body),
      handle: (command) => handleBatch([command]),
      // Many `rights.issue` arrive at once in a renewal: their rights go into few insertMany
      // calls. Bounded: a command carries up to 1,000 rights (MAX_ISSUE_BATCH_RIGHTS; or 500
      // expiries), so a batch holds at most 8,000 rights, whatever the messages carry. Two
      // batches in flight: four renewed no faster on two cores, where the database and the
      // broker are busy throughout a burst (docs/decisions/0075).
      prefetch: 16,
      batch: { max: 8, lingerMs: 20, handle: (messages) => handleBatch(messages.map(({ message }) => message)) },
    },
    logger.child({ component: 'commands' }),
  );
}
