import type { SkuLookup } from '@rs/catalog-client';
import { actorOf, DomainError, type Consumption, type Principal } from '@rs/contracts';
import { RACE_LOST } from '@rs/store';
import { canUse } from '../domain/access';
import { commit, heldTotal, type ConsumptionRecord } from '../domain/consumption';
import { DEFAULT_MAX_HOLDS, recordUsage, type Portion } from '../domain/metering';
import { availableOf, isUsable, type RightEntity } from '../domain/right';
import type { RightMessages } from '../messages/events';
import type { ConsumptionStore } from '../store/consumption-store';
import type { RightStore } from '../store/right-store';
import { ConsumptionRecords } from './consumption-records';
import { consumptions } from './metering-metrics';
import { RightChanges, type Judged } from './right-changes';
import { SkuRights, type Consumed, type SkuOfUser, type Visible } from './sku-rights';
import type { ObjectTime } from './time';

export type { Consumed, ReservationOfUser, SkuOfUser } from './sku-rights';

/** What the consumption and reservation use cases work with. */
export interface MeteringOptions {
  rights: RightStore;
  records: ConsumptionStore;
  skus: SkuLookup;
  messages: RightMessages;
  /** "Now" for each right: its test clock's time, or real time (docs/decisions/0048). */
  time: ObjectTime;
  /** RIGHT_MAX_HOLDS: the open reservations and consumptions under way one right may hold. */
  maxHolds?: number;
}

/** The parts the consumption and reservation use cases share, made once for both. */
export interface MeteringParts {
  changes: RightChanges;
  rights: SkuRights;
  records: ConsumptionRecords;
  time: ObjectTime;
}

export function meteringParts(options: MeteringOptions): MeteringParts {
  const changes = new RightChanges({ store: options.rights, messages: options.messages, time: options.time });
  const rights = new SkuRights({ store: options.rights, skus: options.skus, time: options.time });
  const records = new ConsumptionRecords({
    records: options.records,
    changes,
    rights,
    time: options.time,
    maxHolds: options.maxHolds ?? DEFAULT_MAX_HOLDS,
  });
  return { changes, rights, records, time: options.time };
}

/**
 * Consumption of a user's metered rights of a SKU (docs/api.md "Consumption by SKU"; docs/decisions/0045).
 * A consumption without a key that one right covers is one compare-and-set of that right, as
 * usage is; one across rights, and one sent under an Idempotency-Key (whose record alone then
 * says whether it was applied, however many came between it and its retry: docs/decisions/0051),
 * holds units on each right and lets its record's one compare-and-set decide.
 */
export class ConsumptionUseCases {
  private readonly changes: RightChanges;
  private readonly rights: SkuRights;
  private readonly records: ConsumptionRecords;

  constructor(parts: MeteringParts) {
    ({ changes: this.changes, rights: this.rights, records: this.records } = parts);
  }

  /**
   * Consumes `amount` units from the caller-visible active metered rights of the user and SKU,
   * those ending first first: all or nothing. `consumptionId`: the id the gateway derived from
   * an Idempotency-Key; a consumption already applied under it is answered as it was.
   */
  consume(
    principal: Principal,
    target: SkuOfUser,
    request: { amount: number; consumptionId?: string; caller?: AbortSignal },
  ): Promise<Consumed<Consumption>> {
    const asker = { id: request.consumptionId, caller: request.caller };
    return this.rights.attempts(principal, target, asker, async ({ id, fresh, visible }) => {
      const earlier = fresh ? null : await this.records.earlier(principal, target, id);
      if (earlier) return earlier;
      const plan = this.rights.plan(target, visible, request.amount);
      const announce = await this.rights.announces(target.sku);
      // Nobody can send a consumption without a key again: one right is one compare-and-set.
      if (fresh && plan.length === 1) {
        const consumed = await this.consumeOne(principal, visible, plan[0]!, announce);
        if (consumed === RACE_LOST) return RACE_LOST;
        consumptions.inc({ outcome: 'consumed' });
        return consumed;
      }
      const record = this.records.make({ principal, target, id, kind: 'consumption', plan, visible });
      return this.consumeRecorded(principal, record, { fresh, announce });
    });
  }

  /**
   * Usage of one metered right sent under an Idempotency-Key (docs/api.md "Usage"): a
   * consumption of that right alone, decided by its record as every keyed consumption is
   * (docs/decisions/0051). Null for a plain right, whose usage is the rights use cases' (a
   * repeat of it changes nothing anyway). Returns the right after it, as of the now it was judged at.
   */
  async useRight(
    principal: Principal,
    target: { userId: string; rightId: string; expectedGeneration?: number },
    request: { amount: number; consumptionId: string; caller?: AbortSignal },
  ): Promise<Judged | null> {
    const { userId, rightId } = target;
    const missing = () => DomainError.notFound(`no right ${rightId} for user ${userId}`);
    // As stored: who may use it and what it is do not depend on when it is read.
    const stored = await this.rights.stored(userId, rightId);
    if (!stored || !canUse(principal, stored)) throw missing();
    if (stored.quantity === null) return null;
    const sku = { userId, sku: stored.sku, clockId: stored.clockId };
    const asker = { id: request.consumptionId, caller: request.caller };
    return this.rights.attempts(principal, sku, asker, async ({ id, visible }) => {
      const judged = (right: RightEntity) => ({ right, now: visible.nowOf(right) });
      const earlier = await this.records.earlier(principal, sku, id);
      if (earlier) return judged(earlier.touched.find((right) => right.rightId === rightId) ?? stored);
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
      const plan = [{ rightId, amount: request.amount }];
      const record = this.records.make({ principal, target: sku, id, kind: 'consumption', plan, visible });
      const done = await this.consumeRecorded(principal, record, {
        fresh: false,
        announce: await this.rights.announces(stored.sku),
      });
      if (done === RACE_LOST) return RACE_LOST;
      return judged(done.touched.find((candidate) => candidate.rightId === rightId) ?? right);
    });
  }

  /** A consumption through its record: its units held, the record committed, then applied. */
  private async consumeRecorded(
    principal: Principal,
    record: ConsumptionRecord,
    attempt: { fresh: boolean; announce: boolean },
  ): Promise<Consumed<Consumption> | typeof RACE_LOST> {
    if ((await this.records.hold(principal, record, attempt)) === RACE_LOST) return RACE_LOST;
    const committed = await this.records.decide(record, (current, now) => commit(current, heldTotal(current), now));
    const done = await this.records.settled(principal, committed, attempt);
    consumptions.inc({ outcome: 'consumed' });
    return done;
  }

  /**
   * The one-right path of a consumption without a key: the right's one compare-and-set, as
   * usage by right id; taken meanwhile (too few units left in it), the attempt plans again.
   */
  private async consumeOne(
    principal: Principal,
    visible: Visible,
    portion: Portion,
    announce: boolean,
  ): Promise<Consumed<Consumption> | typeof RACE_LOST> {
    const right = visible.rights.find((candidate) => candidate.rightId === portion.rightId)!;
    const done = await this.changes
      .change(right, {
        actor: actorOf(principal),
        known: right,
        decide: (current) => recordUsage(current, { amount: portion.amount, announce }, visible.nowOf(current)),
      })
      .catch((error: unknown) => {
        if (error instanceof DomainError && error.code === 'conflict') return null;
        throw error;
      });
    if (done?.outcome !== 'changed') return RACE_LOST;
    const { next } = done.change;
    const after = visible.rights.map((candidate) => (candidate.rightId === next.rightId ? next : candidate));
    const target = { userId: right.userId, sku: right.sku };
    return {
      body: this.rights.answer({
        target,
        amount: portion.amount,
        taken: [portion],
        visible: { ...visible, rights: after },
      }),
      touched: [next],
    };
  }
}
