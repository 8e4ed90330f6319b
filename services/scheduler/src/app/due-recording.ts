import type { CloudEvent, RightEventData, SchedulerHoldData, SubscriptionEventData } from '@rs/contracts';
import type { Logger } from '@rs/logging';
import type { AmqpClient } from '@rs/messaging';
import { counter } from '@rs/telemetry/metrics';
import type { Clock } from '@rs/time';
import { dueWithin, type ClockEntity, type ClockWork } from '../domain/clock';
import { dueAfterRightEvent, dueAfterSubscriptionEvent, type DueAfter } from '../domain/due';
import type { ClockDueItem, DueItem, DueStore } from '../store/due-store';
import { commandOnClock } from './clock-commands';
import type { ClockLaneShares } from './clock-shares';
import type { ClockRecordings } from './clock-view';

/** The live test clocks among these ids (a deleted one is absent), as the recorders need them. */
export type LiveClocks = (
  clockIds: readonly string[],
) => Promise<Map<string, Pick<ClockEntity, 'advancingTo' | 'grantorId'>>>;

const landedLate = counter(
  'scheduler_due_items_landed_late_total',
  'Due items whose recording finished after their second may have been swept (also recorded as soon)',
  ['collection'],
);

/** What an event of an object says is due after it. */
interface FollowedEvents<Data> {
  store: DueStore;
  kind: ClockWork['kind'];
  dueOf(event: CloudEvent<Data>): DueAfter;
  /** What else an event on a test clock makes the clock's advance wait for (docs/decisions/0048). */
  expectedOf?(event: CloudEvent<Data>): ClockDueItem[];
}

/** An event of an object that lives on real time or on a test clock. */
type ObjectData = { connectId: string; sequence: number; clockId?: string | null | undefined };

export interface DueRecordingOptions {
  broker: AmqpClient;
  stores: { rightExpiries: DueStore; subscriptionSchedules: DueStore; holdExpiries: DueStore };
  logger: Logger;
  clock: Clock;
  /** Which test clocks are live: what lives on a deleted one is not kept (docs/decisions/0048). */
  liveClocks: LiveClocks;
  /** Told what is recorded on test clocks, for this replica's clock driver. */
  recordings: ClockRecordings;
  /** What each grantor has in the clock lane: what it may command now (docs/decisions/0065). */
  shares: ClockLaneShares;
  /** Told which objects were seen created on a clock: their places there are confirmed (domain/clock-places.ts). */
  createdOnClock: (clockId: string, ids: readonly string[]) => Promise<void>;
}

/**
 * Keeps the scheduler's projections current (docs/architecture.md): each event that leaves
 * something due records that due time, as of the event's sequence. An event after which nothing
 * is due (expired, removed, deleted) records nothing: the version due before it finds nothing to
 * do when its time comes. What lives on a test clock is kept by its clock, every version
 * (docs/decisions/0048).
 */
export class DueRecording {
  constructor(private readonly options: DueRecordingOptions) {}

  /** Rights' events: when each right expires. */
  rightEvents(events: Array<CloudEvent<RightEventData>>): Promise<void> {
    const { rightExpiries } = this.options.stores;
    return this.record(events, { store: rightExpiries, kind: 'expiry', dueOf: dueAfterRightEvent });
  }

  /**
   * Subscriptions' events: when each renews. The rights a change on a clock issued are kept
   * under the instant of the change (the event's time on a clock's object), which the clock's
   * time does not pass until they are recorded.
   */
  subscriptionEvents(events: Array<CloudEvent<SubscriptionEventData>>): Promise<void> {
    return this.record(events, {
      store: this.options.stores.subscriptionSchedules,
      kind: 'renewal',
      dueOf: dueAfterSubscriptionEvent,
      expectedOf: ({ data, time }) =>
        (data.issuedRights ?? []).map((rightId) => ({
          id: rightId,
          sequence: 0,
          connectId: data.connectId,
          clockId: data.clockId!,
          dueAt: null,
          expected: true,
          instant: new Date(time),
        })),
    });
  }

  /**
   * `scheduler.hold` from the rights service (docs/decisions/0045): when the holds of a
   * consumption across rights or of a reservation lapse. At its time the sweeper commands
   * `rights.settle`, which finds nothing to do for a record settled before; a reservation on a
   * test clock lapses when an advance passes its end.
   */
  async holds(commands: Array<CloudEvent<SchedulerHoldData>>): Promise<void> {
    const { stores, clock, recordings } = this.options;
    const items = commands.map(({ data }) => ({
      id: data.consumptionId,
      dueAt: new Date(data.until),
      sequence: 1,
      connectId: data.connectId,
      clockId: data.clockId,
    }));
    const live = await this.live(items.map((item) => item.clockId));
    const onClocks = items.flatMap(({ clockId, ...item }) =>
      clockId && live.has(clockId) ? [{ ...item, clockId }] : [],
    );
    recordings.recorded('hold', await stores.holdExpiries.recordOnClocks(onClocks, clock));
    await this.recordDue(
      stores.holdExpiries,
      items.flatMap(({ clockId, ...item }) => (clockId ? [] : [item])),
    );
  }

  private async record<Data extends ObjectData>(
    events: Array<CloudEvent<Data>>,
    followed: FollowedEvents<Data>,
  ): Promise<void> {
    const { store, kind, dueOf, expectedOf = () => [] } = followed;
    const { broker, stores, clock, recordings } = this.options;
    const live = await this.live(events.map((event) => event.data.clockId));
    const onClocks = events.filter((event) => event.data.clockId && live.has(event.data.clockId));
    // A version due within its clock's advance is commanded as soon as it is recorded, within
    // its grantor's share of the clock lane (its mark tells the clock's driver so: it commands
    // it again only if nothing came of it); one beyond waits for the driver's next step.
    const commandedAt = clock();
    const versions = onClocks.map((event) => {
      const { id, dueAt, snapshot, instant } = dueOf(event);
      const { sequence, connectId, clockId } = event.data;
      return {
        id,
        dueAt,
        sequence,
        connectId,
        clockId: clockId!,
        ...(snapshot ? { snapshot } : {}),
        ...(instant === undefined ? {} : { instant }),
      };
    });
    this.options.shares.done(
      kind,
      versions.map(({ id }) => id),
    );
    const admitted = new Set(this.admitted(kind, versions, live));
    const marked = versions.map((version) => (admitted.has(version) ? { ...version, commandedAt } : version));
    // The rights a change on a clock issued are expected before the change itself is recorded:
    // an advance never sees the one without the other.
    recordings.recorded('expiry', await stores.rightExpiries.recordOnClocks(onClocks.flatMap(expectedOf), clock));
    recordings.recorded(kind, await store.recordOnClocks(marked, clock));
    // An object's first version is its creation: the place its announcement took is its own now.
    const created = new Map<string, string[]>();
    for (const { id, sequence, clockId } of marked)
      if (sequence === 1) created.set(clockId, [...(created.get(clockId) ?? []), id]);
    for (const [clockId, ids] of created) await this.options.createdOnClock(clockId, ids);
    await commandOnClock(
      broker,
      kind,
      marked.flatMap((version) => ('commandedAt' in version ? [{ ...version, dueAt: version.dueAt! }] : [])),
    );
    await this.recordDue(
      store,
      events.flatMap((event) => {
        if (event.data.clockId) return [];
        const { id, dueAt, snapshot } = dueOf(event);
        if (!dueAt) return [];
        const { sequence, connectId } = event.data;
        return [{ id, dueAt, sequence, connectId, ...(snapshot ? { snapshot } : {}) }];
      }),
    );
  }

  /** The versions due within their clock's advance that their grantors' shares let be commanded now. */
  private admitted<Version extends { id: string; dueAt: Date | null; clockId: string }>(
    kind: ClockWork['kind'],
    versions: readonly Version[],
    live: Map<string, Pick<ClockEntity, 'advancingTo' | 'grantorId'>>,
  ): Version[] {
    const byGrantor = new Map<string, Version[]>();
    for (const version of versions) {
      const onClock = live.get(version.clockId)!;
      if (!dueWithin(onClock, version.dueAt)) continue;
      const due = byGrantor.get(onClock.grantorId);
      if (due) due.push(version);
      else byGrantor.set(onClock.grantorId, [version]);
    }
    return [...byGrantor].flatMap(([grantorId, due]) => this.options.shares.take(grantorId, kind, due));
  }

  /** The live clocks among those named (none asked when none is named). */
  private async live(clockIds: ReadonlyArray<string | null | undefined>) {
    const named = [...new Set(clockIds.flatMap((clockId) => (clockId ? [clockId] : [])))];
    return named.length === 0
      ? new Map<string, Pick<ClockEntity, 'advancingTo' | 'grantorId'>>()
      : this.options.liveClocks(named);
  }

  /** Records due items; those that may have landed after their second was swept are counted and logged. */
  private async recordDue(store: DueStore, items: DueItem[]): Promise<void> {
    const late = await store.recordMany(items, this.options.clock);
    if (late > 0) {
      landedLate.inc({ collection: store.collection }, late);
      this.options.logger.warn(
        { collection: store.collection, items: late },
        'due items landed late: recorded as soon too',
      );
    }
  }
}
