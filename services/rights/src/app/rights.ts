import pLimit from 'p-limit';
import { periodRightId } from '@rs/hashing';
import { skuForUseCase, type SkuLookup } from '@rs/catalog-client';
import {
  actorOf,
  type HistoryPageRequest,
  InvalidMessage,
  newId,
  RightEventTypes,
  systemActor,
  type RightCreateBody,
  type RightsCascadeData,
  type RightsIssueData,
  DomainError,
  grantOf,
  refusedGrant,
} from '@rs/contracts';
import type { Principal } from '@rs/contracts';
import { canGrantFor, canManage, canReadHistory, canSee, canUse, visibilityOf } from '../domain/access';
import {
  asOf,
  decide,
  endAt,
  expiryOf,
  type ReadExpiry,
  hasEnded,
  adjustUnits,
  recordUsage,
  removal,
  supersededBeforeIssue,
  type Decision,
  type RightCommand,
  type RightEntity,
} from '../domain/right';
import {
  changeOne,
  eachItem,
  reasonOf,
  UNCHANGED,
  type HistoryLog,
  type ItemFailure,
  type ListPage,
  type OutboxEntry,
} from '@rs/store';
import { CLOCK_DELETION, CLOCK_REMOVALS_AT_ONCE, NowFor, type ClockLookup } from '@rs/http';
import { judgedInstant, parseTimeInterval, systemClock, type Clock } from '@rs/time';
import type { RightMessages } from '../messages/events';
import { UnreadableRight, type RightQuery, type RightStore } from '../store/right-store';
import { consumptions, unitsConsumed } from './metering-metrics';

/**
 * The right a template yields for a period (docs/api.md "Renewal"), with the provider its
 * grant gets as the catalog stands now; throws when its interval does not parse.
 */
function issuedRight(
  command: RightsIssueData,
  template: RightsIssueData['rights'][number],
  serviceProviderId: string | null,
  now: Date,
): RightEntity {
  const interval = parseTimeInterval(template.timeInterval);
  if (!interval.ok) throw new InvalidMessage(`rights[${template.templateIndex}].timeInterval: ${interval.reason}`);
  return {
    rightId: periodRightId(command.subscriptionId, command.periodStart, template.templateIndex, command.plan ?? 0),
    userId: command.connectId,
    state: template.state,
    grantorId: command.grantorId,
    grantorContext: template.grantorContext,
    serviceProviderId,
    sku: template.sku,
    payload: null,
    used: false,
    quantity: template.quantity,
    remaining: template.quantity,
    holds: [],
    start: interval.value.start,
    end: interval.value.end,
    grace: template.grace,
    expiresAt: expiryOf(interval.value.end, template.grace),
    timeInterval: interval.value.text,
    subscriptionId: command.subscriptionId,
    clockId: command.clockId ?? null,
    generation: 1,
    createdAt: now,
    updatedAt: now,
  };
}

/** A right removed meanwhile (by its grantor, or a removal delivered twice) is gone already. */
function unlessGone(error: unknown): void {
  if (!(error instanceof DomainError && error.code === 'not_found')) throw error;
}

/** A template of a period that issued no right: its grantor may no longer grant its SKU. */
export interface Withheld {
  command: RightsIssueData;
  templateIndex: number;
  reason: string;
}

/** What a list asks for; who may see what comes from the caller. */
export type RightListQuery = Omit<RightQuery, 'grantorOrProvider' | 'active' | 'on'> & {
  /** Only rights ACTIVE with this instant inside their interval; `now`: real time's, or the named clock's. */
  activeAt: Date | 'now' | null;
  /** A test clock the caller names: only the rights living on it, and `now` is its time. */
  clockId?: string;
};

/** A right as a change left it (what the gateway's entitlement projection is told: docs/api.md). */
export interface Changed {
  right: RightEntity;
  removed: boolean;
}

/** What the rights use cases work with. */
export interface RightsUseCasesOptions {
  store: RightStore;
  /** The rights' history (read by `history`; written where their messages are published). */
  history: HistoryLog;
  skus: SkuLookup;
  messages: RightMessages;
  clock?: Clock;
  /** The times of test clocks (docs/decisions/0048); without it, everything lives on real time. */
  clocks?: ClockLookup;
}

/**
 * The rights use cases (docs/api.md): each checks who may do it (docs/api.md), asks the pure
 * domain what happens, turns the change into its messages (`RightMessages`) and stores both
 * together. HTTP routes call one each; the command handlers call the batch ones.
 */
export class RightsUseCases {
  private readonly store: RightStore;
  private readonly changes: HistoryLog;
  private readonly skus: SkuLookup;
  private readonly messages: RightMessages;
  private readonly clock: Clock;
  /** "Now" for each right: its test clock's time, or real time. */
  readonly nowFor: NowFor;

  constructor(options: RightsUseCasesOptions) {
    this.store = options.store;
    this.changes = options.history;
    this.skus = options.skus;
    this.messages = options.messages;
    this.clock = options.clock ?? systemClock;
    this.nowFor = new NowFor(this.clock, options.clocks);
  }

  /**
   * `id`: the id the gateway derived from an Idempotency-Key; when a right has it already (a
   * retry of a create whose answer was lost), that right is the answer and nothing is made.
   */
  async create(principal: Principal, userId: string, body: RightCreateBody, id?: string): Promise<RightEntity> {
    if (!canGrantFor(principal, body.grantorId)) {
      throw DomainError.notPermitted(`you may create rights only for your own grantor`);
    }
    const interval = parseTimeInterval(body.timeInterval);
    if (!interval.ok) throw DomainError.invalid(`timeInterval: ${interval.reason}`);
    const entry = await this.sku(body.sku);
    if (!entry) throw DomainError.invalid(`sku: ${body.sku} is not in the catalog`);
    // Service providers agree to what they serve (docs/security.md "Who may grant what").
    const grant = grantOf(entry, body.grantorId, body.serviceProviderId);
    if (!grant.ok) throw refusedGrant(grant.refusal);
    const rightId = id ?? newId(this.clock().getTime());
    const now = await this.nowFor.forCreation(body, { kind: 'right', id: rightId, connectId: userId });
    const right: RightEntity = {
      rightId,
      userId,
      state: body.state ?? 'CREATED',
      grantorId: body.grantorId,
      grantorContext: body.grantorContext ?? null,
      serviceProviderId: grant.serviceProviderId,
      sku: body.sku,
      payload: body.payload ?? null,
      used: false,
      quantity: body.quantity ?? null,
      remaining: body.quantity ?? null,
      holds: [],
      start: interval.value.start,
      end: interval.value.end,
      grace: body.grace ?? null,
      expiresAt: expiryOf(interval.value.end, body.grace ?? null),
      timeInterval: interval.value.text,
      subscriptionId: null,
      clockId: body.clockId ?? null,
      generation: 1,
      createdAt: now,
      updatedAt: now,
    };
    if (await this.store.insert(right, this.messages.of(right, [RightEventTypes.created], actorOf(principal))))
      return right;
    const earlier = id === undefined ? null : await this.find(userId, id);
    if (!earlier) throw DomainError.conflict(`right ${right.rightId} exists no more, or not for this user`);
    return earlier;
  }

  /** A right the caller may see, or 404 (docs/api.md: "User or right not found"). */
  async get(principal: Principal, userId: string, rightId: string): Promise<RightEntity> {
    const right = await this.find(userId, rightId);
    if (!right || !canSee(principal, right)) throw DomainError.notFound(`no right ${rightId} for user ${userId}`);
    return right;
  }

  /** docs/api.md "Find by id": the right `rightId`, whichever user holds it, if the caller may see it. */
  async locate(principal: Principal, rightId: string): Promise<RightEntity> {
    const stored = await this.store.findById(rightId);
    const right = stored && asOf(stored, await this.nowFor.one(stored));
    if (!right || !canSee(principal, right)) throw DomainError.notFound(`no right ${rightId}`);
    return right;
  }

  /**
   * docs/api.md "History": every change of a right the caller may read, oldest first; a
   * removed right's history stays readable by its grantor and admins.
   */
  async history(principal: Principal, userId: string, rightId: string, page: HistoryPageRequest) {
    const found = await this.store.findEvenRemoved(userId, rightId);
    // The generation a read shows: an ended right's expiry counts although not written yet.
    if (found) found.entity = asOf(found.entity, await this.nowFor.one(found.entity));
    if (!found || !canReadHistory(principal, found.entity, found.removed))
      throw DomainError.notFound(`no right ${rightId} for user ${userId}`);
    return this.changes.entries(rightId, page, found.entity.generation);
  }

  /** A page of a bucket's rights as stored while they may expire, for the scheduler's rebuild. */
  expirable(bucket: number, page: { after: string | undefined; limit: number }) {
    return this.store.expirable(bucket, page);
  }

  /**
   * A page of a bucket's rights that may entitle now (stored ACTIVE, their interval not ended),
   * for the gateway's projection (docs/entitlements.md); `lastId` as the store read it.
   */
  async entitled(bucket: number, page: { after: string | undefined; limit: number }) {
    const read = await this.store.storedActive(bucket, page);
    const now = await this.nowFor.of(read.items);
    return { items: read.items.filter((right) => !hasEnded(right, now(right))), lastId: read.lastId };
  }

  /**
   * A page of a user's rights the caller may see, each as of now; with `activeAt`, only those
   * ACTIVE at that instant, which excludes every right ended by now, its expiry written or not.
   * A rehearsal stays a rehearsal (docs/api.md "Test clocks"): an `active` list counts the rights
   * on real time, unless the caller names a clock, whose rights alone it then lists, at its time.
   */
  async list(principal: Principal, query: RightListQuery): Promise<ListPage<RightEntity>> {
    const { activeAt, clockId, ...rest } = query;
    const now = clockId === undefined ? this.clock() : await this.nowFor.ofNamedClock(clockId);
    const at = activeAt === 'now' ? now : activeAt;
    const page = await this.store.list({
      ...rest,
      grantorOrProvider: visibilityOf(principal, rest.grantorId ?? undefined)?.grantorOrProvider ?? null,
      on: clockId !== undefined ? { clockId } : at ? { clockId: null } : null,
      active: at && { at, endsAfter: at > now ? at : now },
    });
    const nowOf = await this.nowFor.of(page.items);
    return { items: page.items.map((right) => asOf(right, nowOf(right))), last: page.last };
  }

  /**
   * A right as of now (docs/decisions/0027): one whose interval has ended reads EXPIRED, whether
   * or not its expiry is written yet. Every read of the use cases goes through it; batch expiry
   * reads what is stored, and judges as of the scheduler's instant.
   */
  private async find(userId: string, rightId: string): Promise<RightEntity | null> {
    const right = await this.store.find(userId, rightId);
    return right && asOf(right, await this.nowFor.one(right));
  }

  async remove(principal: Principal, userId: string, rightId: string, expectedGeneration?: number): Promise<Changed> {
    return this.change(principal, { userId, rightId, expectedGeneration }, 'manage', async (right) =>
      removal(right, await this.nowFor.forChange(right)),
    );
  }

  /**
   * A deleted test clock takes what lives on it along (docs/decisions/0048): each of its rights
   * is removed as an admin would remove it (`right.removed`). Idempotent; returns how many.
   */
  async removeClock(clockId: string): Promise<number> {
    const onClock = await this.store.onClock(clockId);
    await pLimit(CLOCK_REMOVALS_AT_ONCE).map(onClock, ({ userId, rightId }) =>
      this.remove(CLOCK_DELETION, userId, rightId).catch(unlessGone),
    );
    return onClock.length;
  }

  async transition(
    principal: Principal,
    userId: string,
    rightId: string,
    command: RightCommand,
    expectedGeneration?: number,
  ): Promise<Changed> {
    return this.change(principal, { userId, rightId, expectedGeneration }, 'manage', async (right) =>
      decide(right, command, await this.nowFor.forChange(right)),
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
  ): Promise<Changed> {
    // The decision the write went with (a compare-and-set that lost decides again): what to count.
    let decided: Decision | undefined;
    try {
      const changed = await this.change(
        principal,
        { ...target, expectedGeneration: target.expectedGeneration },
        'use',
        async (right) => {
          decided = recordUsage(
            right,
            await this.nowFor.forChange(right),
            (await this.sku(right.sku))?.announceOnUsage ?? false,
            amount,
          );
          return decided;
        },
      );
      if (decided?.kind === 'change' && decided.consumed !== undefined) {
        consumptions.inc({ outcome: 'consumed' });
        unitsConsumed.inc(decided.consumed);
      }
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
  async adjust(principal: Principal, target: { userId: string; rightId: string }, amount: number): Promise<Changed> {
    return this.change(principal, { ...target, expectedGeneration: undefined }, 'manage', async (right) =>
      adjustUnits(right, amount, await this.nowFor.forChange(right)),
    );
  }

  /**
   * `rights.expire` from the scheduler, for a batch: every right of the batch whose interval
   * has ended by `judgedAt` (when the scheduler found it due; our clock may be behind) or by
   * now is EXPIRED: that follows from its interval (`asOf`, docs/decisions/0027), and nothing
   * is written here. Returns those rights, whose `right.expired` the caller publishes before
   * it acks the command (docs/decisions/0011; an event built again has the same id), and
   * those of them whose expiry is not stored yet, which the caller has written after. A right
   * not yet ended is left alone; idempotent.
   */
  async expireMany(
    items: ReadonlyArray<{ connectId: string; rightId: string; end?: string; clockId?: string }>,
    judgedAt: Date,
  ): Promise<{ expired: RightEntity[]; unwritten: RightEntity[]; failed: ItemFailure[]; outbox: OutboxEntry[] }> {
    // A command's rights are all on one test clock, or all on real time (docs/decisions/0048).
    const now = judgedInstant(
      judgedAt,
      this.clock,
      items.some((item) => item.clockId),
    );
    const found = await this.store.storedMany(
      items.map((item) => ({
        userId: item.connectId,
        id: item.rightId,
        ...(item.end ? { end: new Date(item.end) } : {}),
      })),
    );
    // docs/api.md: a right whose expiry fails (bad stored data, a bug) fails alone.
    const failed: ItemFailure[] = [];
    const read = eachItem(
      found,
      (stored) => {
        if (stored instanceof UnreadableRight) throw stored;
        const right = stored && asOf(stored, now);
        return right?.state === 'EXPIRED' ? { right, unwritten: stored!.state !== 'EXPIRED' } : null;
      },
      failed,
    ).flatMap(({ value }) => (value ? [value] : []));
    for (const { index, error } of failed) {
      const right = found[index];
      if (right) await this.store.setAside(right.rightId, right.generation, reasonOf(error)).catch(() => undefined);
    }
    const expired = read.map(({ right }) => right);
    return {
      expired,
      unwritten: read.filter(({ unwritten }) => unwritten).map(({ right }) => right),
      failed,
      outbox: expired.flatMap((right) => this.messages.of(right, [RightEventTypes.expired], systemActor('scheduler'))),
    };
  }

  /** Stores expiries that reads show already (see `expireMany`); for each, whether it was stored. */
  writeExpiries(expired: readonly ReadExpiry[]) {
    return this.store.writeExpiries(expired);
  }

  /**
   * `rights.issue`, for a batch of periods (docs/api.md "Renewal"): every right of every
   * period in few `insertMany` calls. Each right's id is derived from (subscription, period
   * start, template), so a repeated or half-done batch creates nothing twice. Returns every
   * right of the batch, new or found, and their `right.created`, which the caller publishes
   * before it acks the commands (docs/decisions/0011).
   */
  async issueForPeriods(
    commands: readonly RightsIssueData[],
  ): Promise<{ issued: RightEntity[]; failed: ItemFailure[]; withheld: Withheld[]; outbox: OutboxEntry[] }> {
    // A right on a test clock is issued as of its period's due instant on that clock (docs/decisions/0048).
    const real = this.clock();
    const nowOf = (command: RightsIssueData) => (command.clockId ? new Date(command.dueAt) : real);
    // The catalog as it stands at this renewal decides who may grant what: a template whose
    // grantor may no longer grant its SKU issues no right this period, and only it.
    const withheld: Withheld[] = [];
    const grants = await Promise.all(
      commands.map((command) =>
        Promise.all(
          command.rights.map(async (template) => {
            const entry = await this.skus.find(template.sku);
            const grant = entry
              ? grantOf(entry, command.grantorId, template.serviceProviderId)
              : {
                  ok: false as const,
                  refusal: { kind: 'grantor' as const, reason: `${template.sku} is not in the catalog` },
                };
            if (grant.ok) return { template, serviceProviderId: grant.serviceProviderId };
            withheld.push({ command, templateIndex: template.templateIndex, reason: grant.refusal.reason });
            return null;
          }),
        ),
      ),
    );
    // docs/api.md: a period whose rights cannot be made fails alone.
    const failed: ItemFailure[] = [];
    const periods = eachItem(
      commands,
      (command, index) =>
        grants[index]!.flatMap((granted) =>
          granted ? [issuedRight(command, granted.template, granted.serviceProviderId, nowOf(command))] : [],
        ),
      failed,
    );
    const made = periods.flatMap(({ value }) => value);
    const inserted = await this.store.insertManyWithoutEvents(made);
    // Some existed: a command again (its events go out again, as the first time), or rights a
    // later plan change or their grantor removed meanwhile, which nothing brings back
    // (docs/decisions/0052). Read only then: a renewal's rights are all new.
    const gone = inserted < made.length ? await this.store.tombstonesAmong(made.map((r) => r.rightId)) : null;
    const rights = gone ? made.filter((right) => !gone.has(right.rightId)) : made;
    const outbox = rights.flatMap((right) =>
      this.messages.of(right, [RightEventTypes.created], systemActor('subscriptions')),
    );
    return { issued: rights, failed, withheld, outbox };
  }

  /**
   * `rights.cascade` (docs/api.md "Suspend / activate"): suspend every ACTIVE right of the
   * subscription, or reactivate every SUSPENDED one whose interval has not ended; or end the
   * rights a plan change replaced, at its instant (docs/api.md "Plan changes"). Idempotent: a
   * right already changed is left as it is.
   */
  async cascade(command: RightsCascadeData): Promise<void> {
    const { connectId, subscriptionId } = command;
    // An end names its rights: read by id, what it reads is what it changes (docs/api.md
    // "Reads cost what they return"), however many periods the subscription has had.
    const rightIds =
      command.action === 'end'
        ? command.rightIds
        : (await this.store.ofSubscription(connectId, subscriptionId)).map((right) => right.rightId);
    const decideFor = (current: RightEntity, now: Date): Decision => {
      if (current.subscriptionId !== subscriptionId) return UNCHANGED;
      if (command.action === 'end') return endAt(current, { instant: new Date(command.at), text: command.at }, now);
      if (command.action === 'activate' && (current.state !== 'SUSPENDED' || hasEnded(current, now))) return UNCHANGED;
      if (command.action === 'suspend' && current.state !== 'ACTIVE') return UNCHANGED;
      return orUnchanged(decide(current, command.action, now));
    };
    for (const rightId of rightIds) {
      const done = await changeOne({
        what: `right ${rightId}`,
        load: () => this.find(connectId, rightId),
        decide: async (current): Promise<Decision> => decideFor(current, await this.nowFor.one(current)),
        write: (current, { next, events, removes }) =>
          this.store.update({
            current,
            next,
            outbox: this.messages.of(next, events, systemActor('subscriptions')),
            ...(removes ? { removes } : {}),
          }),
      });
      // docs/api.md "Plan changes": a later change supersedes an earlier one whose rights are
      // still on their way. Ended before it is issued, a right's id is kept so that its issue
      // creates nothing (docs/decisions/0052); issued meanwhile, it is ended as it is.
      if (done.outcome === 'missing' && command.action === 'end') {
        const at = new Date(command.at);
        const superseded = supersededBeforeIssue({ rightId, userId: connectId, subscriptionId }, at, this.clock());
        if (await this.store.supersede(superseded)) continue;
        // Its id exists: a tombstone (this end again, or a removal), or the right, issued meanwhile.
        if (!(await this.store.tombstonesAmong([rightId])).has(rightId))
          await this.cascade({ ...command, rightIds: [rightId] });
      }
    }
  }

  /** A change a caller asks for through the API (docs/api.md): the change pipeline, with its access rules. */
  private async change(
    principal: Principal,
    target: { userId: string; rightId: string; expectedGeneration: number | undefined },
    permission: 'manage' | 'use',
    decideChange: (right: RightEntity) => Decision | Promise<Decision>,
  ): Promise<Changed> {
    const { userId, rightId, expectedGeneration } = target;
    const done = await changeOne({
      what: `right ${rightId}`,
      load: () => this.find(userId, rightId),
      authorize: (right) => {
        const allowed = permission === 'use' ? canUse(principal, right) : canManage(principal, right);
        // docs/api.md "Principals and authorization": remove, activate and suspend of another grantor's right
        // are 401 whether or not the caller could read it; usage of a right it cannot see is 404.
        if (!allowed && permission === 'use' && !canSee(principal, right))
          throw DomainError.notFound(`no right ${rightId} for user ${userId}`);
        if (!allowed)
          throw DomainError.notPermitted(`you may not ${permission === 'use' ? 'use' : 'change'} this right`);
      },
      expectedGeneration,
      decide: decideChange,
      write: (current, { next, events, removes, consumed, adjusted }) =>
        this.store.update({
          current,
          next,
          outbox: this.messages.of(next, events, actorOf(principal), consumed ?? adjusted),
          removes,
        }),
    });
    if (done.outcome === 'missing') throw DomainError.notFound(`no right ${rightId} for user ${userId}`);
    if (done.outcome === 'unchanged') return { right: done.current, removed: false };
    return { right: done.change.next, removed: done.change.removes === true };
  }

  private sku(sku: string) {
    return skuForUseCase(this.skus, sku);
  }
}

/** Commands change only what they may: a transition that does not apply leaves the right as it is. */
const orUnchanged = (decision: Decision): Decision => (decision.kind === 'conflict' ? UNCHANGED : decision);
