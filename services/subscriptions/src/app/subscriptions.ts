import pLimit from 'p-limit';
import { skuForUseCase, type SkuLookup } from '@rs/catalog-client';
import {
  actorOf,
  type HistoryPageRequest,
  systemActor,
  newId,
  SubscriptionEventTypes,
  type SubscriptionCreateBody,
  type PlanChangeBody,
  type RightTemplate,
  type SubscriptionsRenewData,
  DomainError,
  grantOf,
  refusedGrant,
} from '@rs/contracts';
import type { Principal } from '@rs/contracts';
import { canManage, canReadHistory, canSee, canSubscribeFor, visibleGrantorOf } from '../domain/access';
import {
  changeOne,
  eachItem,
  isTransient,
  reasonOf,
  UNCHANGED,
  WriteFailed,
  type HistoryLog,
  type ItemFailure,
  type ListPage,
  type OutboxEntry,
} from '@rs/store';
import { CLOCK_DELETION, CLOCK_REMOVALS_AT_ONCE, NowFor, type ClockLookup } from '@rs/http';
import { judgedInstant, parseTimeSpec, systemClock, type Clock, type TimeSpec } from '@rs/time';
import { changePlan, withdrawChange } from '../domain/plan-change';
import type { Duration } from 'luxon';
import { boundsViolation, SHORTEST_PERIOD } from '../domain/bounds';
import { planRenewal, renewedState } from '../domain/renewal';
import { SubscriptionMessages } from '../messages/events';
import {
  decide,
  removal,
  firstPeriodToIssue,
  fromSnapshot,
  templateOf,
  timeSpecOf,
  type Decision,
  type SubscriptionCommand,
  type SubscriptionEntity,
} from '../domain/subscription';
import type { RenewalChange, SubscriptionQuery, SubscriptionStore } from '../store/subscription-store';

/** Rights of one subscription that renewal came too late to issue (docs/api.md "Renewal"). */
export interface MissedRights {
  subscriptionId: string;
  connectId: string;
  grantorId: string;
  rights: number;
}

/** What a renewal command did: the events and commands to publish, the rights it missed, and the items that failed alone. */
export interface RenewalOutcome {
  emitted: OutboxEntry[];
  missed: MissedRights[];
  failed: ItemFailure[];
}

interface PlannedRenewal extends RenewalChange {
  /** Its events and `rights.issue` commands. */
  outbox: OutboxEntry[];
  missedRights: number;
}

/** The outcome of one stored renewal. */
function renewedBy({ current, outbox, missedRights }: PlannedRenewal): Omit<RenewalOutcome, 'failed'> {
  const { subscriptionId, userId: connectId, grantorId } = current;
  return {
    emitted: outbox,
    missed: missedRights > 0 ? [{ subscriptionId, connectId, grantorId, rights: missedRights }] : [],
  };
}

/**
 * The subscription use cases (docs/api.md): who may (docs/api.md), what happens (the pure
 * domain), stored with its events and the rights cascade in one write.
 */
export interface SubscriptionUseCasesOptions {
  store: SubscriptionStore;
  changes: HistoryLog;
  skus: SkuLookup;
  publicBaseUrl: string;
  /** SUBSCRIPTION_MIN_PERIOD (docs/api.md). */
  minPeriod: Duration;
  clock?: Clock;
  /** The times of test clocks (docs/decisions/0048); without it, everything lives on real time. */
  clocks?: ClockLookup;
}

export class SubscriptionUseCases {
  private readonly store: SubscriptionStore;
  private readonly changes: HistoryLog;
  private readonly skus: SkuLookup;
  private readonly messages: SubscriptionMessages;
  private readonly minPeriod: Duration;
  private readonly clock: Clock;
  /** "Now" for each subscription: its test clock's time, or real time. */
  private readonly nowFor: NowFor;

  constructor(options: SubscriptionUseCasesOptions) {
    ({ store: this.store, changes: this.changes, skus: this.skus, minPeriod: this.minPeriod } = options);
    this.messages = new SubscriptionMessages(options.publicBaseUrl);
    this.clock = options.clock ?? systemClock;
    this.nowFor = new NowFor(this.clock, options.clocks);
  }

  /**
   * `id`: the id the gateway derived from an Idempotency-Key; when a subscription has it
   * already (a retry of a create whose answer was lost), that one is the answer.
   */
  async create(
    principal: Principal,
    userId: string,
    body: SubscriptionCreateBody,
    id?: string,
  ): Promise<SubscriptionEntity> {
    if (!canSubscribeFor(principal, body.grantorId)) {
      throw DomainError.notPermitted('you may create subscriptions only for your own grantor');
    }
    const spec = parseTimeSpec(body.timeSpec);
    if (!spec.ok) throw DomainError.invalid(`timeSpec: ${spec.reason}`);
    await this.validateTemplates(body.grantorId, spec.value, body.rightsSpec);
    const subscriptionId = id ?? newId(this.clock().getTime());
    const now = await this.nowFor.forCreation(body, { kind: 'subscription', id: subscriptionId, connectId: userId });
    const nextPeriod = firstPeriodToIssue(spec.value, now);
    const subscription: SubscriptionEntity = {
      subscriptionId,
      userId,
      grantorId: body.grantorId,
      grantorContext: body.grantorContext ?? null,
      state: body.state ?? 'ACTIVE',
      rightsSpec: body.rightsSpec.map(templateOf),
      plan: 0,
      pendingChange: null,
      timeSpec: body.timeSpec,
      origTimeSpec: spec.value.origTimeSpec,
      paymentAgreement: body.paymentAgreement ?? null,
      nextPeriod,
      clockId: body.clockId ?? null,
      generation: 1,
      createdAt: now,
      updatedAt: now,
    };
    const created = this.messages.of(subscription, [SubscriptionEventTypes.created], null, actorOf(principal));
    if (await this.store.insert(subscription, created)) return subscription;
    const earlier = id === undefined ? null : await this.store.find(userId, id);
    if (!earlier)
      throw DomainError.conflict(`subscription ${subscription.subscriptionId} exists no more, or not for this user`);
    return earlier;
  }

  /**
   * The templates of a creation or a plan change, held to the bounds (docs/security.md,
   * "Bounds") and to what the catalog lets the grantor grant (docs/security.md "Who may grant
   * what"; each renewal asks again, of the catalog as it stands then).
   */
  private async validateTemplates(grantorId: string, spec: TimeSpec, rightsSpec: readonly RightTemplate[]) {
    const violation = boundsViolation(spec, rightsSpec, this.minPeriod);
    if (violation) throw DomainError.invalid(violation);
    for (const [index, template] of rightsSpec.entries()) {
      const entry = await skuForUseCase(this.skus, template.sku);
      if (!entry) throw DomainError.invalid(`rightsSpec[${index}].sku: ${template.sku} is not in the catalog`);
      const grant = grantOf(entry, grantorId, template.serviceProviderId);
      if (!grant.ok) throw refusedGrant(grant.refusal, `rightsSpec[${index}].serviceProviderId`);
    }
  }

  /**
   * docs/api.md "Plan changes": new templates now or from the next period, validated as at
   * creation; the subscription as changed.
   */
  async changePlan(
    principal: Principal,
    target: { userId: string; subscriptionId: string; expectedGeneration: number | undefined },
    body: PlanChangeBody,
  ): Promise<SubscriptionEntity> {
    const templates = body.rightsSpec.map(templateOf);
    const done = await this.change(principal, target, async (subscription) => {
      const spec = timeSpecOf(subscription);
      await this.validateTemplates(subscription.grantorId, spec, body.rightsSpec);
      return changePlan(subscription, spec, templates, body.at, await this.nowFor.forChange(subscription));
    });
    if (done.outcome === 'missing') throw this.notFound(target);
    return done.outcome === 'changed' ? done.change.next : done.current;
  }

  /** docs/api.md "Plan changes": withdraws a pending change (204 also when none is pending). */
  async withdrawChange(
    principal: Principal,
    userId: string,
    subscriptionId: string,
    expectedGeneration?: number,
  ): Promise<void> {
    const done = await this.change(principal, { userId, subscriptionId, expectedGeneration }, async (subscription) =>
      withdrawChange(subscription, await this.nowFor.forChange(subscription)),
    );
    if (done.outcome === 'missing') throw this.notFound({ userId, subscriptionId });
  }

  private notFound({ userId, subscriptionId }: { userId: string; subscriptionId: string }) {
    return DomainError.notFound(`no subscription ${subscriptionId} for user ${userId}`);
  }

  async get(principal: Principal, userId: string, subscriptionId: string): Promise<SubscriptionEntity> {
    const subscription = await this.store.find(userId, subscriptionId);
    if (!subscription || !canSee(principal, subscription))
      throw DomainError.notFound(`no subscription ${subscriptionId} for user ${userId}`);
    return subscription;
  }

  /** docs/api.md "Find by id": the subscription `subscriptionId`, whichever user's, if the caller may see it. */
  async locate(principal: Principal, subscriptionId: string): Promise<SubscriptionEntity> {
    const subscription = await this.store.findById(subscriptionId);
    if (!subscription || !canSee(principal, subscription))
      throw DomainError.notFound(`no subscription ${subscriptionId}`);
    return subscription;
  }

  /**
   * docs/api.md "History": every change of a subscription the caller may read, oldest first;
   * a deleted subscription's history stays readable by its grantor and admins.
   */
  async history(principal: Principal, userId: string, subscriptionId: string, page: HistoryPageRequest) {
    const found = await this.store.findEvenRemoved(userId, subscriptionId);
    if (!found || !canReadHistory(principal, found.entity, found.removed))
      throw DomainError.notFound(`no subscription ${subscriptionId} for user ${userId}`);
    return this.changes.entries(subscriptionId, page, found.entity.generation);
  }

  /** A page of a bucket's live subscriptions, for the scheduler's rebuild. */
  schedulePage(bucket: number, page: { after: string | undefined; limit: number }) {
    return this.store.ofBucket(bucket, page);
  }

  list(principal: Principal, query: Omit<SubscriptionQuery, 'visibleTo'>): Promise<ListPage<SubscriptionEntity>> {
    return this.store.list({ ...query, visibleTo: visibleGrantorOf(principal, query.grantorId ?? undefined) });
  }

  /** docs/api.md: 204 also for an unknown subscription; its rights stay (docs/api.md). */
  async remove(
    principal: Principal,
    userId: string,
    subscriptionId: string,
    expectedGeneration?: number,
  ): Promise<void> {
    await this.change(principal, { userId, subscriptionId, expectedGeneration }, async (subscription) =>
      removal(subscription, await this.nowFor.forChange(subscription)),
    );
  }

  /**
   * A deleted test clock takes what lives on it along (docs/decisions/0048): each of its
   * subscriptions is deleted as an admin would delete it (`subscription.deleted`; its rights go
   * with the clock too). Idempotent; returns how many.
   */
  async removeClock(clockId: string): Promise<number> {
    const onClock = await this.store.onClock(clockId);
    await pLimit(CLOCK_REMOVALS_AT_ONCE).map(onClock, ({ userId, id }) => this.remove(CLOCK_DELETION, userId, id));
    return onClock.length;
  }

  async transition(
    principal: Principal,
    userId: string,
    subscriptionId: string,
    command: SubscriptionCommand,
    expectedGeneration?: number,
  ): Promise<void> {
    const done = await this.change(principal, { userId, subscriptionId, expectedGeneration }, async (subscription) =>
      decide(subscription, command, await this.nowFor.forChange(subscription)),
    );
    if (done.outcome === 'missing') throw this.notFound({ userId, subscriptionId });
  }

  /**
   * `subscriptions.renew` from the scheduler, for a batch (docs/architecture.md "Scale"): bring each
   * subscription up to now (issue the rights of every due period, one `rights.issue` per
   * period with deterministic ids downstream; expire it at its end), planned together and
   * stored in one batch of compare-and-sets. A subscription another writer changed meanwhile
   * is renewed again on its own. Returns the events and commands of the renewals, which the
   * caller publishes before it acks the command (docs/decisions/0011); with `replay` (the
   * command was delivered before) also those of each subscription's last renewal, which may
   * not have gone out. And the rights these renewals came too late to issue, each counted
   * once: by the renewal that stored the subscription's move past them. Idempotent: a
   * repeated command changes nothing. `judgedAt` is when the scheduler found them due (its
   * clock may be ahead of ours).
   */
  async renew(items: readonly SubscriptionsRenewData[], judgedAt: Date, replay: boolean): Promise<RenewalOutcome> {
    // A command's subscriptions are all on one test clock, or all on real time (docs/decisions/0048).
    const now = judgedInstant(
      judgedAt,
      this.clock,
      items.some((item) => item.clockId),
    );
    const keys = items.map((item) => ({ userId: item.connectId, id: item.subscriptionId }));
    const earlier = replay ? await this.lastRenewals(keys) : [];
    const found = await this.subscriptionsOf(items);
    // docs/api.md: a subscription whose renewal fails (bad stored data, a bug) fails alone.
    const failed: ItemFailure[] = [];
    const planned = eachItem(found, (subscription) => subscription && this.renewal(subscription, now), failed).filter(
      (one): one is { index: number; value: PlannedRenewal } => one.value !== null,
    );
    const stored = await this.store.renewMany(planned.map(({ value }) => value));
    const renewed = await Promise.all(
      planned.map(async ({ index, value: change }, i) => {
        const outcome = stored[i]!;
        if (outcome instanceof WriteFailed) {
          failed.push({ index, error: outcome.error });
          return null;
        }
        if (outcome) return renewedBy(change);
        return this.advance(change.current.userId, change.current.subscriptionId, now).catch((error: unknown) => {
          if (isTransient(error)) throw error;
          failed.push({ index, error });
          return null;
        });
      }),
    );
    await this.setAside(failed.map(({ index, error }) => ({ subscription: found[index]!, error })));
    const done = renewed.filter((one) => one !== null);
    return {
      emitted: [...earlier, ...done.flatMap((one) => one.emitted)],
      missed: done.flatMap((one) => one.missed),
      failed,
    };
  }

  /**
   * The events and commands of each subscription's last renewal, built again from where it
   * started (the same ids and data: docs/decisions/0036).
   * One that cannot be built again (its stored subscription broke since) is left out: its
   * renewal now fails alone as well.
   */
  private async lastRenewals(keys: ReadonlyArray<{ userId: string; id: string }>): Promise<OutboxEntry[]> {
    return (await this.store.lastRenewalsOf(keys)).flatMap((last) => {
      if (!last) return [];
      try {
        const planned = this.renewal(last.before, last.at);
        return planned ? planned.outbox : [];
      } catch {
        return [];
      }
    });
  }

  /**
   * The subscriptions to renew: as the scheduler's snapshot describes them where it sent one
   * (nothing read: a stale one loses its claim when stored, and the subscription is then read
   * and renewed on its own; docs/decisions/0026), read where it did not.
   */
  private async subscriptionsOf(items: readonly SubscriptionsRenewData[]): Promise<Array<SubscriptionEntity | null>> {
    const unknown = items.filter((item) => !item.snapshot);
    const read = await this.store.findMany(
      unknown.map((item) => ({ userId: item.connectId, id: item.subscriptionId })),
    );
    const readById = new Map(unknown.map((item, i) => [item.subscriptionId, read[i] ?? null]));
    return items.map((item) =>
      item.snapshot
        ? fromSnapshot(item.subscriptionId, item.connectId, item.snapshot)
        : (readById.get(item.subscriptionId) ?? null),
    );
  }

  /**
   * Subscriptions whose renewal failed on their own are set aside at their generation: the
   * scheduler's rebuild leaves them out, so they never join a batch with others again, until
   * a change (or a renewal replayed by an operator) moves them past it (docs/api.md).
   */
  private async setAside(failures: ReadonlyArray<{ subscription: SubscriptionEntity | null; error: unknown }>) {
    for (const { subscription, error } of failures) {
      if (!subscription) continue;
      await this.store
        .setAside(subscription.subscriptionId, subscription.generation, reasonOf(error))
        .catch(() => undefined); // the dead-lettered command is what matters; this only spares the rebuild
    }
  }

  /** Brings one subscription up to `now` through the change pipeline, again while other writers win the race. */
  private async advance(userId: string, subscriptionId: string, now: Date): Promise<Omit<RenewalOutcome, 'failed'>> {
    const done = await changeOne<SubscriptionEntity, PlannedRenewal>({
      what: `subscription ${subscriptionId}`,
      load: () => this.store.find(userId, subscriptionId),
      decide: (subscription) => {
        const planned = this.renewal(subscription, now);
        return planned ? { kind: 'change', ...planned } : UNCHANGED;
      },
      write: async (_, change) => {
        const [outcome] = await this.store.renewMany([change]);
        if (outcome instanceof WriteFailed) throw outcome.error;
        return outcome!;
      },
    });
    return done.outcome === 'changed' ? renewedBy(done.change) : { emitted: [], missed: [] };
  }

  /** What renewing `subscription` at `now` changes, or null when it is up to date. */
  private renewal(subscription: SubscriptionEntity, now: Date): PlannedRenewal | null {
    if (subscription.state === 'EXPIRED') return null;
    // Stored data is held to the bounds again at every renewal (docs/security.md, "Bounds").
    const spec = timeSpecOf(subscription);
    const violation = boundsViolation(spec, subscription.rightsSpec, SHORTEST_PERIOD);
    if (violation) throw new Error(`stored subscription exceeds the bounds: ${violation}`);
    const plan = planRenewal(subscription, spec, now);
    const renewed = renewedState(subscription, spec, plan, now);
    if (!renewed) return null;
    const { next, events } = renewed;
    // The platform renews, as the scheduler commanded (docs/api.md "History").
    const outbox = [
      ...this.messages.of(next, events, null, systemActor('scheduler'), plan.issues),
      ...plan.issues.map((issue) => this.messages.issueOf(subscription, issue, now)),
    ];
    return { current: subscription, next, outbox, missedRights: plan.missed };
  }

  /** A change a caller asks for through the API (docs/api.md): the change pipeline, with its access rule. */
  private change(
    principal: Principal,
    target: { userId: string; subscriptionId: string; expectedGeneration: number | undefined },
    decideChange: (subscription: SubscriptionEntity) => Decision | Promise<Decision>,
  ) {
    const { userId, subscriptionId, expectedGeneration } = target;
    return changeOne({
      what: `subscription ${subscriptionId}`,
      load: () => this.store.find(userId, subscriptionId),
      // docs/api.md "Principals and authorization": another grantor's subscription is 401 for delete, activate, suspend.
      authorize: (subscription) => {
        if (!canManage(principal, subscription))
          throw DomainError.notPermitted('only its grantor or an admin may change this subscription');
      },
      expectedGeneration,
      decide: decideChange,
      write: (current, { next, events, cascade, issues, removes }) =>
        this.store.update({
          current,
          next,
          outbox: [
            ...this.messages.of(next, events, cascade, actorOf(principal), issues),
            ...(issues ?? []).map((issue) => this.messages.issueOf(next, issue, next.updatedAt)),
          ],
          removes,
        }),
    });
  }
}
