import { mayReadRight, type Entitlement, type Principal, type ProjectedRight } from '@rs/contracts';
import { parseTimeInterval } from '@rs/time';

/** A right the projection holds: ACTIVE, its interval not ended (docs/api.md "Entitlement checks"). */
interface HeldRight {
  rightId: string;
  grantorId: string;
  serviceProviderId: string | null;
  used: boolean;
  /** A metered right's units, and those left (null on a plain right). */
  quantity: number | null;
  remaining: number | null;
  sequence: number;
  start: number;
  end: number;
  /** The end as the right's interval writes it (its offset kept, docs/api.md "Time"). */
  until: string;
  /** When its grace ends (docs/api.md "Grace"), as an instant and as shown; `end` and null without one. */
  expires: number;
  graceEnds: string | null;
  /** The test clock it lives on (docs/decisions/0048), or null. */
  clockId: string | null;
  /** Where it is in its user's and SKU's list (so letting it go is one step, not a search). */
  slot: number;
}

/**
 * Where a check is asked (docs/api.md "Test clocks"): on real time (`clockId` null), or on the
 * test clock the caller names, at its time. Only the rights living there count: a rehearsal
 * never entitles anyone in real time, nor real rights a rehearsal. The projection does not know
 * clocks' times; what lives on one leaves it by its events (expired, removed), never by the
 * passing of real time.
 */
export interface CheckedOn {
  clockId: string | null;
  now: number;
}

/** What the projection remembers of a right it does not hold: how far it has seen it, and since when. */
interface Passed {
  sequence: number;
  at: number;
}

/**
 * How long the projection remembers the generation of a right it let go (suspended, removed,
 * expired, …), so that a late or repeated event of an older generation cannot bring it back.
 * Events of one right arrive within seconds of each other; a minute of margin per second.
 */
export const REMEMBER_PASSED_MS = 10 * 60_000;

/**
 * The entitlement projection (docs/api.md "Entitlement checks", docs/decisions/0034): every
 * right that is ACTIVE and whose interval has not ended, by user and SKU, in memory. It
 * learns from right events, from the answers of the changes the gateway forwards and from
 * pages of the rights service, all as `ProjectedRight`s, and keeps each right at the highest
 * generation it has seen, so a late or repeated one never rolls a right back. Intervals are
 * compared with the instant of the check: a right starts and ends without an event. Pure.
 */
export class EntitlementProjection {
  private readonly byId = new Map<string, HeldRight>();
  /**
   * `<connectId> <sku>` → the rights held for them (a space: neither may contain one). A list
   * (compact: most users hold one or two) whose entries know their slot, so that a user given
   * very many rights of one SKU does not make each change of theirs cost as many steps
   * (docs/api.md).
   */
  private readonly byUserSku = new Map<string, HeldRight[]>();
  /** A user's SKUs that `byUserSku` holds rights of (the list of a user's entitlements). */
  private readonly skusByUser = new Map<string, Set<string>>();
  private readonly passed = new Map<string, Passed>();

  get size(): number {
    return this.byId.size;
  }

  /** Applies what is known of a right; true when the projection changed (it was newer). */
  apply(right: ProjectedRight, now: number): boolean {
    const known = this.byId.get(right.rightId)?.sequence ?? this.passed.get(right.rightId)?.sequence ?? 0;
    if (right.sequence <= known) return false;
    const interval = parseTimeInterval(right.timeInterval);
    const end = interval.ok ? interval.value.end.getTime() : Number.NEGATIVE_INFINITY;
    const expires = right.graceEnds === null ? end : Date.parse(right.graceEnds);
    const clockId = right.clockId ?? null;
    const ended = clockId === null && !(expires > now);
    if (right.removed || right.state !== 'ACTIVE' || ended || !interval.ok) {
      this.release(right.rightId, right.connectId, right.sku);
      // A removed right never comes back, whatever its generation (docs/api.md).
      this.passed.set(right.rightId, { sequence: right.removed ? Number.POSITIVE_INFINITY : right.sequence, at: now });
      return true;
    }
    const held: HeldRight = {
      rightId: right.rightId,
      grantorId: right.grantorId,
      serviceProviderId: right.serviceProviderId,
      used: right.used,
      quantity: right.quantity,
      remaining: right.remaining,
      sequence: right.sequence,
      start: interval.value.start.getTime(),
      end,
      until: interval.value.text.slice(interval.value.text.indexOf('/') + 1),
      expires,
      graceEnds: right.graceEnds,
      clockId,
      slot: 0,
    };
    this.release(right.rightId, right.connectId, right.sku);
    this.passed.delete(right.rightId);
    this.byId.set(right.rightId, held);
    const key = keyOf(right.connectId, right.sku);
    const rights = this.byUserSku.get(key);
    if (rights) {
      held.slot = rights.length;
      rights.push(held);
    } else {
      this.byUserSku.set(key, [held]);
      const skus = this.skusByUser.get(right.connectId);
      if (skus) skus.add(right.sku);
      else this.skusByUser.set(right.connectId, new Set([right.sku]));
    }
    return true;
  }

  /**
   * The check of every SKU of which the user holds a right the caller may read, living where
   * the check is asked (docs/api.md "Entitlements of a user"), in SKU order.
   */
  checkAll(principal: Principal, connectId: string, on: CheckedOn): Array<Omit<Entitlement, 'checkedAt'>> {
    const skus = [...(this.skusByUser.get(connectId) ?? [])].sort();
    const held = (sku: string) =>
      this.byUserSku
        .get(keyOf(connectId, sku))!
        .some((right) => right.clockId === on.clockId && mayReadRight(principal, right));
    return skus.filter(held).map((sku) => this.check(principal, connectId, sku, on));
  }

  /**
   * The check (docs/api.md): the rights of the user and SKU the caller may read (docs/api.md)
   * that live where the check is asked (`on`) and are ACTIVE with their interval holding its
   * now; their `balance`, the units left over the metered ones; entitled when a plain right is
   * among them or the balance covers `amount`.
   */
  check(
    principal: Principal,
    connectId: string,
    sku: string,
    on: CheckedOn,
    amount = 1,
  ): Omit<Entitlement, 'checkedAt'> {
    const { now, clockId } = on;
    const found: HeldRight[] = [];
    for (const right of this.byUserSku.get(keyOf(connectId, sku)) ?? []) {
      if (right.clockId === clockId && right.start <= now && now < right.expires && mayReadRight(principal, right))
        found.push(right);
    }
    // A right in its grace (docs/api.md "Grace") is listed until the grace's end.
    const inGrace = (right: HeldRight) => now >= right.end;
    const shownEnd = (right: HeldRight) => (inGrace(right) ? right.expires : right.end);
    const latest = found.reduce<HeldRight | null>(
      (last, right) => (!last || shownEnd(right) > shownEnd(last) ? right : last),
      null,
    );
    const metered = found.filter((right) => right.remaining !== null);
    const balance = metered.length > 0 ? metered.reduce((sum, right) => sum + right.remaining!, 0) : null;
    const plain = metered.length < found.length;
    const shown = (right: HeldRight) => (inGrace(right) ? right.graceEnds! : right.until);
    return {
      connectId,
      sku,
      clockId,
      entitled: plain || (balance !== null && balance >= amount),
      until: latest && shown(latest),
      balance,
      rights: found.map((right) => ({
        rightId: right.rightId,
        grantorId: right.grantorId,
        serviceProviderId: right.serviceProviderId,
        until: shown(right),
        used: right.used,
        quantity: right.quantity,
        remaining: right.remaining,
        inGrace: inGrace(right),
      })),
    };
  }

  /**
   * Lets go of the rights whose interval (and grace) has ended, and forgets what it let go long
   * ago. What lives on a test clock leaves by its events.
   */
  sweep(now: number): void {
    const ended = (right: HeldRight) => right.clockId === null && right.expires <= now;
    for (const [key, rights] of this.byUserSku) {
      if (!rights.some(ended)) continue;
      for (const right of rights)
        if (ended(right)) {
          this.byId.delete(right.rightId);
          this.passed.set(right.rightId, { sequence: right.sequence, at: now });
        }
      const current = rights.filter((right) => !ended(right));
      current.forEach((right, slot) => (right.slot = slot));
      if (current.length > 0) this.byUserSku.set(key, current);
      else this.forget(key);
    }
    for (const [rightId, { at }] of this.passed) if (now - at > REMEMBER_PASSED_MS) this.passed.delete(rightId);
  }

  /** A projection to rebuild into, that remembers what this one let go (so a rebuild cannot bring it back). */
  emptyCopy(): EntitlementProjection {
    const next = new EntitlementProjection();
    for (const [rightId, passed] of this.passed) next.passed.set(rightId, passed);
    return next;
  }

  private release(rightId: string, connectId: string, sku: string): void {
    const held = this.byId.get(rightId);
    if (!held) return;
    this.byId.delete(rightId);
    const key = keyOf(connectId, sku);
    const rights = this.byUserSku.get(key)!;
    const last = rights.pop()!;
    if (last !== held) {
      rights[held.slot] = last;
      last.slot = held.slot;
    }
    if (rights.length === 0) this.forget(key);
  }

  /** A user and SKU of which no right is held any longer. */
  private forget(key: string): void {
    this.byUserSku.delete(key);
    const [connectId, sku] = key.split(' ') as [string, string];
    const skus = this.skusByUser.get(connectId);
    skus?.delete(sku);
    if (skus?.size === 0) this.skusByUser.delete(connectId);
  }
}

const keyOf = (connectId: string, sku: string) => `${connectId} ${sku}`;
