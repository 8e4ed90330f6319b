import { counter } from '@rs/telemetry/metrics';
import type { Clock } from '@rs/time';
import type { ClockWork } from '../domain/clock';
import { roomOf } from '../domain/clock-shares';

const waited = counter(
  'scheduler_clock_items_waited_total',
  'Items due on test clocks not commanded when due because their grantor had its share of the clock lane in hand',
);

/** An item due on a clock, as shares count it. */
interface SharedItem {
  id: string;
  dueAt: Date | null;
}

/**
 * The items on test clocks this replica has commanded and whose next version it has not seen
 * yet, by grantor: what each grantor has in the clock lane (docs/decisions/0065). An item leaves
 * its grantor's count when its next version is recorded here, or once a command of it would be
 * sent again (`forgetAfterMs`: lost with a crash, or recorded by another replica). A hold's lapse
 * makes no version to wait for, and holds are few (RIGHT_MAX_HOLDS a right): they are not counted.
 */
export class ClockLaneShares {
  /** Commanded items, the oldest first (a Map keeps the order of insertion). */
  private readonly commanded = new Map<string, { grantorId: string; at: number }>();
  private readonly inHand = new Map<string, number>();

  constructor(
    private readonly options: {
      /** TEST_CLOCK_LANE_ITEMS: the items commanded at once, shared by the grantors that have some. */
      total: number;
      forgetAfterMs: number;
      clock: Clock;
    },
  ) {}

  /**
   * Of these items due on `grantorId`'s clocks, those to command now (the earliest due first),
   * counted in the grantor's share until done; the others wait for a later step of their clock.
   */
  take<Item extends SharedItem>(grantorId: string, kind: ClockWork['kind'], due: readonly Item[]): Item[] {
    if (kind === 'hold') return [...due];
    const now = this.options.clock().getTime();
    this.forgetBefore(now - this.options.forgetAfterMs);
    let room = roomOf(this.options.total, this.inHand, grantorId);
    const chosen = new Set<Item>();
    const earliestFirst = [...due].sort((a, b) => (a.dueAt?.getTime() ?? 0) - (b.dueAt?.getTime() ?? 0));
    for (const item of earliestFirst) {
      const key = `${kind}:${item.id}`;
      const again = this.commanded.has(key);
      if (!again && room === 0) continue;
      if (again) this.commanded.delete(key);
      else {
        room -= 1;
        this.inHand.set(grantorId, (this.inHand.get(grantorId) ?? 0) + 1);
      }
      this.commanded.set(key, { grantorId, at: now });
      chosen.add(item);
    }
    if (chosen.size < due.length) waited.inc(due.length - chosen.size);
    return due.filter((item) => chosen.has(item));
  }

  /** A version of these items was recorded: what was commanded of them is done. */
  done(kind: ClockWork['kind'], ids: readonly string[]): void {
    for (const id of ids) this.forget(`${kind}:${id}`);
  }

  private forgetBefore(at: number): void {
    for (const [key, { at: commandedAt }] of this.commanded) {
      if (commandedAt >= at) return;
      this.forget(key);
    }
  }

  private forget(key: string): void {
    const commanded = this.commanded.get(key);
    if (!commanded) return;
    this.commanded.delete(key);
    const left = (this.inHand.get(commanded.grantorId) ?? 1) - 1;
    if (left > 0) this.inHand.set(commanded.grantorId, left);
    else this.inHand.delete(commanded.grantorId);
  }
}
