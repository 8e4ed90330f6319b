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
): { kind: 'change'; next: ClockEntity } | { kind: 'unchanged' } | { kind: 'conflict'; reason: string } {
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
 * The latest version of each item, and the versions the driver no longer needs: those a later
 * one has superseded, and a right's last version once nothing is due after it (it expired or
 * was removed). Should an older version of such a right come again (an event delivered twice),
 * its expiry is commanded again, and the rights service publishes the same `right.expired`
 * again, which records its last version again. Pure.
 */
export function latestOf(work: readonly ClockWork[]): { latest: ClockWork[]; superseded: ClockWork[] } {
  const latest = new Map<string, ClockWork>();
  const superseded: ClockWork[] = [];
  for (const version of work) {
    const key = `${version.kind}:${version.id}`;
    const kept = latest.get(key);
    if (!kept) latest.set(key, version);
    else if (kept.sequence < version.sequence) {
      superseded.push(kept);
      latest.set(key, version);
    } else superseded.push(version);
  }
  const done = (version: ClockWork) => version.kind === 'expiry' && version.dueAt === null && !version.expected;
  const kept = [...latest.values()];
  return { latest: kept.filter((version) => !done(version)), superseded: [...superseded, ...kept.filter(done)] };
}

export type ClockStep =
  /** Commands for these, at the clock's time: due by it, and not commanded lately. */
  | { kind: 'command'; work: ClockWork[] }
  /** Work commanded or expected whose effects are not recorded yet. */
  | { kind: 'wait' }
  /** Nothing outstanding: the clock moves on, to the next instant something falls due or its target. */
  | { kind: 'move'; to: Date }
  /** At its target with nothing outstanding: the advance is done. */
  | { kind: 'ready' }
  | { kind: 'idle' };

/**
 * What a clock's driver does next (docs/decisions/0048), from the latest version of everything
 * on the clock. Whatever is due by the clock's time is commanded first, whether or not the
 * clock is advancing (a subscription created on it may start at its time); then the advance
 * waits until every commanded item has a newer version and every right a change issued is
 * recorded; only then does the clock move, one due instant at a time, so that what falls due
 * at an instant happens before anything due later. An item whose commands changed nothing
 * `maxAttempts` times (it fails alone, and was dead-lettered) no longer holds the clock. Pure.
 */
export function nextStep(
  clock: Pick<ClockEntity, 'time' | 'advancingTo' | 'status'>,
  latest: readonly ClockWork[],
  now: Date,
  attemptsOf: (ref: string) => Attempts | undefined,
  patience = ADVANCE_PATIENCE,
): ClockStep {
  const toCommand: ClockWork[] = [];
  let outstanding = false;
  for (const work of latest) {
    if (work.expected) {
      if (now.getTime() - work.recordedAt.getTime() < patience.expectForMs) outstanding = true;
      continue;
    }
    if (work.dueAt === null || work.dueAt > clock.time) continue;
    const attempts = attemptsOf(work.ref);
    if (!attempts) toCommand.push(work);
    else if (attempts.count >= patience.maxAttempts) continue;
    else if (now.getTime() - attempts.lastAt.getTime() >= patience.recommandAfterMs) toCommand.push(work);
    else outstanding = true;
  }
  if (toCommand.length > 0) return { kind: 'command', work: toCommand };
  if (outstanding) return { kind: 'wait' };
  if (clock.status !== 'advancing') return { kind: 'idle' };
  if (clock.time < clock.advancingTo) {
    const next = latest
      .filter((work) => !work.expected && work.dueAt !== null && work.dueAt > clock.time)
      .reduce((earliest, work) => Math.min(earliest, work.dueAt!.getTime()), clock.advancingTo.getTime());
    return { kind: 'move', to: new Date(next) };
  }
  return { kind: 'ready' };
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
