import type { Clock } from '@rs/time';
import type { ClockWork } from '../domain/clock';
import { secondOf } from '../domain/due';
import type { DueStore, StoredClockDueItem } from '../store/due-store';

/** The scheduler's collections of due work, by the work they hold. */
export const KINDS = { renewal: 'subscriptionSchedules', expiry: 'rightExpiries', hold: 'holdExpiries' } as const;
export type ClockStores = Record<(typeof KINDS)[keyof typeof KINDS], DueStore>;
const kinds = Object.keys(KINDS) as Array<ClockWork['kind']>;

/**
 * How a clock's driver learns what is kept on it (docs/decisions/0048). What its own replica
 * records is handed to it as it is recorded (`accept`). It reads all of it when it starts
 * driving the clock and every `FULL_READ_MS`; and while other scheduler replicas record too,
 * what was recorded in the seconds since its last read, each second read again for `LATE_S`
 * more (a recording stamped with its second may land a little later), and all of it again
 * before it declares an advance done. A busy clock records thousands of versions a second,
 * which the database takes seconds to read back.
 */
export const CLOCK_READS = { FULL_READ_MS: 30_000, LATE_S: 3, LET_GO_WHILE_ADVANCING_MS: 10_000 };

export interface ViewedVersion {
  work: ClockWork;
  item: StoredClockDueItem;
}

/** What a driver knows is kept on one clock: every version, by `ref`. */
export class ClockView {
  private readonly versions = new Map<string, ViewedVersion>();
  private fullAt = -Infinity;
  private readThrough = 0;
  private letGoAt = -Infinity;

  constructor(
    private readonly clockId: string,
    private readonly stores: ClockStores,
    private readonly clock: Clock,
  ) {}

  get work(): ClockWork[] {
    return [...this.versions.values()].map((version) => version.work);
  }

  item(ref: string): StoredClockDueItem {
    return this.versions.get(ref)!.item;
  }

  /** Versions this replica has just recorded on the clock. */
  accept(versions: readonly ViewedVersion[]): void {
    for (const version of versions) this.versions.set(version.work.ref, version);
  }

  /**
   * Brings the view up to date: everything, when due or `full`; else, when `othersRecord`, the
   * seconds since the last read. True when it read everything.
   */
  async refresh({ full = false, othersRecord }: { full?: boolean; othersRecord: boolean }): Promise<boolean> {
    const now = this.clock().getTime();
    const second = secondOf(now);
    if (full || now - this.fullAt >= CLOCK_READS.FULL_READ_MS) {
      const read = await this.read();
      // What was handed over while reading stays; what is gone from the stores goes.
      const kept = [...this.versions.values()].filter(
        ({ item }) => item.recordedAt.getTime() >= now - CLOCK_READS.FULL_READ_MS / 3,
      );
      this.versions.clear();
      this.accept(read);
      this.accept(kept);
      this.fullAt = now;
      this.readThrough = second;
      return true;
    }
    if (!othersRecord) return false;
    for (let recordedIn = this.readThrough - CLOCK_READS.LATE_S; recordedIn <= second; recordedIn++)
      for (const version of await this.read(recordedIn))
        if (!this.versions.has(version.work.ref)) this.versions.set(version.work.ref, version);
    this.readThrough = second;
    return false;
  }

  /** Removes these versions from the stores, and from the view. */
  async remove(versions: readonly ClockWork[]): Promise<void> {
    for (const kind of kinds) {
      const ofKind = versions.filter((version) => version.kind === kind);
      if (ofKind.length > 0) await this.stores[KINDS[kind]].remove(ofKind);
    }
    for (const version of versions) this.versions.delete(version.ref);
  }

  /**
   * Removes every version kept under these instants, from the stores and the view; while the
   * clock `advancing`, at most every `LET_GO_WHILE_ADVANCING_MS`.
   */
  async removePassed(instants: readonly Date[], advancing: boolean): Promise<void> {
    if (instants.length === 0) return;
    const now = this.clock().getTime();
    if (advancing && now - this.letGoAt < CLOCK_READS.LET_GO_WHILE_ADVANCING_MS) return;
    this.letGoAt = now;
    for (const collection of Object.values(KINDS)) await this.stores[collection].removePassed(this.clockId, instants);
    const passed = new Set(instants.map((instant) => instant.getTime()));
    for (const [ref, { work }] of this.versions)
      if (work.instant && passed.has(work.instant.getTime())) this.versions.delete(ref);
  }

  private async read(recordedIn?: number): Promise<ViewedVersion[]> {
    const read: ViewedVersion[] = [];
    for (const kind of kinds)
      for (const item of await this.stores[KINDS[kind]].ofClock(this.clockId, recordedIn))
        read.push(viewed(kind, item));
    return read;
  }
}

/** A stored version as a driver weighs it. */
export const viewed = (kind: ClockWork['kind'], item: StoredClockDueItem): ViewedVersion => ({
  item,
  work: { ...item, kind, expected: item.expected ?? false, commandedAt: item.commandedAt ?? null },
});

/**
 * Hands what this replica records on test clocks to its clock driver as it is recorded
 * (docs/decisions/0048): the recorders (events, holds, rebuild) tell, the driver listens.
 */
export class ClockRecordings {
  private listener: ((kind: ClockWork['kind'], items: readonly StoredClockDueItem[]) => void) | undefined;

  listen(listener: (kind: ClockWork['kind'], items: readonly StoredClockDueItem[]) => void): void {
    this.listener = listener;
  }

  recorded(kind: ClockWork['kind'], items: readonly StoredClockDueItem[]): void {
    if (items.length > 0) this.listener?.(kind, items);
  }
}
