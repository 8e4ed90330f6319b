import { skuForUseCase, type SkuLookup } from '@rs/catalog-client';
import { DomainError, newId, type Consumption, type Principal } from '@rs/contracts';
import { RACE_LOST, untilStored } from '@rs/store';
import { canUse } from '../domain/access';
import { planConsumption, type Portion } from '../domain/metering';
import { asOf, availableOf, isUsable, type RightEntity } from '../domain/right';
import type { RightStore } from '../store/right-store';
import { consumptions } from './metering-metrics';
import type { ObjectTime, OnClock } from './time';

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

/** The caller's rights of a user's SKU, each as of its own now (a test clock's time, or real time). */
export interface Visible {
  rights: RightEntity[];
  nowOf(right: OnClock): Date;
}

/** Who asks for a consumption or reservation, as its attempts see it. */
export interface Asker {
  /** The id the gateway derived from the request's Idempotency-Key; none: a fresh one each attempt. */
  id?: string | undefined;
  /** Aborted when the caller stopped waiting: attempts not begun by then are not begun. */
  caller?: AbortSignal | undefined;
}

/** One attempt of a consumption or reservation: its id, whether it is fresh, the rights it sees. */
export interface Attempt {
  id: string;
  /** Nobody can have seen the id before: the process made it (no Idempotency-Key). */
  fresh: boolean;
  visible: Visible;
}

/**
 * The metered rights of a user's SKU as a consumption by SKU or a reservation sees them
 * (docs/api.md "Consumption by SKU"): which the caller may use where it asks, their burn order,
 * their balance, and the answer that shows them.
 */
export class SkuRights {
  constructor(private readonly options: { store: RightStore; skus: SkuLookup; time: ObjectTime }) {}

  /**
   * Runs `attempt` until it is not overtaken by another replica (`RACE_LOST`), in turn with this
   * process's other consumptions of the user's SKU (`untilStored`: they change the same few
   * rights), each time with the caller's rights of the SKU read again. Its id is the one the
   * gateway derived from an Idempotency-Key, else a fresh one each time. Nothing is begun once
   * the caller has left: under a burst, its turn would only delay the callers still waiting.
   */
  attempts<T>(
    principal: Principal,
    target: SkuOfUser,
    asker: Asker,
    attempt: (context: Attempt) => Promise<T | typeof RACE_LOST>,
  ): Promise<T> {
    return untilStored(
      `the ${target.sku} rights of ${target.userId}`,
      async () =>
        attempt({
          id: asker.id ?? newId(this.options.time.real().getTime()),
          fresh: asker.id === undefined,
          visible: await this.visible(principal, target, { toChange: true }),
        }),
      asker.caller,
    );
  }

  /** A right as stored (a reservation's: who may settle it is judged by what it is, not when). */
  stored(userId: string, rightId: string): Promise<RightEntity | null> {
    return this.options.store.find(userId, rightId);
  }

  /**
   * The user's rights of the SKU that the caller may use where it asks (real time, or the clock
   * it names: 404 when there is none), each as of its now; `toChange`: to consume or hold them
   * (409 while their clock is advancing).
   */
  async visible(principal: Principal, target: SkuOfUser, how: { toChange: boolean }): Promise<Visible> {
    const { store, time } = this.options;
    if (target.clockId !== null) await time.ofNamedClock(target.clockId);
    const stored = (await store.ofUserAndSku(target.userId, target.sku)).filter(
      (right) => right.clockId === target.clockId,
    );
    const nowOf = await (how.toChange ? time.forChangeOf(stored) : time.of(stored));
    return {
      rights: stored.map((right) => asOf(right, nowOf(right))).filter((right) => canUse(principal, right)),
      nowOf,
    };
  }

  /** The burn order over the active metered rights; 409 with nothing consumed when they hold too few. */
  plan(target: SkuOfUser, { rights, nowOf }: Visible, amount: number): Portion[] {
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

  /** The units anyone may take now over the active metered rights among `rights`, each at its now. */
  balance({ rights, nowOf }: Visible): number {
    return rights.reduce((sum, right) => sum + (isUsable(right, nowOf(right)) ? (availableOf(right) ?? 0) : 0), 0);
  }

  /** A consumption's answer: what it took from each right, and what is left. */
  answer(consumed: {
    target: Pick<SkuOfUser, 'userId' | 'sku'>;
    amount: number;
    taken: readonly Portion[];
    visible: Visible;
  }): Consumption {
    const { target, visible } = consumed;
    return {
      connectId: target.userId,
      sku: target.sku,
      amount: consumed.amount,
      consumed: consumed.taken.map((portion) => ({
        rightId: portion.rightId,
        amount: portion.amount,
        remaining: visible.rights.find((right) => right.rightId === portion.rightId)?.remaining ?? 0,
      })),
      remaining: this.balance(visible),
    };
  }

  /** Whether the catalog asks a first use of the SKU to be announced (service.announce). */
  async announces(sku: string): Promise<boolean> {
    return (await skuForUseCase(this.options.skus, sku))?.announceOnUsage ?? false;
  }
}
