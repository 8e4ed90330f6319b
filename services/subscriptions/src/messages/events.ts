import {
  CommandTypes,
  Exchanges,
  type Actor,
  type RightsCascadeData,
  type RightsIssueData,
  type SubscriptionEventData,
  type SubscriptionEventType,
} from '@rs/contracts';
import { periodRightId } from '@rs/hashing';
import { changeMessage, type OutboxEntry } from '@rs/store';
import type { PeriodIssue } from '../domain/renewal';
import { representation, type RightsCascade, type SubscriptionEntity } from '../domain/subscription';

export const EVENT_SOURCE = '/subscriptions';

/**
 * The subscriptions service's one place that turns a change into its messages (docs/architecture.md,
 * "From a change to its messages"): the events on `subscriptions.events`, the rights cascade,
 * and `rights.issue` for a period. Their ids derive from the change (subscription, generation
 * or period, type), so messages built again (a redelivered renewal command, docs/decisions/0036)
 * are the same messages. Use cases call it and hand what it returns to the store with the
 * change, or, for a renewal command, to `recordAndPublish`.
 */
export class SubscriptionMessages {
  constructor(private readonly publicBaseUrl: string) {}

  /** The events of a change made by `actor` and, when it has one, its rights cascade command. */
  of(
    subscription: SubscriptionEntity,
    types: SubscriptionEventType[],
    cascade: RightsCascade | null,
    actor: Actor,
    /** The periods the change issues rights of: their ids are in its events (`issuedRights`). */
    issues: readonly PeriodIssue[] = [],
  ): OutboxEntry[] {
    const issuedRights = issues.flatMap((issue) =>
      issue.rights.map((right) =>
        periodRightId(subscription.subscriptionId, issue.periodStart, right.templateIndex, issue.plan),
      ),
    );
    const data: SubscriptionEventData = {
      ...representation(subscription, this.publicBaseUrl),
      connectId: subscription.userId,
      sequence: subscription.generation,
      timeSpec: subscription.timeSpec,
      nextPeriod: subscription.nextPeriod,
      createdAt: subscription.createdAt.toISOString(),
      plan: subscription.plan,
      ...(issuedRights.length > 0 ? { issuedRights } : {}),
    };
    const change = {
      source: EVENT_SOURCE,
      subject: subscription.subscriptionId,
      sequence: subscription.generation,
      time: subscription.updatedAt,
    };
    const events = types.map((type) => changeMessage(Exchanges.subscriptionsEvents, { ...change, type, data, actor }));
    if (!cascade) return events;
    const command = changeMessage<RightsCascadeData>(Exchanges.commands, {
      ...change,
      type: CommandTypes.rightsCascade,
      data: { subscriptionId: change.subject, connectId: subscription.userId, ...cascade },
    });
    return [...events, command];
  }

  /**
   * `rights.issue` for one period of a renewal (docs/api.md "Renewal"), or for the rest of a
   * period after a plan change: one message per (period, plan).
   */
  issueOf(subscription: SubscriptionEntity, issue: PeriodIssue, now: Date): OutboxEntry {
    return changeMessage<RightsIssueData>(Exchanges.commands, {
      source: EVENT_SOURCE,
      type: CommandTypes.rightsIssue,
      subject: issue.plan === 0 ? subscription.subscriptionId : `${subscription.subscriptionId}/${issue.plan}`,
      sequence: issue.period,
      data: {
        subscriptionId: subscription.subscriptionId,
        connectId: subscription.userId,
        grantorId: subscription.grantorId,
        periodStart: issue.periodStart,
        dueAt: issue.dueAt,
        rights: issue.rights,
        ...(issue.plan === 0 ? {} : { plan: issue.plan }),
        ...(subscription.clockId ? { clockId: subscription.clockId } : {}),
      },
      time: now,
    });
  }
}
