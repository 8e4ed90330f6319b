import { skuForUseCase, type SkuLookup } from '@rs/catalog-client';
import {
  actorOf,
  DomainError,
  grantOf,
  newId,
  refusedGrant,
  RightEventTypes,
  type HistoryPageRequest,
  type Principal,
  type RightCreateBody,
} from '@rs/contracts';
import type { HistoryLog, ListPage } from '@rs/store';
import { parseTimeInterval } from '@rs/time';
import { canGrantFor, canManage, canReadHistory, canSee, canUse, visibilityOf } from '../domain/access';
import { adjustUnits, exceedsMaxUnits, MAX_UNITS, recordUsage } from '../domain/metering';
import { asOf, decide, newRight, removal, type Decision, type RightCommand, type RightEntity } from '../domain/right';
import type { RightQuery } from '../store/right-store';
import { audienceOfList } from '../domain/audiences';
import { consumptions } from './metering-metrics';
import { RightChanges, type Judged, type RightChangesOptions } from './right-changes';

/** What a list asks for; who may see what comes from the caller. */
export type RightListQuery = Omit<RightQuery, 'audience' | 'active' | 'on'> & {
  /** Only this grantor's rights; null: all the caller may see. */
  grantorId: string | null;
  /** Only rights ACTIVE with this instant inside their interval; `now`: real time's, or the named clock's. */
  activeAt: Date | 'now' | null;
  /** A test clock the caller names: only the rights living on it, and `now` is its time. */
  clockId?: string;
};

/** A page of rights, each as of its now, and that now for each (its clock's time, or real time). */
export interface JudgedPage extends ListPage<RightEntity> {
  nowOf(right: RightEntity): Date;
}

/**
 * A right as a change left it (what the gateway's entitlement projection is told: docs/api.md),
 * and the instant the change was judged at, which its answer shows.
 */
export interface Changed extends Judged {
  removed: boolean;
}

/** What the rights use cases work with. */
export interface RightsUseCasesOptions extends RightChangesOptions {
  /** The rights' history (read by `history`; written where their messages are published). */
  history: HistoryLog;
  skus: SkuLookup;
}

/**
 * The rights API's use cases (docs/api.md): each checks who may do it, asks the pure domain what
 * happens, and hands the change to the one compare-and-set of a right (`RightChanges`), which
 * stores it with its messages. Each answers with the instant it judged at, so the answer and the
 * decision agree. The commands of the other services are `RightCommands`'.
 */
export class RightsUseCases {
  private readonly changes: RightChanges;

  constructor(private readonly options: RightsUseCasesOptions) {
    this.changes = new RightChanges(options);
  }

  /**
   * `id`: the id the gateway derived from an Idempotency-Key; when a right has it already (a
   * retry of a create whose answer was lost), that right is the answer and nothing is made.
   */
  async create(principal: Principal, userId: string, body: RightCreateBody, id?: string): Promise<Judged> {
    if (!canGrantFor(principal, body.grantorId)) {
      throw DomainError.notPermitted(`you may create rights only for your own grantor`);
    }
    const interval = parseTimeInterval(body.timeInterval);
    if (!interval.ok) throw DomainError.invalid(`timeInterval: ${interval.reason}`);
    const entry = await skuForUseCase(this.options.skus, body.sku);
    if (!entry) throw DomainError.invalid(`sku: ${body.sku} is not in the catalog`);
    // Service providers agree to what they serve (docs/security.md "Who may grant what").
    const grant = grantOf(entry, body.grantorId, body.serviceProviderId);
    if (!grant.ok) throw refusedGrant(grant.refusal);
    const { time, store, messages } = this.options;
    const rightId = id ?? newId(time.real().getTime());
    const now = await time.forCreation(body, { kind: 'right', id: rightId, connectId: userId });
    const right = newRight(
      {
        rightId,
        userId,
        state: body.state ?? 'CREATED',
        grantorId: body.grantorId,
        grantorContext: body.grantorContext ?? null,
        serviceProviderId: grant.serviceProviderId,
        sku: body.sku,
        payload: body.payload ?? null,
        quantity: body.quantity ?? null,
        grace: body.grace ?? null,
        subscriptionId: null,
        clockId: body.clockId ?? null,
        interval: interval.value,
      },
      now,
    );
    if (await store.insert(right, messages.of(right, [RightEventTypes.created], actorOf(principal))))
      return { right, now };
    const earlier = id === undefined ? null : await this.changes.find(userId, id);
    if (!earlier) throw DomainError.conflict(`right ${right.rightId} exists no more, or not for this user`);
    return earlier;
  }

  /** A right the caller may see, or 404 (docs/api.md: "User or right not found"). */
  async get(principal: Principal, userId: string, rightId: string): Promise<Judged> {
    const found = await this.changes.find(userId, rightId);
    if (!found || !canSee(principal, found.right)) throw DomainError.notFound(`no right ${rightId} for user ${userId}`);
    return found;
  }

  /** docs/api.md "Find by id": the right `rightId`, whichever user holds it, if the caller may see it. */
  async locate(principal: Principal, rightId: string): Promise<Judged> {
    const stored = await this.options.store.findById(rightId);
    const now = stored && (await this.options.time.one(stored));
    const right = stored && asOf(stored, now!);
    if (!right || !canSee(principal, right)) throw DomainError.notFound(`no right ${rightId}`);
    return { right, now: now! };
  }

  /**
   * docs/api.md "History": every change of a right the caller may read, oldest first; a
   * removed right's history stays readable by its grantor and admins.
   */
  async history(principal: Principal, userId: string, rightId: string, page: HistoryPageRequest) {
    const found = await this.options.store.findEvenRemoved(userId, rightId);
    // The generation a read shows: an ended right's expiry counts although not written yet.
    if (found) found.entity = asOf(found.entity, await this.options.time.one(found.entity));
    if (!found || !canReadHistory(principal, found.entity, found.removed))
      throw DomainError.notFound(`no right ${rightId} for user ${userId}`);
    return this.options.history.entries(rightId, page, found.entity.generation);
  }

  /**
   * A page of a user's rights the caller may see, each as of now; with `activeAt`, only those
   * ACTIVE at that instant, which excludes every right ended by now, its expiry written or not.
   * A rehearsal stays a rehearsal (docs/api.md "Test clocks"): an `active` list counts the rights
   * on real time, unless the caller names a clock, whose rights alone it then lists, at its time.
   */
  async list(principal: Principal, query: RightListQuery): Promise<JudgedPage> {
    const { activeAt, clockId, grantorId, ...rest } = query;
    const { time, store } = this.options;
    const now = clockId === undefined ? time.real() : await time.ofNamedClock(clockId);
    const at = activeAt === 'now' ? now : activeAt;
    const page = await store.list({
      ...rest,
      audience: audienceOfList({
        grantorId,
        grantorOrProvider: visibilityOf(principal, grantorId ?? undefined)?.grantorOrProvider ?? null,
      }),
      on: clockId !== undefined ? { clockId } : at ? { clockId: null } : null,
      active: at && { at, endsAfter: at > now ? at : now },
    });
    const nowOf = await time.of(page.items);
    return { items: page.items.map((right) => asOf(right, nowOf(right))), last: page.last, nowOf };
  }

  remove(principal: Principal, userId: string, rightId: string, expectedGeneration?: number): Promise<Changed> {
    return this.change(principal, { userId, rightId, expectedGeneration }, 'manage', removal);
  }

  transition(
    principal: Principal,
    userId: string,
    rightId: string,
    command: RightCommand,
    expectedGeneration?: number,
  ): Promise<Changed> {
    return this.change(principal, { userId, rightId, expectedGeneration }, 'manage', (right, now) =>
      decide(right, command, now),
    );
  }

  /**
   * Usage of a right (docs/api.md "Usage"); of a metered one, `amount` units (default 1). One
   * sent under an Idempotency-Key is the consumption use cases' (`useRight`): its record
   * decides whether it was applied (docs/decisions/0051).
   */
  async use(
    principal: Principal,
    target: { userId: string; rightId: string; expectedGeneration?: number },
    amount = 1,
    caller?: AbortSignal,
  ): Promise<Changed> {
    // The decision the write went with (a compare-and-set that lost decides again): what to count.
    let decided: Decision | undefined;
    try {
      const decideUsage = async (right: RightEntity, now: Date) => {
        const announce = (await skuForUseCase(this.options.skus, right.sku))?.announceOnUsage ?? false;
        decided = recordUsage(right, { amount, announce }, now);
        return decided;
      };
      const changed = await this.change(principal, target, 'use', decideUsage, caller);
      if (decided?.kind === 'change' && decided.consumed !== undefined) consumptions.inc({ outcome: 'consumed' });
      return changed;
    } catch (error) {
      if (decided?.kind === 'conflict' && decided.reason.startsWith('remaining:'))
        consumptions.inc({ outcome: 'short' });
      throw error;
    }
  }

  /**
   * docs/api.md "Adjustments": units added to a metered right by hand (negative: taken away) by
   * its grantor, its grantor's `write` staff or an admin; exact under concurrent consumption,
   * like every change of a right (one compare-and-set on its generation).
   */
  adjust(principal: Principal, target: { userId: string; rightId: string }, amount: number): Promise<Changed> {
    return this.change(principal, target, 'manage', (right, now) => {
      if (exceedsMaxUnits(right, amount))
        throw DomainError.invalid(
          `amount: a right holds at most ${MAX_UNITS} units; this one has ${right.remaining}, so it may gain at most ${MAX_UNITS - right.remaining!}`,
        );
      return adjustUnits(right, amount, now);
    });
  }

  /**
   * A change a caller asks for through the API (docs/api.md), with its access rules, judged at
   * the right's now for a change (409 while its test clock is advancing).
   */
  private async change(
    principal: Principal,
    target: { userId: string; rightId: string; expectedGeneration?: number | undefined },
    permission: 'manage' | 'use',
    decideChange: (right: RightEntity, now: Date) => Decision | Promise<Decision>,
    caller?: AbortSignal,
  ): Promise<Changed> {
    const { userId, rightId, expectedGeneration } = target;
    let now = this.options.time.real();
    const done = await this.changes.change(target, {
      actor: actorOf(principal),
      authorize: (right) => {
        const allowed = permission === 'use' ? canUse(principal, right) : canManage(principal, right);
        // docs/api.md "Principals and authorization": remove, activate and suspend of another grantor's right
        // are 401 whether or not the caller could read it; usage of a right it cannot see is 404, and
        // so is any change a staff member asks of a right it cannot see, as an unknown id is
        // (docs/identity-providers.md "Issuers stay in their lane").
        if (!allowed && (permission === 'use' || principal.scheme === 'staff') && !canSee(principal, right))
          throw DomainError.notFound(`no right ${rightId} for user ${userId}`);
        if (!allowed)
          throw DomainError.notPermitted(`you may not ${permission === 'use' ? 'use' : 'change'} this right`);
      },
      expectedGeneration,
      decide: async (right) => {
        now = await this.options.time.forChange(right);
        return decideChange(right, now);
      },
      caller,
    });
    if (done.outcome === 'missing') throw DomainError.notFound(`no right ${rightId} for user ${userId}`);
    if (done.outcome === 'unchanged') return { right: done.current, removed: false, now };
    return { right: done.change.next, removed: done.change.removes === true, now };
  }
}
