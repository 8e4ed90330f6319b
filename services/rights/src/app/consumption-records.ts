import { actorOf, DomainError, systemActor, type Actor, type Consumption, type Principal } from '@rs/contracts';
import { changeOne, RACE_LOST, UNCHANGED, type Decision } from '@rs/store';
import { canUse, makerOf } from '../domain/access';
import {
  abort,
  CONSUMPTION_HOLD_MS,
  lapsesAt,
  takenFrom,
  type ConsumptionRecord,
  type RecordDecision,
} from '../domain/consumption';
import { holdUnits, settleUnits, type Portion } from '../domain/metering';
import type { Decision as RightDecision, RightEntity } from '../domain/right';
import { appliedMessage, holdMessage } from '../messages/holds';
import type { ConsumptionStore } from '../store/consumption-store';
import { reservations } from './metering-metrics';
import type { RightChanges } from './right-changes';
import type { Consumed, SkuOfUser, SkuRights, Visible } from './sku-rights';
import type { ObjectTime } from './time';

/** What a record's one compare-and-set does when its decision refuses (a conflict, or its lapse). */
export type Refusal = 'answer' | 'keep';

/**
 * The record that decides a consumption across rights, one sent under an Idempotency-Key, or a
 * reservation (docs/decisions/0045, 0051): made, its units held on each right of its plan, its
 * one compare-and-set from `holding` to `committed` or `aborted`, and its holds then applied to
 * the rights (consumed or freed), each through the one compare-and-set of a right.
 */
export class ConsumptionRecords {
  constructor(
    private readonly options: {
      records: ConsumptionStore;
      changes: RightChanges;
      rights: SkuRights;
      time: ObjectTime;
      /** RIGHT_MAX_HOLDS: the open reservations and consumptions under way one right may hold. */
      maxHolds: number;
    },
  ) {}

  find(userId: string, consumptionId: string): Promise<ConsumptionRecord | null> {
    return this.options.records.find(userId, consumptionId);
  }

  /** A page of a bucket's records still holding units, for the scheduler's rebuild of their lapses. */
  holding(bucket: number, page: { after: string | undefined; limit: number }) {
    return this.options.records.holding(bucket, page);
  }

  /** A new record, holding the units of `plan` until its holds lapse (`holdMs`, a real time by default). */
  make(made: {
    principal: Principal;
    target: SkuOfUser;
    id: string;
    kind: ConsumptionRecord['kind'];
    plan: Portion[];
    visible: Visible;
    holdMs?: number;
  }): ConsumptionRecord {
    const now = this.options.time.real();
    const { target, kind, holdMs = CONSUMPTION_HOLD_MS } = made;
    const { clockId } = target;
    return {
      consumptionId: made.id,
      userId: target.userId,
      sku: target.sku,
      clockId,
      kind,
      madeBy: makerOf(made.principal),
      held: made.plan,
      taken: [],
      state: 'holding',
      until: new Date(now.getTime() + holdMs),
      // A reservation on a test clock lapses on that clock's time; a consumption's holds, which
      // only guard a crash mid-way, after a real time (docs/decisions/0048).
      clock:
        kind === 'reservation' && clockId !== null
          ? { clockId, until: new Date(made.visible.nowOf({ clockId }).getTime() + holdMs) }
          : null,
      generation: 1,
      createdAt: now,
      updatedAt: now,
    };
  }

  /**
   * A consumption sent before under `id`, by its record: the id alone decides (docs/decisions/0051).
   * Null when it is new; 503 while its first attempt is under way. That attempt is most likely
   * still running (the gateway stopped waiting for it, and its caller sent it again) and done in
   * a moment, so the retry is asked back in a second; its holds' lapse only bounds a crash.
   */
  async earlier(principal: Principal, target: SkuOfUser, id: string): Promise<Consumed<Consumption> | null> {
    const record = await this.find(target.userId, id);
    if (!record) return null;
    if (record.state === 'holding') {
      const seconds = Math.max(1, Math.ceil((record.until.getTime() - this.options.time.real().getTime()) / 1000));
      throw DomainError.unavailable(`consumption ${id} is under way (settled within ${seconds} s); ask again`, 1);
    }
    return this.settled(principal, record, { announce: await this.options.rights.announces(target.sku) });
  }

  /**
   * Stores the record (the scheduler is told when its holds lapse), then holds its units on
   * each right. When one cannot hold them (taken meanwhile by another replica), the record is
   * aborted and what was held freed: a fresh id plans again (`RACE_LOST`); an id a client
   * derived is 409, nothing consumed. A record stored before under the id is the first
   * request's: 409.
   */
  async hold(
    principal: Principal,
    record: ConsumptionRecord,
    attempt: { fresh: boolean },
  ): Promise<'held' | typeof RACE_LOST> {
    if (!(await this.options.records.insert(record, [holdMessage(record)]))) {
      throw DomainError.conflict(`consumption ${record.consumptionId} was sent before; send it again with a new key`);
    }
    const hold = { id: record.consumptionId, until: lapsesAt(record) };
    const announce = record.kind === 'reservation';
    for (const portion of record.held) {
      const held = await this.changeRight(record, portion.rightId, systemActor('scheduler'), (right, now) =>
        canUse(principal, right)
          ? holdUnits(right, { ...hold, amount: portion.amount }, now, { announce, maxHolds: this.options.maxHolds })
          : { kind: 'conflict', reason: 'not visible' },
      ).catch((error: unknown) => {
        if (error instanceof DomainError && error.code === 'conflict') return error.message;
        throw error;
      });
      if (typeof held === 'string') {
        const aborted = await this.decide(record, (current, now) => abort(current, now));
        await this.apply(aborted, actorOf(principal), { announce: false });
        // A right at its most holds does not free one by planning again.
        if (attempt.fresh && !held.startsWith('holds:')) return RACE_LOST;
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
   * record as it ends. A record whose time is up lapses now, whoever meets it, and its holds are
   * freed. `refusal`: `answer` tells the caller why its decision does not apply (409, 400);
   * `keep` leaves the record as it is (the scheduler's settlement).
   */
  async decide(
    record: ConsumptionRecord,
    decideOn: (current: ConsumptionRecord, now: Date) => RecordDecision,
    refusal: Refusal = 'answer',
  ): Promise<ConsumptionRecord> {
    let known: ConsumptionRecord | null = record;
    let lapsed = false;
    const done = await changeOne<ConsumptionRecord, { next: ConsumptionRecord }>({
      what: `consumption ${record.consumptionId}`,
      load: async () => {
        const first = known;
        known = null;
        return first ?? (await this.find(record.userId, record.consumptionId));
      },
      decide: async (current): Promise<Decision<{ next: ConsumptionRecord }>> => {
        // A reservation on a test clock is judged at that clock's time (docs/decisions/0048).
        const now = current.clock ? await this.options.time.one(current.clock) : this.options.time.real();
        const decision = decideOn(current, now);
        lapsed = decision.kind === 'lapsed';
        if (decision.kind === 'lapsed') {
          const aborted = abort(current, now);
          return aborted.kind === 'change' ? aborted : UNCHANGED;
        }
        if (decision.kind === 'invalid') throw DomainError.invalid(decision.reason);
        if (decision.kind === 'conflict' && refusal === 'keep') return UNCHANGED;
        return decision;
      },
      // A commit stores the command that applies it, should this request not get that far.
      write: (current, { next }) =>
        this.options.records.update({
          current,
          next,
          outbox: next.state === 'committed' ? [appliedMessage(next)] : [],
        }),
    });
    if (done.outcome === 'missing') throw DomainError.notFound(`no reservation ${record.consumptionId}`);
    if (done.outcome === 'unchanged') return done.current;
    if (!lapsed) return done.change.next;
    // Its time is up: it lapsed now, and its holds are freed.
    if (record.kind === 'reservation') reservations.inc({ outcome: 'lapsed' });
    await this.apply(done.change.next, systemActor('scheduler'), { announce: false });
    if (refusal === 'keep') return done.change.next;
    throw DomainError.conflict(`reservation ${record.consumptionId} has lapsed; its units are free again`);
  }

  /**
   * Applies a settled record's holds: a committed one's units consumed from each right
   * (right.consumed; service.announce on a first use when `announce`), an aborted one's freed; a
   * hold applied before is left alone. Returns the rights as they are after.
   */
  async apply(record: ConsumptionRecord, actor: Actor, how: { announce: boolean }): Promise<RightEntity[]> {
    if (record.state === 'holding') return [];
    const touched: RightEntity[] = [];
    for (const portion of record.held) {
      const amount = record.state === 'committed' ? takenFrom(record, portion.rightId) : 0;
      const announce = { consumed: how.announce, held: record.kind === 'reservation' };
      const right = await this.changeRight(record, portion.rightId, actor, (current, now) =>
        settleUnits(current, { id: record.consumptionId, amount, announce }, now),
      );
      if (right) touched.push(right);
    }
    return touched;
  }

  /** A settled record answered: a committed one with what it took, an aborted one 409. */
  async settled(
    principal: Principal,
    record: ConsumptionRecord,
    how: { announce: boolean },
  ): Promise<Consumed<Consumption>> {
    if (record.state !== 'committed')
      throw DomainError.conflict(
        `consumption ${record.consumptionId} was not completed; nothing was consumed (send it again with a new key)`,
      );
    const touched = await this.apply(record, actorOf(principal), how);
    const { rights } = this.options;
    const visible = await rights.visible(principal, record, { toChange: false });
    const amount = record.taken.reduce((sum, portion) => sum + portion.amount, 0);
    return { body: rights.answer({ target: record, amount, taken: record.taken, visible }), touched };
  }

  /** One right of a record changed at its now; the right after it (null when it is gone). */
  private async changeRight(
    record: ConsumptionRecord,
    rightId: string,
    actor: Actor,
    decideOn: (right: RightEntity, now: Date) => RightDecision,
  ): Promise<RightEntity | null> {
    const { changes, time } = this.options;
    const done = await changes.change(
      { userId: record.userId, rightId },
      { actor, decide: async (right) => decideOn(right, await time.one(right)) },
    );
    if (done.outcome === 'missing') return null;
    return done.outcome === 'changed' ? done.change.next : done.current;
  }
}
