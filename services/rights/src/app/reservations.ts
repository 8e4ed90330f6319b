import {
  actorOf,
  DEFAULT_RESERVATION_TTL,
  DomainError,
  systemActor,
  type Consumption,
  type Principal,
  type Reservation,
} from '@rs/contracts';
import { RACE_LOST, isTransient, type ItemFailure } from '@rs/store';
import { canSettle } from '../domain/access';
import {
  abort,
  commit,
  heldTotal,
  lapse,
  lapsesAt,
  reservationUntil,
  type ConsumptionRecord,
} from '../domain/consumption';
import type { RightEntity } from '../domain/right';
import type { ConsumptionRecords } from './consumption-records';
import type { MeteringParts } from './consumptions';
import { reservations } from './metering-metrics';
import type { Consumed, ReservationOfUser, SkuOfUser, SkuRights } from './sku-rights';
import type { ObjectTime } from './time';

/**
 * Reservations of a user's metered units of a SKU (docs/api.md "Reservations"; docs/decisions/0045):
 * units held for a time, then committed (consumed), released, or lapsed. Each is a record whose
 * one compare-and-set decides, and whose holds are then applied to its rights; a commit answered
 * 5xx is found committed by its retry (docs/decisions/0051).
 */
export class ReservationUseCases {
  private readonly rights: SkuRights;
  private readonly records: ConsumptionRecords;
  private readonly time: ObjectTime;

  constructor(parts: MeteringParts) {
    ({ rights: this.rights, records: this.records, time: this.time } = parts);
  }

  /** Holds `amount` units for `ttl` (docs/api.md "Reservations"); `reservationId` as a consumption's id. */
  reserve(
    principal: Principal,
    target: SkuOfUser,
    request: { amount: number; ttl?: string; reservationId?: string; caller?: AbortSignal },
  ): Promise<Consumed<Reservation>> {
    // One instant: the ttl measured against a second reading of the clock could lose a millisecond.
    const now = this.time.real();
    const until = reservationUntil(request.ttl ?? DEFAULT_RESERVATION_TTL, now);
    if (!until.ok) throw DomainError.invalid(until.reason);
    const holdMs = until.until.getTime() - now.getTime();
    const asker = { id: request.reservationId, caller: request.caller };
    return this.rights.attempts(principal, target, asker, async ({ id, fresh, visible }) => {
      if (!fresh) {
        const earlier = await this.records.find(target.userId, id);
        if (earlier) return this.reserved(principal, earlier);
      }
      const plan = this.rights.plan(target, visible, request.amount);
      const record = this.records.make({ principal, target, id, kind: 'reservation', plan, visible, holdMs });
      if ((await this.records.hold(principal, record, { fresh })) === RACE_LOST) return RACE_LOST;
      reservations.inc({ outcome: 'held' });
      return this.reserved(principal, record);
    });
  }

  /**
   * Consumes `amount` of a reservation's units (default all) and frees the rest; a commit of 0
   * is a release (`released`: answered as one). Committed, its holds are applied by this request
   * or, should it fail on the way, by the `rights.settle` the commit stored with it; a retry
   * (same key) finds it committed and answers what it took (docs/decisions/0051).
   */
  async commit(
    principal: Principal,
    target: ReservationOfUser,
    amount?: number,
  ): Promise<Consumed<Consumption> | { released: RightEntity[] }> {
    if (amount === 0) return { released: await this.release(principal, target) };
    const record = await this.reservation(principal, target);
    if (record.clock) await this.time.forChange(record.clock);
    const committed = await this.records.decide(record, (current, now) =>
      commit(current, amount ?? heldTotal(current), now),
    );
    if (committed.state === 'committed' && committed.generation > record.generation)
      reservations.inc({ outcome: 'committed' });
    return this.records.settled(principal, committed, { announce: await this.rights.announces(target.sku) });
  }

  /** Frees a reservation's units; released before, it is done already. */
  async release(principal: Principal, target: ReservationOfUser): Promise<RightEntity[]> {
    const record = await this.reservation(principal, target);
    if (record.clock) await this.time.forChange(record.clock);
    const released = await this.records.decide(record, (current, now) => abort(current, now));
    if (released.generation > record.generation) reservations.inc({ outcome: 'released' });
    return this.records.apply(released, actorOf(principal), { announce: false });
  }

  /**
   * `rights.settle` from the scheduler: each record whose holds' time is up by `judgedAt` (a
   * reservation on a test clock: by its clock's time, or by the command's when the command is
   * that clock's, sent at the reservation's instant while the clock's time may still be
   * catching up) and that nothing settled lapses (aborted), and its holds are applied or freed
   * as it says. Idempotent; a record that cannot be settled fails alone.
   */
  async settle(
    items: ReadonlyArray<{ consumptionId: string; connectId: string; clockId?: string }>,
    judgedAt: Date,
  ): Promise<ItemFailure[]> {
    const failed: ItemFailure[] = [];
    for (const [index, item] of items.entries()) {
      try {
        const record = await this.records.find(item.connectId, item.consumptionId);
        if (!record) continue;
        const settled = await this.records.decide(
          record,
          (current, now) => {
            if (!current.clock) return lapse(current, judgedAt);
            const ofItsClock = current.clock.clockId === item.clockId;
            return lapse(current, ofItsClock && judgedAt > now ? judgedAt : now);
          },
          'keep',
        );
        if (settled.state === 'aborted' && record.state === 'holding' && record.kind === 'reservation')
          reservations.inc({ outcome: 'lapsed' });
        await this.records.apply(settled, systemActor('scheduler'), {
          announce: await this.rights.announces(record.sku),
        });
      } catch (error) {
        if (isTransient(error)) throw error;
        failed.push({ index, error });
      }
    }
    return failed;
  }

  /** A page of a bucket's records still holding units, for the scheduler's rebuild of their lapses. */
  holding(bucket: number, page: { after: string | undefined; limit: number }) {
    return this.records.holding(bucket, page);
  }

  /** A reservation the caller may settle; to anyone else it does not exist (404). */
  private async reservation(principal: Principal, target: ReservationOfUser): Promise<ConsumptionRecord> {
    const record = await this.records.find(target.userId, target.reservationId);
    const rights =
      record && (await Promise.all(record.held.map((portion) => this.rights.stored(record.userId, portion.rightId))));
    // Its maker, the rights' grantor and admins settle it (docs/api.md "Reservations"); to
    // anyone else it does not exist, nor once none of its rights does.
    const existing = rights?.filter((right) => right !== null) ?? [];
    if (
      !record ||
      record.kind !== 'reservation' ||
      record.sku !== target.sku ||
      !canSettle(principal, record.madeBy, existing)
    )
      throw DomainError.notFound(`no reservation ${target.reservationId} of ${target.sku} for user ${target.userId}`);
    return record;
  }

  /** A reservation held, answered (with what is left to others); one released or lapsed is 409. */
  private async reserved(principal: Principal, record: ConsumptionRecord): Promise<Consumed<Reservation>> {
    const visible = await this.rights.visible(principal, record, { toChange: false });
    if (record.kind !== 'reservation' || record.state === 'aborted')
      throw DomainError.conflict(`reservation ${record.consumptionId} was released or has lapsed`);
    return {
      body: {
        reservationId: record.consumptionId,
        amount: heldTotal(record),
        expiresAt: lapsesAt(record).toISOString(),
        remaining: this.rights.balance(visible),
      },
      touched: visible.rights.filter((right) => record.held.some((portion) => portion.rightId === right.rightId)),
    };
  }
}
