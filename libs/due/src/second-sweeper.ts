import { secondOf } from './seconds';

/** Where a sweeper's position is kept between sweeps and across restarts and owners. */
export interface SweepCursor {
  /** The last second saved as swept, or null before the first save. */
  read(): Promise<number | null>;
  save(second: number): Promise<void>;
}

export interface SecondSweeperOptions<T> {
  /** The items due in one second (one equality query). */
  read(second: number): Promise<T[]>;
  /**
   * Hands on the items of one second, in the sweep at `now`. A rejection leaves the second
   * unswept: the sweep ends there, and the next one reads it again.
   */
  handle(items: T[], second: number, now: Date): Promise<void>;
  /**
   * Called once every item a second held has been handed on (after `handle`, or after the
   * last of an early second's handings), before the position moves past it: where a store
   * deletes the second. A rejection leaves the second unswept, as for `handle`.
   */
  finish?(second: number): Promise<void>;
  /**
   * Hand on the items of the second under way as they fall due (`dueAt`, ms), instead of once
   * it has passed: a burst due at the start of a second goes out within a sweep of that start
   * rather than a second later. A second is read once, when a sweep first reaches it while
   * it is under way or `aheadS` seconds before it begins (default 0): a burst read ahead is in
   * memory when its second begins, and goes out at the first sweep in it instead of after a
   * read of the whole burst. Each sweep in it hands on what has fallen due since; once it has
   * passed, the rest are handed on and it is finished. Nothing is read again: writers must
   * treat a second as read `aheadS` seconds before its start (`SweepTiming.lagS` -1 - aheadS in
   * `landedLate`). Needs `lagS` 0.
   */
  early?: { dueAt(item: T): number; aheadS?: number };
  cursor: SweepCursor;
  /**
   * Where a sweeper starts: the first ever `firstLookBackS` seconds back; a (re)started one
   * `restartMarginS` seconds before its saved cursor (default 0; for clocks of other owners).
   */
  start: { firstLookBackS: number; restartMarginS?: number };
  /**
   * What one sweep reads at most, so a sweeper catching up after hours still ends its sweep
   * soon: `seconds`, and the items handed on (memory and time bound; the rest wait).
   */
  perSweep: { seconds: number; items: number };
  /** Seconds to stay behind the last second that has fully passed (see `SweepTiming`; default 0). */
  lagS?: number;
  /**
   * Read every second again this long after it was swept, for writes that landed after the
   * first read; `onLate` hears of what that second look finds. Without it, writers keep the
   * late-write rule (`landedLate`) themselves.
   */
  secondLook?: { afterS: number; onLate(second: number, items: number): void };
  /** While nothing is due, the position is saved at least this often (default: at every sweep). */
  saveEveryMs?: number;
  /**
   * The position that may be saved when `swept` seconds are swept: less when items handed on
   * are not yet safe elsewhere (a crash must sweep them again). Default: `swept`.
   */
  safePosition?(swept: number): number;
}

/** A second under way or about to begin, read early: what it held, and what is not handed on yet. */
interface OpenSecond<T> {
  held: number;
  pending: T[];
}

interface Position {
  /** Last second swept. */
  second: number;
  /** Last second looked at a second time. */
  secondLook: number;
  savedAt: number;
  /** The second last saved. */
  savedSecond: number;
}

/**
 * Sweeps due work one whole second at a time (the scheduler's due items, the webhooks'
 * deliveries): every second that has passed, `lagS` behind the clock, is read by its key in
 * order and its items handed on; the position is saved after each second that held items,
 * at least every `saveEveryMs`, and when a sweep ends behind (catching up) or stops; a
 * restarted or new owner goes on from the saved position. One sweep at a time per instance.
 */
export class SecondSweeper<T> {
  private position: Position | undefined;
  /** Seconds read early, by second. */
  private readonly open = new Map<number, OpenSecond<T>>();
  private stopping = false;

  constructor(private readonly options: SecondSweeperOptions<T>) {
    if (options.early && (options.lagS ?? 0) !== 0) throw new Error('a sweeper that hands on early reads with lagS 0');
  }

  /** Ends the sweep under way after the second it is on (position saved), and sweeps no more. */
  stop(): void {
    this.stopping = true;
  }

  /** The last second swept (undefined before the first sweep). */
  get swept(): number | undefined {
    return this.position?.second;
  }

  async sweep(now: Date): Promise<void> {
    if (this.stopping) return;
    const { options } = this;
    const position = this.position ?? (await this.load(now));
    this.position = position;
    const lastPassed = secondOf(now) - 1 - (options.lagS ?? 0);
    const until = Math.min(lastPassed, position.second + options.perSweep.seconds);
    let handed = 0;
    while (!this.stopping && position.second < until && handed < options.perSweep.items) {
      const second = position.second + 1;
      const opened = this.open.get(second);
      const items = opened ? opened.pending : await options.read(second);
      if (items.length > 0) {
        await options.handle(items, second, now);
        handed += items.length;
      }
      const held = (opened?.held ?? 0) > 0 || items.length > 0;
      if (held) await options.finish?.(second);
      this.open.delete(second);
      position.second = second;
      if (held || now.getTime() - position.savedAt >= (options.saveEveryMs ?? 0)) await this.save(now);
    }
    // Catching up, or stopping: a successor goes on from here rather than from the last save.
    if (position.second > position.savedSecond && (position.second < lastPassed || this.stopping)) await this.save(now);
    if (options.early && !this.stopping && position.second === lastPassed && handed < options.perSweep.items)
      await this.handDue(secondOf(now), options.early, now);
    if (options.secondLook) await this.lookAgain(position, options.secondLook, now);
  }

  /**
   * Hands on what has fallen due in the second under way, reading it the first time; then reads
   * the `aheadS` seconds after it that are not read yet, so they are in memory when they begin.
   */
  private async handDue(current: number, early: NonNullable<SecondSweeperOptions<T>['early']>, now: Date) {
    const open = await this.opened(current);
    const due = open.pending.filter((item) => early.dueAt(item) <= now.getTime());
    if (due.length > 0) {
      await this.options.handle(due, current, now);
      open.pending = open.pending.filter((item) => early.dueAt(item) > now.getTime());
    }
    for (let ahead = 1; ahead <= (early.aheadS ?? 0) && !this.stopping; ahead++) await this.opened(current + ahead);
  }

  private async opened(second: number): Promise<OpenSecond<T>> {
    let open = this.open.get(second);
    if (!open) {
      const items = await this.options.read(second);
      open = { held: items.length, pending: items };
      this.open.set(second, open);
    }
    return open;
  }

  private async lookAgain(position: Position, look: NonNullable<SecondSweeperOptions<T>['secondLook']>, now: Date) {
    const until = Math.min(position.second - look.afterS, position.secondLook + this.options.perSweep.seconds);
    while (!this.stopping && position.secondLook < until) {
      const second = position.secondLook + 1;
      const late = await this.options.read(second);
      if (late.length > 0) {
        look.onLate(second, late.length);
        await this.options.handle(late, second, now);
        await this.options.finish?.(second);
      }
      position.secondLook = second;
    }
  }

  private async load(now: Date): Promise<Position> {
    const saved = await this.options.cursor.read();
    const { firstLookBackS, restartMarginS = 0 } = this.options.start;
    const second = saved === null ? secondOf(now) - firstLookBackS : saved - restartMarginS;
    const secondLook = second - (this.options.secondLook?.afterS ?? 0);
    return { second, secondLook, savedAt: now.getTime(), savedSecond: second };
  }

  private async save(now: Date): Promise<void> {
    const position = this.position!;
    const safe = this.options.safePosition?.(position.second) ?? position.second;
    await this.options.cursor.save(Math.min(safe, position.second));
    position.savedAt = now.getTime();
    position.savedSecond = position.second;
  }
}
