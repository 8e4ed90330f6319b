/**
 * Due work kept by the second it falls due in, so that every query for it is an equality
 * (FerretDB serves only top-level equality from an index; docs/decisions/0011, 0017). A
 * sweeper reads a second once it has passed; the rule below says when a write may have
 * come too late for that read. Pure.
 */

/** The whole second (Unix time) an instant falls in. */
export const secondOf = (at: Date | number): number => Math.floor(new Date(at).getTime() / 1000);

/** When a sweeper reads a second, and how far apart the clocks of writers and sweepers may be. */
export interface SweepTiming {
  /**
   * Seconds the sweeper stays behind the last second that has fully passed (0: reads it at
   * once; -1: reads it as it begins, less still ahead of it: `SecondSweeper`'s `early`).
   */
  lagS: number;
  /** How far apart the clocks of the writer and any sweeper may be. */
  clockSkewMs: number;
}

/**
 * The late-write rule: whether a write for `second` that finished at `landedAt` may have
 * landed after a sweeper (on any replica, its clock within `clockSkewMs`) read that second.
 * Such a write is not left for the sweeper: its writer hands it on itself.
 */
export function landedLate(second: number, landedAt: Date, timing: SweepTiming): boolean {
  return landedAt.getTime() >= (second + 1 + timing.lagS) * 1000 - timing.clockSkewMs;
}
