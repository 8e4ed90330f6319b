import type { Clock, Principal } from '@rs/contracts';

/**
 * A test clock as the scheduler holds it (docs/decisions/0048): a grantor's own time, moved
 * forward only. `time` is the clock's now; `advancingTo` where the last advance goes.
 */
export interface ClockEntity {
  clockId: string;
  grantorId: string;
  time: Date;
  advancingTo: Date;
  /** `advancing` from an advance until everything due up to `advancingTo` has happened. */
  status: Clock['status'];
  generation: number;
  createdAt: Date;
  updatedAt: Date;
}

/** A clock is its grantor's (and the admins'): anyone else is told it does not exist. */
export const canUseClock = (principal: Principal, clock: Pick<ClockEntity, 'grantorId'>): boolean =>
  principal.admin || (principal.scheme === 'basic' && principal.grantorId === clock.grantorId);

/** A client creates clocks for its own grantor (as subscriptions and rights), an admin for any. */
export const canCreateClockFor = (principal: Principal, grantorId: string): boolean =>
  principal.admin || (principal.scheme === 'basic' && principal.grantorId === grantorId);

/**
 * An advance to `to` (docs/decisions/0048): forward only, from where the last advance goes;
 * to the same instant it changes nothing. The clock is `advancing` until its driver has
 * stepped it there (`nextStep`). Pure.
 */
export function advance(
  clock: ClockEntity,
  to: Date,
  now: Date,
  /** The furthest a clock may go: TEST_CLOCK_MAX_ADVANCE past real time. */
  latest: Date,
):
  | { kind: 'change'; next: ClockEntity }
  | { kind: 'unchanged' }
  | { kind: 'conflict'; reason: string }
  | { kind: 'invalid'; reason: string } {
  if (to > latest) return { kind: 'invalid', reason: beyondLatest(latest) };
  if (to < clock.advancingTo)
    return {
      kind: 'conflict',
      reason: `clock ${clock.clockId} never goes back: it is at or going to ${clock.advancingTo.toISOString()}`,
    };
  if (to.getTime() === clock.advancingTo.getTime()) return { kind: 'unchanged' };
  return {
    kind: 'change',
    next: { ...clock, advancingTo: to, status: 'advancing', generation: clock.generation + 1, updatedAt: now },
  };
}

/** Why an instant past `latest` is refused, for the clock's creation and its advances. */
export const beyondLatest = (latest: Date): string =>
  `a test clock goes at most TEST_CLOCK_MAX_ADVANCE past real time: ${latest.toISOString()} now`;

/** A version of something on a clock, as an advance weighs it (the scheduler keeps every version). */
export interface ClockWork {
  /** Names the stored version. */
  ref: string;
  /** Which work: a subscription's renewal, a right's expiry, a hold's lapse. */
  kind: 'renewal' | 'expiry' | 'hold';
  id: string;
  sequence: number;
  /** When it falls due on the clock; null when nothing is due after this version. */
  dueAt: Date | null;
  /** A right a change issued, whose creation is not recorded yet. */
  expected: boolean;
  recordedAt: Date;
  /** When the scheduler that recorded it commanded it at once (it was due within the clock's advance), else null. */
  commandedAt: Date | null;
  /**
   * The instant it is kept under, let go once the clock's time passes it: its due time, a
   * right's end, a right expected the instant of the change that issued it; null, never.
   */
  instant: Date | null;
}

/** The commands an item due on a clock has had: how many, the last when (the driver's memory). */
export interface Attempts {
  count: number;
  lastAt: Date;
}

/**
 * How long an advance waits for a commanded item's next version before it commands it again
 * (a command lost with a crash), how often it does, and how long it waits for a right a change
 * issued (a template its grantor may no longer grant issues none: docs/api.md "Who may grant what").
 */
export const ADVANCE_PATIENCE = { recommandAfterMs: 20_000, maxAttempts: 3, expectForMs: 60_000 };

/**
 * The latest version of each item, without a right's last version once nothing is due after it
 * (it expired or was removed); and the superseded versions to let go of one by one: those kept
 * under a later instant than the version that superseded them (every other goes with its
 * instant, after or with the one that superseded it, so that no older version is ever left
 * alone to look current). Should an older version come again (an event delivered twice), it is
 * commanded again, and the service's answer, the same event again, records the same newer
 * version again. Pure.
 */
export function latestOf(work: readonly ClockWork[]): { latest: ClockWork[]; letGo: ClockWork[] } {
  const latest = new Map<string, ClockWork>();
  const superseded: Array<{ version: ClockWork; by: string }> = [];
  for (const version of work) {
    const key = `${version.kind}:${version.id}`;
    const kept = latest.get(key);
    if (!kept) latest.set(key, version);
    else if (kept.sequence < version.sequence) {
      superseded.push({ version: kept, by: key });
      latest.set(key, version);
    } else superseded.push({ version, by: key });
  }
  const at = (version: ClockWork) => version.instant?.getTime() ?? Infinity;
  const letGo = superseded.filter(({ version, by }) => at(version) > at(latest.get(by)!)).map(({ version }) => version);
  const done = (version: ClockWork) => version.kind === 'expiry' && version.dueAt === null && !version.expected;
  return { latest: [...latest.values()].filter((version) => !done(version)), letGo };
}

/**
 * The instants a clock's time has passed under which versions are kept, whose versions can go
 * (by key, in one delete each): all but those of a version still outstanding there (one
 * recorded late, under an instant the time had passed). Pure.
 */
export function passedInstants(work: readonly ClockWork[], outstanding: readonly ClockWork[], time: Date): Date[] {
  const held = new Set(outstanding.flatMap((version) => (version.instant ? [version.instant.getTime()] : [])));
  const passed = new Set<number>();
  for (const { instant } of work)
    if (instant && instant < time && !held.has(instant.getTime())) passed.add(instant.getTime());
  return [...passed].sort((a, b) => a - b).map((instant) => new Date(instant));
}

/**
 * Whether a version recorded on a clock is commanded as it is recorded (docs/decisions/0048):
 * it falls due within where the clock is going. Its command is at its own instant.
 */
export const dueWithin = (clock: Pick<ClockEntity, 'advancingTo'>, dueAt: Date | null): dueAt is Date =>
  dueAt !== null && dueAt <= clock.advancingTo;

/** What a clock's driver does in a tick. */
export interface ClockStep {
  /** Commands for these, each at its own due instant: due within the advance, and not commanded lately. */
  command: ClockWork[];
  /** What the clock waits for: commanded and not superseded yet, or expected and not recorded yet. */
  outstanding: ClockWork[];
  /**
   * The clock's time: the earliest instant something is still to happen at (everything due
   * before it has happened), never earlier than it was, at most its target.
   */
  time: Date;
  /** At its target with nothing outstanding: the advance is done. */
  ready: boolean;
}

/**
 * What a clock's driver does next (docs/decisions/0048), from the latest version of everything
 * on the clock. Everything due up to where the clock is going is commanded, each item at its
 * own instant and independently of the others: an item's next version (a subscription's next
 * period, the right a renewal issued) exists only once its command has happened, so each
 * object goes through its instants in order, and objects on a clock do not wait for one
 * another. The clock's time follows as a watermark: the earliest instant still outstanding (a
 * right a change issued and not yet recorded holds it where it is). An item whose commands
 * changed nothing `maxAttempts` times (it fails alone, and was dead-lettered) no longer holds
 * the clock. Pure.
 */
export function nextStep(
  clock: Pick<ClockEntity, 'time' | 'advancingTo' | 'status'>,
  latest: readonly ClockWork[],
  now: Date,
  attemptsOf: (ref: string) => Attempts | undefined,
  patience = ADVANCE_PATIENCE,
): ClockStep {
  const command: ClockWork[] = [];
  const outstanding: ClockWork[] = [];
  let earliest = clock.advancingTo.getTime();
  for (const work of latest) {
    if (work.expected) {
      if (now.getTime() - work.recordedAt.getTime() >= patience.expectForMs) continue;
      outstanding.push(work);
      // An expected right holds the time at the change that issued it (where it is, if unknown).
      earliest = Math.min(earliest, (work.instant ?? clock.time).getTime());
      continue;
    }
    if (!dueWithin(clock, work.dueAt)) continue;
    const attempts = attemptsOf(work.ref) ?? (work.commandedAt ? { count: 1, lastAt: work.commandedAt } : undefined);
    if (attempts && attempts.count >= patience.maxAttempts) continue;
    outstanding.push(work);
    earliest = Math.min(earliest, work.dueAt.getTime());
    if (!attempts || now.getTime() - attempts.lastAt.getTime() >= patience.recommandAfterMs) command.push(work);
  }
  const time = new Date(Math.max(clock.time.getTime(), earliest));
  return { command, outstanding, time, ready: clock.status === 'advancing' && outstanding.length === 0 };
}

/** The clock as the API returns it. */
export function representation(clock: ClockEntity, publicBaseUrl: string): Clock {
  return {
    clockId: clock.clockId,
    href: `${publicBaseUrl}/clocks/${clock.clockId}`,
    generation: String(clock.generation),
    grantorId: clock.grantorId,
    time: clock.time.toISOString().replace('.000Z', 'Z'),
    advancingTo: clock.advancingTo.toISOString().replace('.000Z', 'Z'),
    status: clock.status,
  };
}
