import {
  commandBindings,
  Exchanges,
  namesAClock,
  parseEvent,
  SchedulerCommands,
  RightEvents,
  SubscriptionEvents,
  type CloudEvent,
  type EventSchemas,
  type SchedulerHoldData,
} from '@rs/contracts';
import type { Logger } from '@rs/logging';
import { consume, type AmqpClient, type ConsumerSpec } from '@rs/messaging';
import type { DueRecording } from '../app/due-recording';

export const SCHEDULER_RIGHT_EVENTS_QUEUE = 'scheduler.rights-events';
export const SCHEDULER_SUBSCRIPTION_EVENTS_QUEUE = 'scheduler.subscriptions-events';
export const SCHEDULER_COMMAND_QUEUE = 'scheduler.commands';

/** Events handled together: a bulk renewal's events are recorded in few `insertMany` calls. */
const BATCH = { max: 500, lingerMs: 25 };

/** A queue of the scheduler, its messages handled one by one or in batches by `record`. */
function follow<M>(
  broker: AmqpClient,
  spec: Pick<ConsumerSpec<M>, 'queue' | 'bindings' | 'parse' | 'lane'>,
  record: (messages: M[]) => Promise<void>,
  logger: Logger,
): Promise<void> {
  return consume(
    broker,
    {
      ...spec,
      prefetch: BATCH.max * 2,
      handle: (message) => record([message]),
      batch: { ...BATCH, handle: (messages) => record(messages.map(({ message }) => message)) },
    },
    logger,
  );
}

/** An event queue bound to one family of events; a rehearsal's events wait in the clock lane (docs/decisions/0054). */
const events = <S extends EventSchemas>(queue: string, exchange: string, routingKey: string, schemas: S) => ({
  queue,
  bindings: [{ exchange, routingKey }],
  parse: (body: unknown) => parseEvent(schemas, body),
  lane: { holds: (event: CloudEvent<{ clockId?: string | null }>) => namesAClock(event.data) },
});

/** The services' events, each recording what is due after it (`DueRecording`). */
export async function followEvents(broker: AmqpClient, recording: DueRecording, logger: Logger): Promise<void> {
  await follow(
    broker,
    events(SCHEDULER_RIGHT_EVENTS_QUEUE, Exchanges.rightsEvents, 'right.*', RightEvents),
    (received) => recording.rightEvents(received),
    logger.child({ component: 'right-events' }),
  );
  await follow(
    broker,
    events(SCHEDULER_SUBSCRIPTION_EVENTS_QUEUE, Exchanges.subscriptionsEvents, 'subscription.*', SubscriptionEvents),
    (received) => recording.subscriptionEvents(received),
    logger.child({ component: 'subscription-events' }),
  );
}

/** `scheduler.hold` from the rights service (docs/decisions/0045): when holds lapse. */
export function followHolds(broker: AmqpClient, recording: DueRecording, logger: Logger): Promise<void> {
  return follow(
    broker,
    {
      queue: SCHEDULER_COMMAND_QUEUE,
      bindings: commandBindings(SCHEDULER_COMMAND_QUEUE),
      parse: (body) => parseEvent(SchedulerCommands, body) as CloudEvent<SchedulerHoldData>,
    },
    (commands) => recording.holds(commands),
    logger.child({ component: 'holds' }),
  );
}
