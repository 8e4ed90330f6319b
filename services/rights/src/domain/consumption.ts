import { parseDuration } from '@rs/time';
import type { Portion } from './metering';

/**
 * The record that decides a consumption across rights or a reservation (docs/decisions/0045):
 * units are held on each right of its plan, and the record's one compare-and-set from
 * `holding` to `committed` or `aborted` is the instant it happens or does not. Pure.
 */
export type RecordState = 'holding' | 'committed' | 'aborted';

export interface ConsumptionRecord {
  /** The consumption's id: the reservation's id, or the one the gateway derived from an Idempotency-Key. */
  consumptionId: string;
  userId: string;
  sku: string;
  /** Where its units are taken: the test clock its caller named (its rights alone), or null for real time. */
  clockId: string | null;
  kind: 'consumption' | 'reservation';
  /**
   * Who made it: the API client, and the user its Bearer token acts for (null with Basic). Only
   * they, the rights' grantor or an admin settle a reservation (docs/api.md "Reservations").
   */
  madeBy: { clientId: string; subject: string | null };
  /** The units held on each right (the plan, in burn order). */
  held: readonly Portion[];
  /** The units consumed from each right, once committed (at most those held). */
  taken: readonly Portion[];
  state: RecordState;
  /**
   * When its holds lapse unless committed: the record is then aborted (by the scheduler, or
   * whoever meets it). Real time: also when the record may go (its retention).
   */
  until: Date;
  /**
   * A reservation of rights that all live on one test clock lapses on that clock's time, at
   * this instant of it (docs/decisions/0048), when an advance passes it; null on real time.
   */
  clock: { clockId: string; until: Date } | null;
  generation: number;
  createdAt: Date;
  updatedAt: Date;
}

/** How long the holds of a consumption across rights last: far longer than the few writes it takes. */
export const CONSUMPTION_HOLD_MS = 30_000;

export const heldTotal = (record: Pick<ConsumptionRecord, 'held'>): number =>
  record.held.reduce((sum, portion) => sum + portion.amount, 0);

export const takenFrom = (record: Pick<ConsumptionRecord, 'taken'>, rightId: string): number =>
  record.taken.find((portion) => portion.rightId === rightId)?.amount ?? 0;

/**
 * The portions a commit of `amount` units consumes: the plan's, in its burn order, until
 * `amount` is reached; the rest of each hold is freed.
 */
export function committedPortions(held: readonly Portion[], amount: number): Portion[] {
  const taken: Portion[] = [];
  let left = amount;
  for (const portion of held) {
    const take = Math.min(left, portion.amount);
    if (take > 0) taken.push({ rightId: portion.rightId, amount: take });
    left -= take;
  }
  return taken;
}

export type RecordDecision =
  | { kind: 'change'; next: ConsumptionRecord }
  /** Settled before as asked (a retry): answer as the first time. */
  | { kind: 'unchanged' }
  | { kind: 'lapsed' }
  | { kind: 'conflict'; reason: string }
  | { kind: 'invalid'; reason: string };

/** When a record's holds lapse, on its timeline: its clock's instant, or its real one. */
export const lapsesAt = (record: Pick<ConsumptionRecord, 'until' | 'clock'>): Date =>
  record.clock?.until ?? record.until;

const moved = (record: ConsumptionRecord, patch: Partial<ConsumptionRecord>, now: Date): RecordDecision => ({
  kind: 'change',
  next: { ...record, ...patch, generation: record.generation + 1, updatedAt: now },
});

/**
 * Commits `amount` of the held units (all, for a consumption across rights), unless it lapsed or
 * was released. A commit of 0 consumes nothing: the caller releases instead (`abort`).
 */
export function commit(record: ConsumptionRecord, amount: number, now: Date): RecordDecision {
  if (record.state === 'committed') return { kind: 'unchanged' };
  if (record.state === 'aborted')
    return { kind: 'conflict', reason: `reservation ${record.consumptionId} was released or has lapsed` };
  if (lapsesAt(record) <= now) return { kind: 'lapsed' };
  if (amount > heldTotal(record))
    return { kind: 'invalid', reason: `amount: at most ${heldTotal(record)} units are held` };
  return moved(record, { state: 'committed', taken: committedPortions(record.held, amount) }, now);
}

/**
 * Aborts a record still holding: released by its caller, refused midway, or lapsed. One that
 * is committed stays so (the consumption happened): `conflict`.
 */
export function abort(record: ConsumptionRecord, now: Date): RecordDecision {
  if (record.state === 'aborted') return { kind: 'unchanged' };
  if (record.state === 'committed')
    return { kind: 'conflict', reason: `reservation ${record.consumptionId} is committed` };
  return moved(record, { state: 'aborted', taken: [] }, now);
}

/** A record whose holds' time is up at `now` and that nothing has settled is aborted (its lapse). */
export function lapse(record: ConsumptionRecord, now: Date): RecordDecision {
  if (record.state !== 'holding' || lapsesAt(record) > now) return { kind: 'unchanged' };
  return abort(record, now);
}

/** The longest and the default time a reservation holds its units (docs/api.md "Reservations"). */
export const MAX_RESERVATION_MS = 24 * 3_600_000;

/** When a reservation made at `now` with `ttl` (an ISO 8601 duration, up to PT24H) lapses; a reason when it cannot. */
export function reservationUntil(ttl: string, now: Date): { ok: true; until: Date } | { ok: false; reason: string } {
  const parsed = parseDuration(ttl);
  if (!parsed.ok) return { ok: false, reason: `ttl: ${parsed.reason}` };
  const ms = parsed.value.toMillis();
  if (!(ms > 0) || ms > MAX_RESERVATION_MS)
    return { ok: false, reason: 'ttl: must be a duration above zero and at most PT24H' };
  return { ok: true, until: new Date(now.getTime() + ms) };
}
