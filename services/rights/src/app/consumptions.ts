import { skuForUseCase, type SkuLookup } from '@rs/catalog-client';
import {
  actorOf,
  DEFAULT_RESERVATION_TTL,
  DomainError,
  newId,
  systemActor,
  type Actor,
  type Consumption,
  type Principal,
  type Reservation,
} from '@rs/contracts';
import { changeOne, documentLock, RACE_LOST, untilStored, type ItemFailure, isTransient } from '@rs/store';
import { NowFor, type ClockLookup, type OnClock } from '@rs/http';
import { systemClock, type Clock } from '@rs/time';
import { canSettle, canUse, makerOf } from '../domain/access';
import {
  abort,
  commit,
  CONSUMPTION_HOLD_MS,
  heldTotal,
  lapse,
  lapsesAt,
  reservationUntil,
  takenFrom,
  type ConsumptionRecord,
  type RecordDecision,
} from '../domain/consumption';
import { DEFAULT_MAX_HOLDS, planConsumption, type Portion } from '../domain/metering';
import {
  asOf,
  availableOf,
  holdUnits,
  isUsable,
  recordUsage,
  settleUnits,
  type Decision,
  type RightEntity,
} from '../domain/right';
import type { RightMessages } from '../messages/events';
import { appliedMessage, holdMessage } from '../messages/holds';
import type { ConsumptionStore } from '../store/consumption-store';
import type { RightStore } from '../store/right-store';
import { consumptions, reservations, unitsConsumed } from './metering-metrics';

/** What a consumption answered, and the rights it changed (the gateway's projection is told of them). */
export interface Consumed<Body> {
  body: Body;
  touched: RightEntity[];
}

/** A user's SKU, as consumption by SKU names it, and where: on real time, or on the test clock named. */
export interface SkuOfUser {
  userId: string;
  sku: string;
  /**
   * A rehearsal stays a rehearsal (docs/api.md "Test clocks"): only the rights on this clock
   * count, at its time; null: only the rights on real time.
   */
  clockId: string | null;
}

/** A reservation, as its path names it (its record knows where it was made). */
export type ReservationOfUser = Pick<SkuOfUser, 'userId' | 'sku'> & { reservationId: string };

export interface ConsumptionUseCasesOptions {
  rights: RightStore;
  records: ConsumptionStore;
  skus: SkuLookup;
  messages: RightMessages;
  clock?: Clock;
  /** The times of test clocks (docs/decisions/0048); without it, everything lives on real time. */
  clocks?: ClockLookup;
  /** RIGHT_MAX_HOLDS: the open reservations and consumptions under way one right may hold. */
  maxHolds?: number;
}

/** Each right's now: its test clock's time, or real time (docs/decisions/0048). */
type NowOf = (right: OnClock) => Date;

/** The caller's rights of a user's SKU, each as of its own now. */
interface Visible {
  rights: RightEntity[];
  nowOf: NowOf;
}

/**
 * Consumption of a user's metered rights of a SKU, and reservations (docs/api.md "Consumption by
 * SKU", "Reservations"; docs/decisions/0045). A consumption without a key that one right covers
 * is one compare-and-set of that right, as usage is; one across rights, one sent under an
 * Idempotency-Key (whose record alone then says whether it was applied, however many came
 * between it and its retry: docs/decisions/0051), and every reservation, holds units on each
 * right and lets its record's one compare-and-set decide. Consumptions of one user's SKU queue
 * on this replica, so that they do not race each other for the same rights.
 */
export class ConsumptionUseCases {
  private readonly clock: Clock;
  /**
   * Rights are judged at their own now (a test clock's time, or real time); a record's holds
   * last a real time, on any clock (docs/decisions/0048).
   */
  private readonly nowFor: NowFor;

  private readonly maxHolds: number;

  constructor(private readonly options: ConsumptionUseCasesOptions) {
    this.clock = options.clock ?? systemClock;
    this.maxHolds = options.maxHolds ?? DEFAULT_MAX_HOLDS;
    this.nowFor = new NowFor(this.clock, options.clocks);
  }

  private get rights(): RightStore {
    return this.options.rights;
  }

  private get records(): ConsumptionStore {
    return this.options.records;
  }

  /**
   * Consumes `amount` units from the caller-visible active metered rights of the user and SKU,
   * those ending first first: all or nothing. `consumptionId`: the id the gateway derived from
   * an Idempotency-Key; a consumption already applied under it is answered as it was.
   */
  consume(
    principal: Principal,
    target: SkuOfUser,
    request: { amount: number; consumptionId?: string },
  ): Promise<Consumed<Consumption>> {
    return this.attempts(principal, target, request.consumptionId, async ({ id, fresh, visible }) => {
      const earlier = fresh ? null : await this.earlier(principal, target, id);
      if (earlier) return earlier;
      const plan = this.plan(target, visible, request.amount);
      const announce = await this.announces(target.sku);
      // Nobody can send a consumption without a key again: one right is one compare-and-set.
      if (fresh && plan.length === 1) {
        const consumed = await this.consumeOne(principal, visible, plan[0]!, announce);
        if (consumed === RACE_LOST) return RACE_LOST;
        consumptions.inc({ outcome: 'consumed' });
        return consumed;
      }
      return this.consumeRecorded(principal, this.newRecord(principal, target, id, 'consumption', plan, visible), {
        fresh,
        announce,
      });
    });
  }

  /**
   * Usage of one metered right sent under an Idempotency-Key (docs/api.md "Usage"): a
   * consumption of that right alone, decided by its record as every keyed consumption is
   * (docs/decisions/0051). Null for a plain right, whose usage is the rights use cases' (a
   * repeat of it changes nothing anyway). Returns the right after it.
   */
  async useRight(
    principal: Principal,
    target: { userId: string; rightId: string; expectedGeneration?: number },
    request: { amount: number; consumptionId: string },
  ): Promise<RightEntity | null> {
    const { userId, rightId } = target;
    const missing = () => DomainError.notFound(`no right ${rightId} for user ${userId}`);
    const stored = await this.rights.find(userId, rightId);
    if (!stored || !canUse(principal, stored)) throw missing();
    if (stored.quantity === null) return null;
    const sku = { userId, sku: stored.sku, clockId: stored.clockId };
    return this.attempts(principal, sku, request.consumptionId, async ({ id, visible }) => {
      const earlier = await this.earlier(principal, sku, id);
      if (earlier) return earlier.touched.find((right) => right.rightId === rightId) ?? stored;
      const right = visible.rights.find((candidate) => candidate.rightId === rightId);
      if (!right) throw missing();
      if (target.expectedGeneration !== undefined && target.expectedGeneration !== right.generation)
        throw DomainError.preconditionFailed(`If-Match does not match the generation of right ${rightId}`);
      if (!isUsable(right, visible.nowOf(right))) throw DomainError.conflict(`right ${rightId} is not active`);
      const has = availableOf(right) ?? 0;
      if (has < request.amount) {
        consumptions.inc({ outcome: 'short' });
        throw DomainError.conflict(`remaining: right ${rightId} has ${has} units, ${request.amount} asked`);
      }
      const portion = { rightId, amount: request.amount };
      const record = this.newRecord(principal, sku, id, 'consumption', [portion], visible);
      const done = await this.consumeRecorded(principal, record, {
        fresh: false,
        announce: await this.announces(stored.sku),
      });
      if (done === RACE_LOST) return RACE_LOST;
      return done.touched.find((candidate) => candidate.rightId === rightId) ?? right;
    });
  }

  /** Holds `amount` units for `ttl` (docs/api.md "Reservations"); `reservationId` as `consume`'s id. */
  reserve(
    principal: Principal,
    target: SkuOfUser,
    request: { amount: number; ttl?: string; reservationId?: string },
  ): Promise<Consumed<Reservation>> {
    // One instant: the ttl measured against a second reading of the clock could lose a millisecond.
    const now = this.clock();
    const until = reservationUntil(request.ttl ?? DEFAULT_RESERVATION_TTL, now);
    if (!until.ok) throw DomainError.invalid(until.reason);
    const ttlMs = until.until.getTime() - now.getTime();
    return this.attempts(principal, target, request.reservationId, async ({ id, fresh, visible }) => {
      if (!fresh) {
        const earlier = await this.records.find(target.userId, id);
        if (earlier) return this.reserved(principal, earlier);
      }
      const plan = this.plan(target, visible, request.amount);
      const record = this.newRecord(principal, target, id, 'reservation', plan, visible, ttlMs);
      if ((await this.holdAll(principal, record, fresh)) === RACE_LOST) return RACE_LOST;
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
    if (record.clock) await this.nowFor.forChange(record.clock);
    const committed = await this.decide(record, (current, now) => commit(current, amount ?? heldTotal(current), now));
    if (committed.state === 'committed' && committed.generation > record.generation)
      reservations.inc({ outcome: 'committed' });
    return this.settled(principal, committed, await this.announces(target.sku));
  }

  /** Frees a reservation's units; released before, it is done already. */
  async release(principal: Principal, target: ReservationOfUser): Promise<RightEntity[]> {
    const record = await this.reservation(principal, target);
    if (record.clock) await this.nowFor.forChange(record.clock);
    const released = await this.decide(record, (current, now) => abort(current, now));
    if (released.generation > record.generation) reservations.inc({ outcome: 'released' });
    return this.apply(released, actorOf(principal), false);
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
        const settled = await this.decide(
          record,
          (current, now) => {
            if (!current.clock) return lapse(current, judgedAt);
            const ofItsClock = current.clock.clockId === item.clockId;
            return lapse(current, ofItsClock && judgedAt > now ? judgedAt : now);
          },
          true,
        );
        if (settled.state === 'aborted' && record.state === 'holding' && record.kind === 'reservation')
          reservations.inc({ outcome: 'lapsed' });
        await this.apply(settled, systemActor('scheduler'), await this.announces(record.sku));
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

  /**
   * Runs `attempt` until it is not overtaken by another replica (`RACE_LOST`), one consumption of
   * a user's SKU at a time on this replica (other replicas race by compare-and-set), each time
   * with the caller's rights of the SKU read again. Its id is the one the gateway derived from an
   * Idempotency-Key, else a fresh one each time (`fresh`: nobody can have seen it before).
   */
  private attempts<T>(
    principal: Principal,
    target: SkuOfUser,
    clientId: string | undefined,
    attempt: (context: { id: string; fresh: boolean; visible: Visible }) => Promise<T | typeof RACE_LOST>,
  ): Promise<T> {
    return documentLock.run('consumption', `${target.userId}\u0000${target.sku}`, () =>
      untilStored(`the ${target.sku} rights of ${target.userId}`, async () =>
        attempt({
          id: clientId ?? newId(this.clock().getTime()),
          fresh: clientId === undefined,
          visible: await this.visible(principal, target, true),
        }),
      ),
    );
  }

  /**
   * The user's rights of the SKU that the caller may use where it asks (real time, or the clock
   * it names: 404 when there is none), each as of its now; `forChange`: to consume or hold them
   * (409 while their clock is advancing).
   */
  private async visible(principal: Principal, target: SkuOfUser, forChange = false): Promise<Visible> {
    if (target.clockId !== null) await this.nowFor.ofNamedClock(target.clockId);
    const stored = (await this.rights.ofUserAndSku(target.userId, target.sku)).filter(
      (right) => right.clockId === target.clockId,
    );
    const nowOf = await (forChange ? this.nowFor.forChangeOf(stored) : this.nowFor.of(stored));
    return {
      rights: stored.map((right) => asOf(right, nowOf(right))).filter((right) => canUse(principal, right)),
      nowOf,
    };
  }

  /** The burn order over the active metered rights; 409 with nothing consumed when they hold too few. */
  private plan(target: SkuOfUser, { rights, nowOf }: Visible, amount: number): Portion[] {
    const candidates = rights.flatMap((right) => {
      const available = availableOf(right);
      return available !== null && isUsable(right, nowOf(right))
        ? [{ rightId: right.rightId, end: right.expiresAt, createdAt: right.createdAt, available }]
        : [];
    });
    const plan = planConsumption(candidates, amount);
    if (plan) return plan;
    consumptions.inc({ outcome: 'short' });
    const balance = candidates.reduce((sum, candidate) => sum + candidate.available, 0);
    throw DomainError.conflict(
      `remaining: ${target.userId} has ${balance} units of ${target.sku} left, ${amount} asked; nothing was consumed`,
    );
  }

  /**
   * A consumption sent before under `id`, by its record: the id alone decides (docs/decisions/0051).
   * Null when it is new; 503 while its first attempt is under way.
   */
  private async earlier(principal: Principal, target: SkuOfUser, id: string): Promise<Consumed<Consumption> | null> {
    const record = await this.records.find(target.userId, id);
    if (!record) return null;
    if (record.state === 'holding') {
      const seconds = Math.max(1, Math.ceil((record.until.getTime() - this.clock().getTime()) / 1000));
      throw DomainError.unavailable(`consumption ${id} is under way; ask again in ${seconds} s`, seconds);
    }
    return this.settled(principal, record, await this.announces(target.sku));
  }

  /** A consumption through its record: its units held, the record committed, then applied. */
  private async consumeRecorded(
    principal: Principal,
    record: ConsumptionRecord,
    { fresh, announce }: { fresh: boolean; announce: boolean },
  ): Promise<Consumed<Consumption> | typeof RACE_LOST> {
    if ((await this.holdAll(principal, record, fresh)) === RACE_LOST) return RACE_LOST;
    const committed = await this.decide(record, (current, now) => commit(current, heldTotal(current), now));
    const done = await this.settled(principal, committed, announce);
    consumptions.inc({ outcome: 'consumed' });
    return done;
  }

  /** The one-right path of a consumption without a key: one compare-and-set, as usage by right id. */
  private async consumeOne(
    principal: Principal,
    { rights, nowOf }: Visible,
    portion: Portion,
    announce: boolean,
  ): Promise<Consumed<Consumption> | typeof RACE_LOST> {
    const right = rights.find((candidate) => candidate.rightId === portion.rightId)!;
    const decision = recordUsage(right, nowOf(right), announce, portion.amount);
    if (decision.kind !== 'change') return RACE_LOST;
    if (!(await this.write(right, decision, actorOf(principal)))) return RACE_LOST;
    const after = rights.map((candidate) => (candidate.rightId === right.rightId ? decision.next : candidate));
    return {
      body: this.answer({ userId: right.userId, sku: right.sku }, portion.amount, [portion], { rights: after, nowOf }),
      touched: [decision.next],
    };
  }

  private newRecord(
    principal: Principal,
    target: SkuOfUser,
    id: string,
    kind: ConsumptionRecord['kind'],
    plan: Portion[],
    { nowOf }: Visible,
    holdMs = CONSUMPTION_HOLD_MS,
  ): ConsumptionRecord {
    const now = this.clock();
    const { clockId } = target;
    return {
      consumptionId: id,
      userId: target.userId,
      sku: target.sku,
      clockId,
      kind,
      madeBy: makerOf(principal),
      held: plan,
      taken: [],
      state: 'holding',
      until: new Date(now.getTime() + holdMs),
      // A reservation on a test clock lapses on that clock's time; a consumption's holds, which
      // only guard a crash mid-way, after a real time (docs/decisions/0048).
      clock:
        kind === 'reservation' && clockId !== null
          ? { clockId, until: new Date(nowOf({ clockId }).getTime() + holdMs) }
          : null,
      generation: 1,
      createdAt: now,
      updatedAt: now,
    };
  }

  /**
   * Stores the record (the scheduler is told when its holds lapse), then holds its units on
   * each right. When one cannot hold them (taken meanwhile by another replica), the record is
   * aborted and what was held freed: a fresh id plans again (`RACE_LOST`); an id a client
   * derived is 409, nothing consumed. A record stored before under the id is the first
   * request's: answered from it.
   */
  private async holdAll(
    principal: Principal,
    record: ConsumptionRecord,
    fresh: boolean,
  ): Promise<'held' | typeof RACE_LOST> {
    if (!(await this.records.insert(record, [holdMessage(record)]))) {
      throw DomainError.conflict(`consumption ${record.consumptionId} was sent before; send it again with a new key`);
    }
    const hold = { id: record.consumptionId, until: lapsesAt(record) };
    for (const portion of record.held) {
      const held = await this.changeRight(record.userId, portion.rightId, (right, now) =>
        canUse(principal, right)
          ? holdUnits(right, { ...hold, amount: portion.amount }, now, {
              announce: record.kind === 'reservation',
              maxHolds: this.maxHolds,
            })
          : { kind: 'conflict', reason: 'not visible' },
      ).catch((error: unknown) => {
        if (error instanceof DomainError && error.code === 'conflict') return error.message;
        throw error;
      });
      if (typeof held === 'string') {
        await this.apply(await this.decide(record, (current, now) => abort(current, now)), actorOf(principal), false);
        // A right at its most holds does not free one by planning again.
        if (fresh && !held.startsWith('holds:')) return RACE_LOST;
        throw DomainError.conflict(
          held.startsWith('holds:')
            ? `${held}; nothing was consumed`
            : `remaining: the ${record.sku} rights of ${record.userId} changed while consuming; nothing was consumed`,
        );
      }
    }
    return 'held';
  }

  /**
   * A record's one compare-and-set (docs/decisions/0045), again while others change it; the
   * record as it ends. `lenient`: a decision that does not apply leaves it as it is (the
   * scheduler's settlement), instead of answering the caller's refusal.
   */
  private async decide(
    record: ConsumptionRecord,
    decideOn: (current: ConsumptionRecord, now: Date) => RecordDecision,
    lenient = false,
  ): Promise<ConsumptionRecord> {
    let first: ConsumptionRecord | null = record;
    return untilStored(`consumption ${record.consumptionId}`, async () => {
      const current = first ?? (await this.records.find(record.userId, record.consumptionId));
      first = null;
      if (!current) throw DomainError.notFound(`no reservation ${record.consumptionId}`);
      // A reservation on a test clock is judged at that clock's time (docs/decisions/0048).
      const now = current.clock ? await this.nowFor.one(current.clock) : this.clock();
      const decision = decideOn(current, now);
      switch (decision.kind) {
        case 'change': {
          // A commit stores the command that applies it, should this request not get that far.
          const outbox = decision.next.state === 'committed' ? [appliedMessage(decision.next)] : [];
          return (await this.records.update(current, decision.next, outbox)) ? decision.next : RACE_LOST;
        }
        case 'unchanged':
          return current;
        case 'lapsed': {
          // Its time is up: it lapses now, whoever meets it, and its holds are freed.
          const aborted = abort(current, now);
          if (aborted.kind !== 'change') return current;
          if (!(await this.records.update(current, aborted.next))) return RACE_LOST;
          if (current.kind === 'reservation') reservations.inc({ outcome: 'lapsed' });
          await this.apply(aborted.next, systemActor('scheduler'), false);
          if (lenient) return aborted.next;
          throw DomainError.conflict(`reservation ${current.consumptionId} has lapsed; its units are free again`);
        }
        case 'conflict':
          if (lenient) return current;
          throw DomainError.conflict(decision.reason);
        case 'invalid':
          throw DomainError.invalid(decision.reason);
      }
    });
  }

  /**
   * Applies a settled record's holds: a committed one's units consumed from each right
   * (right.consumed), an aborted one's freed; a hold applied before is left alone. Returns the
   * rights as they are after.
   */
  private async apply(record: ConsumptionRecord, actor: Actor, announce: boolean): Promise<RightEntity[]> {
    if (record.state === 'holding') return [];
    const touched: RightEntity[] = [];
    for (const portion of record.held) {
      const amount = record.state === 'committed' ? takenFrom(record, portion.rightId) : 0;
      const right = await this.changeRight(
        record.userId,
        portion.rightId,
        (current, now) =>
          settleUnits(current, record.consumptionId, amount, now, {
            consumed: announce,
            held: record.kind === 'reservation',
          }),
        actor,
      );
      if (right) touched.push(right);
    }
    return touched;
  }

  /** A settled record answered: a committed one with what it took, an aborted one 409. */
  private async settled(
    principal: Principal,
    record: ConsumptionRecord,
    announce: boolean,
  ): Promise<Consumed<Consumption>> {
    if (record.state !== 'committed')
      throw DomainError.conflict(
        `consumption ${record.consumptionId} was not completed; nothing was consumed (send it again with a new key)`,
      );
    const touched = await this.apply(record, actorOf(principal), announce);
    const visible = await this.visible(principal, record);
    const amount = record.taken.reduce((sum, portion) => sum + portion.amount, 0);
    return { body: this.answer(record, amount, record.taken, visible), touched };
  }

  private async reservation(principal: Principal, target: ReservationOfUser): Promise<ConsumptionRecord> {
    const record = await this.records.find(target.userId, target.reservationId);
    const rights =
      record && (await Promise.all(record.held.map((portion) => this.rights.find(record.userId, portion.rightId))));
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
    const visible = await this.visible(principal, record);
    const { rights } = visible;
    if (record.kind !== 'reservation' || record.state === 'aborted')
      throw DomainError.conflict(`reservation ${record.consumptionId} was released or has lapsed`);
    return {
      body: {
        reservationId: record.consumptionId,
        amount: heldTotal(record),
        expiresAt: lapsesAt(record).toISOString(),
        remaining: this.balance(visible),
      },
      touched: rights.filter((right) => record.held.some((portion) => portion.rightId === right.rightId)),
    };
  }

  /** The units anyone may take now over the active metered rights among `rights`, each at its now. */
  private balance({ rights, nowOf }: Visible): number {
    return rights.reduce((sum, right) => sum + (isUsable(right, nowOf(right)) ? (availableOf(right) ?? 0) : 0), 0);
  }

  private answer(
    target: Pick<SkuOfUser, 'userId' | 'sku'>,
    amount: number,
    taken: readonly Portion[],
    visible: Visible,
  ): Consumption {
    const { rights } = visible;
    return {
      connectId: target.userId,
      sku: target.sku,
      amount,
      consumed: taken.map((portion) => ({
        rightId: portion.rightId,
        amount: portion.amount,
        remaining: rights.find((right) => right.rightId === portion.rightId)?.remaining ?? 0,
      })),
      remaining: this.balance(visible),
    };
  }

  /** One right's change through the change pipeline; the right after it (null when it is gone). */
  private async changeRight(
    userId: string,
    rightId: string,
    decideOn: (right: RightEntity, now: Date) => Decision,
    actor: Actor = systemActor('scheduler'),
  ): Promise<RightEntity | null> {
    const done = await changeOne({
      what: `right ${rightId}`,
      load: async () => {
        const right = await this.rights.find(userId, rightId);
        return right && asOf(right, await this.nowFor.one(right));
      },
      decide: async (right) => decideOn(right, await this.nowFor.one(right)),
      write: (current, change) => this.write(current, change, actor),
    });
    if (done.outcome === 'missing') return null;
    return done.outcome === 'changed' ? done.change.next : done.current;
  }

  /** A right's compare-and-set with its events; units consumed are counted once stored. */
  private async write(current: RightEntity, change: Decision & { kind: 'change' }, actor: Actor): Promise<boolean> {
    const { next, events, consumed } = change;
    const stored = await this.rights.update({
      current,
      next,
      outbox: this.options.messages.of(next, events, actor, consumed),
    });
    if (stored && consumed) unitsConsumed.inc(consumed);
    return stored;
  }

  private async announces(sku: string): Promise<boolean> {
    return (await skuForUseCase(this.options.skus, sku))?.announceOnUsage ?? false;
  }
}
