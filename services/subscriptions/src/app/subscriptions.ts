import pLimit from 'p-limit';
import { skuForUseCase, type SkuLookup } from '@rs/catalog-client';
import {
  actorOf,
  DomainError,
  grantOf,
  newId,
  refusedGrant,
  SubscriptionEventTypes,
  type HistoryPageRequest,
  type PlanChangeBody,
  type Principal,
  type RightTemplate,
  type SubscriptionCreateBody,
} from '@rs/contracts';
import { CLOCK_DELETION, CLOCK_REMOVALS_AT_ONCE } from '@rs/http';
import { changeOne, type HistoryLog, type ListPage } from '@rs/store';
import { parseTimeSpec, type TimeSpec } from '@rs/time';
import type { Duration } from 'luxon';
import { canManage, canReadHistory, canSee, canSubscribeFor, visibleGrantorOf } from '../domain/access';
import { boundsViolation } from '../domain/bounds';
import { changePlan, withdrawChange } from '../domain/plan-change';
import {
  decide,
  firstPeriodToIssue,
  removal,
  templateOf,
  timeSpecOf,
  type Decision,
  type SubscriptionCommand,
  type SubscriptionEntity,
} from '../domain/subscription';
import { SubscriptionMessages } from '../messages/events';
import type { SubscriptionQuery, SubscriptionStore } from '../store/subscription-store';
import type { SubscriptionTime } from './time';

/**
 * What the subscription use cases work with.
 */
export interface SubscriptionUseCasesOptions {
  store: SubscriptionStore;
  changes: HistoryLog;
  skus: SkuLookup;
  publicBaseUrl: string;
  /** SUBSCRIPTION_MIN_PERIOD (docs/api.md). */
  minPeriod: Duration;
  /** "Now" for each subscription: its test clock's time, or real time (docs/decisions/0048). */
  time: SubscriptionTime;
}

/**
 * The subscription API's use cases (docs/api.md): who may (docs/api.md), what happens (the pure
 * domain), stored with its events and the rights cascade in one write. Renewal is `Renewals`'.
 */
export class SubscriptionUseCases {
  private readonly store: SubscriptionStore;
  private readonly changes: HistoryLog;
  private readonly skus: SkuLookup;
  private readonly messages: SubscriptionMessages;
  private readonly minPeriod: Duration;
  private readonly time: SubscriptionTime;

  constructor(options: SubscriptionUseCasesOptions) {
    ({ store: this.store, changes: this.changes, skus: this.skus, minPeriod: this.minPeriod } = options);
    this.messages = new SubscriptionMessages(options.publicBaseUrl);
    this.time = options.time;
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
    const subscriptionId = id ?? newId(this.time.real().getTime());
    const now = await this.time.forCreation(body, { kind: 'subscription', id: subscriptionId, connectId: userId });
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
      return changePlan(subscription, spec, templates, body.at, await this.time.forChange(subscription));
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
      withdrawChange(subscription, await this.time.forChange(subscription)),
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

  /**
   * A page of a user's subscriptions the caller may see (docs/api.md "Principals and
   * authorization"): a non-admin sees its own grantor's only, and another grantor's list shows
   * it nothing.
   */
  async list(principal: Principal, query: SubscriptionQuery): Promise<ListPage<SubscriptionEntity>> {
    const visibleTo = visibleGrantorOf(principal, query.grantorId ?? undefined);
    if (visibleTo !== null && query.grantorId !== null && query.grantorId !== visibleTo)
      return { items: [], last: null };
    return this.store.list({ ...query, grantorId: query.grantorId ?? visibleTo });
  }

  /** docs/api.md: 204 also for an unknown subscription; its rights stay (docs/api.md). */
  async remove(
    principal: Principal,
    userId: string,
    subscriptionId: string,
    expectedGeneration?: number,
  ): Promise<void> {
    await this.change(principal, { userId, subscriptionId, expectedGeneration }, async (subscription) =>
      removal(subscription, await this.time.forChange(subscription)),
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
      decide(subscription, command, await this.time.forChange(subscription)),
    );
    if (done.outcome === 'missing') throw this.notFound({ userId, subscriptionId });
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
      // docs/api.md "Principals and authorization": another grantor's subscription is 401 for delete, activate,
      // suspend; to a staff member who cannot see it, it does not exist (docs/identity-providers.md).
      authorize: (subscription) => {
        if (principal.scheme === 'staff' && !canSee(principal, subscription)) throw this.notFound(target);
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
