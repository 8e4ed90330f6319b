import {
  commandBindings,
  CommandTypes,
  Exchanges,
  InvalidMessage,
  itemsOf,
  parseEvent,
  RightEventTypes,
  RightsCommands,
  type ParsedEvent,
  type RightsExpireData,
  type RightsIssueData,
  systemActor,
} from '@rs/contracts';
import type { Logger } from '@rs/logging';
import { consume, type AmqpClient } from '@rs/messaging';
import { outboxEntry, recordAndPublish, type HistoryLog } from '@rs/store';
import { parseTimeInterval, type Clock } from '@rs/time';
import type { RightEntity } from '../domain/right';
import type { RightEventsOf } from './events';
import { observeExpiryLag, observeRenewalLag } from './lag';
import type { RightsUseCases } from '../app/rights';

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
): Promise<void> {
  /**
   * Issue and expiry record and publish their events here, all with confirms, before the
   * commands are acked: the durable command is their outbox (docs/decisions/0011).
   * Redelivered after a crash, it builds the same events (same ids) and publishes them again.
   * The platform made these changes: rights issued for a period as the subscriptions service,
   * expiries as the scheduler (DESIGN.md 8 "History").
   */
  const handleBatch = async (commands: RightsCommand[]) => {
    const issues: RightsIssueData[] = [];
    const expiries: Array<{ items: RightsExpireData[]; judgedAt: Date }> = [];
    for (const command of commands) {
      if (command.type === CommandTypes.rightsIssue) issues.push(command.data);
      else if (command.type === CommandTypes.rightsExpire)
        expiries.push({ items: itemsOf(command.data), judgedAt: new Date(command.time) });
    }
    const issued = await rights.issueForPeriods(issues);
    const expired: RightEntity[] = [];
    // One command after another: each already reads and writes its items concurrently.
    for (const { items, judgedAt } of expiries) expired.push(...(await rights.expireMany(items, judgedAt)));
    const events = [
      ...issued.flatMap((right) => eventsFor(right, [RightEventTypes.created], systemActor('subscriptions'))),
      ...expired.flatMap((right) => eventsFor(right, [RightEventTypes.expired], systemActor('scheduler'))),
    ];
    await recordAndPublish(
      history,
      broker,
      events.map((event) => outboxEntry(Exchanges.rightsEvents, event)),
    );
    const publishedAt = clock();
    for (const issue of issues) observeRenewalLag(issue.dueAt, publishedAt);
    for (const right of expired) observeExpiryLag(right.end, publishedAt);
    // One by one: each cascade reads and changes every right of its subscription (through the outbox).
    for (const command of commands) if (command.type === CommandTypes.rightsCascade) await rights.cascade(command.data);
    onStored();
  };
  await consume(
    broker,
    {
      queue: RIGHTS_COMMAND_QUEUE,
      bindings: commandBindings(RIGHTS_COMMAND_QUEUE),
      parse: (body) => {
        const command = parseEvent(RightsCommands, body);
        // A command whose intervals do not parse can never succeed: dead-letter it at once.
        if (command.type === CommandTypes.rightsIssue) {
          for (const right of command.data.rights) {
            const interval = parseTimeInterval(right.timeInterval);
            if (!interval.ok)
              throw new InvalidMessage(`rights[${right.templateIndex}].timeInterval: ${interval.reason}`);
          }
        }
        return command;
      },
      handle: (command) => handleBatch([command]),
      // Many `rights.issue` arrive at once in a renewal: their rights go into few insertMany
      // calls. Bounded: a command carries up to 100 rights (or 500 expiries), so a batch holds
      // at most 5,000 rights (250 messages of 100 rights exhausted a 256 MB heap).
      prefetch: 100,
      batch: { max: 50, lingerMs: 20, handle: (messages) => handleBatch(messages.map(({ message }) => message)) },
    },
    logger.child({ component: 'commands' }),
  );
}
