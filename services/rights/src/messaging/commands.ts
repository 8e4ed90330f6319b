import { COMMAND_QUEUES, CommandTypes, Exchanges, InvalidMessage, parseEvent, RightsCommands } from '@rs/contracts';
import type { Logger } from '@rs/logging';
import { consume, type AmqpClient } from '@rs/messaging';
import { parseTimeInterval } from '@rs/time';
import type { RightsUseCases } from '../rights';

export const RIGHTS_COMMAND_QUEUE = 'rights.commands';

/**
 * The rights service's command queue (DESIGN.md 2): expiry from the scheduler, issue and
 * cascade from the subscriptions service. Malformed commands are dead-lettered at once;
 * failures are retried, then dead-lettered. Every handler is idempotent.
 */
export async function consumeRightsCommands(
  broker: AmqpClient,
  rights: RightsUseCases,
  logger: Logger,
  onStored: () => void,
): Promise<void> {
  await consume(
    broker,
    {
      queue: RIGHTS_COMMAND_QUEUE,
      bindings: COMMAND_QUEUES[RIGHTS_COMMAND_QUEUE]!.map((routingKey) => ({
        exchange: Exchanges.commands,
        routingKey,
      })),
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
      handle: async (command) => {
        switch (command.type) {
          case CommandTypes.rightsExpire:
            await rights.expire(command.data.connectId, command.data.rightId);
            break;
          case CommandTypes.rightsIssue:
            await rights.issueForPeriod(command.data);
            break;
          case CommandTypes.rightsCascade:
            await rights.cascade(command.data);
            break;
        }
        onStored();
      },
    },
    logger.child({ component: 'commands' }),
  );
}
