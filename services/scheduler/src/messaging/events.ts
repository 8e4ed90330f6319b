import type { Clock } from '@rs/time';
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
import { counter } from '@rs/telemetry/metrics';
import { commandOnClock } from '../app/clock-commands';
import type { ClockRecordings } from '../app/clock-view';
import { dueWithin, type ClockEntity, type ClockWork } from '../domain/clock';
import { dueAfterRightEvent, dueAfterSubscriptionEvent, type DueAfter } from '../domain/due';
import type { ClockDueItem, DueItem, DueStore } from '../store/due-store';

/** The live test clocks among these ids (a deleted one is absent), as the recorders need them. */
export type LiveClocks = (clockIds: readonly string[]) => Promise<Map<string, Pick<ClockEntity, 'advancingTo'>>>;

export const SCHEDULER_RIGHT_EVENTS_QUEUE = 'scheduler.rights-events';
export const SCHEDULER_SUBSCRIPTION_EVENTS_QUEUE = 'scheduler.subscriptions-events';
export const SCHEDULER_COMMAND_QUEUE = 'scheduler.commands';

/** The events the scheduler follows: its own queue bound to the events of one kind. */
const followed = <S extends EventSchemas>(queue: string, exchange: string, routingKey: string, schemas: S) => ({
  queue,
  bindings: [{ exchange, routingKey }],
  parse: (body: unknown) => parseEvent(schemas, body),
});
const RIGHT_EVENTS = followed(SCHEDULER_RIGHT_EVENTS_QUEUE, Exchanges.rightsEvents, 'right.*', RightEvents);
const SUBSCRIPTION_EVENTS = followed(
  SCHEDULER_SUBSCRIPTION_EVENTS_QUEUE,
  Exchanges.subscriptionsEvents,
  'subscription.*',
  SubscriptionEvents,
);

const landedLate = counter(
  'scheduler_due_items_landed_late_total',
  'Due items whose recording finished after their second may have been swept (also recorded as soon)',
  ['collection'],
);

/** Events handled together: a bulk renewal's events are recorded in few `insertMany` calls. */
const BATCH = { max: 500, lingerMs: 25 };

/** Records due items; those that may have landed after their second was swept are counted and logged. */
async function recordDueItems(store: DueStore, items: DueItem[], logger: Logger, clock: Clock): Promise<void> {
  const late = await store.recordMany(items, clock);
  if (late > 0) {
    landedLate.inc({ collection: store.collection }, late);
    logger.warn({ collection: store.collection, items: late }, 'due items landed late: recorded as soon too');
  }
}

/**
 * Keeps the scheduler's projections current from the services' events (docs/architecture.md):
 * each event that leaves something due records that due time, as of the event's sequence.
 * An event after which nothing is due (expired, removed, deleted) records nothing: the
 * version due before it finds nothing to do when its time comes.
 */
export async function followEvents(
  broker: AmqpClient,
  stores: { rightExpiries: DueStore; subscriptionSchedules: DueStore },
  logger: Logger,
  clock: Clock,
  /** Which test clocks are live: what lives on a deleted one is not kept (docs/decisions/0048). */
  liveClocks: LiveClocks,
  /** Told what is recorded on test clocks, for this replica's clock driver. */
  recordings: ClockRecordings,
): Promise<void> {
  const recordDue = (store: DueStore, items: DueItem[]) => recordDueItems(store, items, logger, clock);
  const follow = async <Data extends { connectId: string; sequence: number; clockId?: string | null | undefined }>(
    spec: Pick<ConsumerSpec<CloudEvent<Data>>, 'queue' | 'bindings' | 'parse'>,
    store: DueStore,
    dueOf: (event: CloudEvent<Data>) => DueAfter,
    kind: ClockWork['kind'],
    component: string,
    /** What else an event on a test clock makes the clock's advance wait for (docs/decisions/0048). */
    expectedOf: (event: CloudEvent<Data>) => ClockDueItem[] = () => [],
  ) => {
    const record = async (events: Array<CloudEvent<Data>>) => {
      const clocks = [...new Set(events.flatMap((event) => (event.data.clockId ? [event.data.clockId] : [])))];
      const live = clocks.length === 0 ? new Map() : await liveClocks(clocks);
      const onClocks = events.filter((event) => event.data.clockId && live.has(event.data.clockId));
      // What lives on a test clock is kept by its clock, every version (docs/decisions/0048);
      // a version due within the clock's advance is commanded as soon as it is recorded (its
      // mark tells the clock's driver so: it commands it again only if nothing came of it).
      const commandedAt = clock();
      const versions = onClocks.map((event) => {
        const { id, dueAt, snapshot, instant } = dueOf(event);
        const { sequence, connectId, clockId } = event.data;
        const due = dueWithin(live.get(clockId!)!, dueAt);
        return {
          id,
          dueAt,
          sequence,
          connectId,
          clockId: clockId!,
          ...(snapshot ? { snapshot } : {}),
          ...(due ? { commandedAt } : {}),
          ...(instant === undefined ? {} : { instant }),
        };
      });
      await rightExpiriesFirst(onClocks.flatMap(expectedOf), versions, store);
      await commandOnClock(
        broker,
        kind,
        versions.flatMap((version) => (version.commandedAt ? [{ ...version, dueAt: version.dueAt! }] : [])),
      );
      await recordDue(
        store,
        events.flatMap((event) => {
          if (event.data.clockId) return [];
          const { id, dueAt, snapshot } = dueOf(event);
          if (!dueAt) return [];
          const { sequence, connectId } = event.data;
          return [{ id, dueAt, sequence, connectId, ...(snapshot ? { snapshot } : {}) }];
        }),
      );
    };
    /** The rights a change on a clock issued are expected before the change itself is recorded: an advance never sees the one without the other. */
    const rightExpiriesFirst = async (expected: ClockDueItem[], versions: ClockDueItem[], own: DueStore) => {
      recordings.recorded('expiry', await stores.rightExpiries.recordOnClocks(expected, clock));
      recordings.recorded(kind, await own.recordOnClocks(versions, clock));
    };
    await consume(
      broker,
      {
        ...spec,
        prefetch: BATCH.max * 2,
        // A rehearsal's events wait in the clock lane, behind none of real time's (docs/decisions/0054).
        lane: { holds: (event) => namesAClock(event.data) },
        handle: (event) => record([event]),
        batch: { ...BATCH, handle: (messages) => record(messages.map(({ message }) => message)) },
      },
      logger.child({ component }),
    );
  };
  await follow(RIGHT_EVENTS, stores.rightExpiries, dueAfterRightEvent, 'expiry', 'right-events');
  await follow(
    SUBSCRIPTION_EVENTS,
    stores.subscriptionSchedules,
    dueAfterSubscriptionEvent,
    'renewal',
    'subscription-events',
    // Kept under the instant of the change that issued them (the event's time on a clock's
    // object), which the clock's time does not pass until they are recorded.
    ({ data, time }) =>
      (data.issuedRights ?? []).map((rightId) => ({
        id: rightId,
        sequence: 0,
        connectId: data.connectId,
        clockId: data.clockId!,
        dueAt: null,
        expected: true,
        instant: new Date(time),
      })),
  );
}

/**
 * `scheduler.hold` from the rights service (docs/decisions/0045): when the holds of a
 * consumption across rights or of a reservation lapse. Recorded as a due item; at its time
 * the sweeper commands `rights.settle`, which finds nothing to do for a record settled before.
 */
export async function followHolds(
  broker: AmqpClient,
  store: DueStore,
  logger: Logger,
  clock: Clock,
  /** Which test clocks are live: a reservation on a deleted one is not kept (docs/decisions/0048). */
  liveClocks: LiveClocks,
  /** Told what is recorded on test clocks, for this replica's clock driver. */
  recordings: ClockRecordings,
) {
  const record = async (commands: Array<CloudEvent<SchedulerHoldData>>) => {
    const items = commands.map(({ data }) => ({
      id: data.consumptionId,
      dueAt: new Date(data.until),
      sequence: 1,
      connectId: data.connectId,
      clockId: data.clockId,
    }));
    // A reservation on a test clock lapses when an advance passes its end (docs/decisions/0048).
    const clocks = [...new Set(items.flatMap((item) => (item.clockId ? [item.clockId] : [])))];
    const live = clocks.length === 0 ? new Map() : await liveClocks(clocks);
    recordings.recorded(
      'hold',
      await store.recordOnClocks(
        items.flatMap(({ clockId, ...item }) => (clockId && live.has(clockId) ? [{ ...item, clockId }] : [])),
        clock,
      ),
    );
    await recordDueItems(
      store,
      items.flatMap(({ clockId, ...item }) => (clockId ? [] : [item])),
      logger,
      clock,
    );
  };
  await consume(
    broker,
    {
      queue: SCHEDULER_COMMAND_QUEUE,
      bindings: commandBindings(SCHEDULER_COMMAND_QUEUE),
      parse: (body) => parseEvent(SchedulerCommands, body) as CloudEvent<SchedulerHoldData>,
      prefetch: BATCH.max * 2,
      handle: (command) => record([command]),
      batch: { ...BATCH, handle: (messages) => record(messages.map(({ message }) => message)) },
    },
    logger.child({ component: 'holds' }),
  );
}
