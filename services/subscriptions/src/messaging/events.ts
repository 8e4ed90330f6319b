import {
  CommandTypes,
  createCloudEvent,
  eventIdOf,
  type Actor,
  type CloudEvent,
  type RightsCascadeData,
  type RightsIssueData,
  type SubscriptionEventData,
  type SubscriptionEventType,
} from '@rs/contracts';
import type { PeriodIssue } from '../domain/renewal';
import { representation, type SubscriptionCommand, type SubscriptionEntity } from '../domain/subscription';
import type { Outgoing } from '../store/subscription-store';

export const EVENT_SOURCE = '/subscriptions';

/**
 * The subscriptions service's one place that turns a change into its messages (DESIGN.md 2):
 * the events on `subscriptions.events`, the rights cascade, and `rights.issue` for a period.
 * Their ids derive from the change (subscription, generation or period, type), so messages
 * built again (a redelivered renewal command, docs/decisions/0036) are the same messages.
 */
export class SubscriptionMessages {
  constructor(private readonly publicBaseUrl: string) {}

  /** The events of a change made by `actor` and, for suspend/activate, the rights cascade command. */
  outgoing(
    subscription: SubscriptionEntity,
    types: SubscriptionEventType[],
    cascade: SubscriptionCommand | null,
    actor: Actor,
  ): Outgoing {
    const data: SubscriptionEventData = {
      ...representation(subscription, this.publicBaseUrl),
      connectId: subscription.userId,
      sequence: subscription.generation,
      timeSpec: subscription.timeSpec,
      nextPeriod: subscription.nextPeriod,
      createdAt: subscription.createdAt.toISOString(),
    };
    const time = subscription.updatedAt;
    const subject = subscription.subscriptionId;
    return {
      events: types.map((type) =>
        createCloudEvent({
          id: eventIdOf(subject, subscription.generation, type),
          source: EVENT_SOURCE,
          type,
          subject,
          data,
          time,
          actor,
        }),
      ),
      commands: cascade
        ? [
            createCloudEvent<RightsCascadeData>({
              id: eventIdOf(subject, subscription.generation, CommandTypes.rightsCascade),
              source: EVENT_SOURCE,
              type: CommandTypes.rightsCascade,
              subject,
              data: { subscriptionId: subject, connectId: subscription.userId, action: cascade },
              time,
            }),
          ]
        : [],
    };
  }

  /** `rights.issue` for one period of a renewal (DESIGN.md 3 "Renewal"). */
  issueCommand(subscription: SubscriptionEntity, issue: PeriodIssue, now: Date): CloudEvent<RightsIssueData> {
    return createCloudEvent<RightsIssueData>({
      id: eventIdOf(subscription.subscriptionId, issue.period, CommandTypes.rightsIssue),
      source: EVENT_SOURCE,
      type: CommandTypes.rightsIssue,
      subject: subscription.subscriptionId,
      data: {
        subscriptionId: subscription.subscriptionId,
        connectId: subscription.userId,
        grantorId: subscription.grantorId,
        periodStart: issue.periodStart,
        dueAt: issue.dueAt,
        rights: issue.rights,
      },
      time: now,
    });
  }
}
