import type { AmqpClient } from '@rs/messaging';
import type { ClockWork } from '../domain/clock';
import { expireCommand, renewCommand, settleCommand, type CommandedItem } from '../messages/commands';
import { commandItems } from './sweeper';

const TO_COMMAND = { renewal: renewCommand, expiry: expireCommand, hold: settleCommand } as const;

/**
 * Commands what is due on a test clock, each item at its own due instant (docs/decisions/0048):
 * the services judge a clock's command at its time alone, so items due at different instants go
 * in different commands.
 */
export async function commandOnClock(
  broker: AmqpClient,
  kind: ClockWork['kind'],
  items: ReadonlyArray<CommandedItem & { clockId: string }>,
): Promise<void> {
  const byInstant = new Map<number, CommandedItem[]>();
  for (const item of items) {
    const instant = item.dueAt.getTime();
    const due = byInstant.get(instant);
    if (due) due.push(item);
    else byInstant.set(instant, [item]);
  }
  await Promise.all(
    [...byInstant].map(([instant, due]) => commandItems(broker, due, TO_COMMAND[kind], new Date(instant))),
  );
}
