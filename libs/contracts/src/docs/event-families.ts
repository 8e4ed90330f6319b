import { AuditEvents } from '../schemas/audit';
import { ClockEvents } from '../schemas/clocks';
import { CatalogEvents } from '../schemas/catalog';
import { RightsCommands, SchedulerCommands, SubscriptionsCommands } from '../schemas/commands';
import { RightEvents } from '../schemas/rights';
import { SubscriptionEvents } from '../schemas/subscriptions';
import type { EventSchemas } from '../schemas/cloud-event';
import { Exchanges } from '../schemas/topology';

export interface EventFamily {
  exchange: string;
  producer: string;
  summary: string;
  schemas: EventSchemas;
  descriptions: Record<string, string>;
}

/** Every event family the platform publishes; docs/asyncapi.json (and from it docs/events.md) is generated from this list. */
export const EVENT_FAMILIES: EventFamily[] = [
  {
    exchange: Exchanges.rightsEvents,
    producer: 'rights',
    summary:
      'Every change of a right. `data` is the right as the API returns it (docs/api.md), plus `connectId` and ' +
      '`sequence` (its generation).',
    schemas: RightEvents,
    descriptions: {
      'right.created': 'A right was created (directly, or issued for a subscription period).',
      'right.activated': 'A right became ACTIVE (activate, or a subscription reactivated).',
      'right.suspended': 'A right became SUSPENDED (suspend, or a subscription suspended).',
      'right.expired': 'The interval of an ACTIVE or SUSPENDED right ended; it is EXPIRED.',
      'right.used': 'The right was used for the first time.',
      'right.consumed':
        'Units of a metered right were consumed: `amount` is how many, `remaining` what is left (docs/api.md "Usage").',
      'right.adjusted':
        'Units were added to a metered right by hand (`amount`, negative when taken away; docs/api.md "Adjustments"): `remaining` is the new balance, `quantity` raised when it went above it.',
      'right.held':
        'Units of a metered right were reserved, or a reservation was released or lapsed: `held` is how many are held now, not consumed and not available to anyone else (docs/api.md "Reservations").',
      'right.removed': 'The right was removed.',
      'service.announce': 'First use of a right whose SKU has `announceOnUsage` (docs/api.md "Usage").',
    },
  },
  {
    exchange: Exchanges.subscriptionsEvents,
    producer: 'subscriptions',
    summary:
      'Every change of a subscription, for the scheduler. `data` is the subscription as the API returns it ' +
      '(docs/api.md), plus `connectId`, `sequence` (its generation), the full `timeSpec` and `nextPeriod`, the next ' +
      'period whose rights are still to be issued.',
    schemas: SubscriptionEvents,
    descriptions: {
      'subscription.created': 'A subscription was created.',
      'subscription.activated': 'A SUSPENDED subscription became ACTIVE; its rights are reactivated.',
      'subscription.suspended': 'An ACTIVE subscription became SUSPENDED; its rights are suspended.',
      'subscription.renewed': 'The rights of a period were issued.',
      'subscription.expired': 'The subscription reached its end.',
      'subscription.deleted': 'The subscription was deleted; its rights stay.',
      'subscription.changed':
        'Its templates were changed now, or a change was booked for (or withdrawn from) the next period: `pendingChange` (docs/api.md "Plan changes").',
    },
  },
  {
    exchange: Exchanges.commands,
    producer: 'scheduler, subscriptions and rights',
    summary:
      'Commands (direct exchange), each consumed by one durable quorum queue of its service ' +
      '(`subscriptions.commands`, `rights.commands`, `scheduler.commands`). Same envelope; `subject` is the entity the command is about.',
    schemas: { ...SubscriptionsCommands, ...RightsCommands, ...SchedulerCommands },
    descriptions: {
      'subscriptions.renew':
        'From the scheduler: bring this subscription up to now (issue due periods, expire it at its end).',
      'rights.expire': 'From the scheduler: expire this right, its interval has ended. Idempotent.',
      'rights.issue': 'From the subscriptions service: the rights of one period, with deterministic ids.',
      'rights.cascade':
        'From the subscriptions service: suspend or reactivate the rights of a subscription, or end those a plan change replaced (`end`, their ids and the instant).',
      'rights.settle':
        'From the scheduler: the holds of this consumption or reservation are past their time; settle them as its record decides (docs/decisions/0045). Idempotent.',
      'scheduler.hold':
        'From the rights service: a consumption or reservation holds units until `until`; command rights.settle then.',
    },
  },
  {
    exchange: Exchanges.catalogEvents,
    producer: 'catalog',
    summary: 'Changes of catalog entries. Consumed by the rights and subscriptions services (SKU directory).',
    schemas: CatalogEvents,
    descriptions: {
      'sku.upserted': 'A SKU was created or changed. `data` is the entry as the admin API returns it.',
      'sku.deleted': 'A SKU was deleted.',
    },
  },
  {
    exchange: Exchanges.clocksEvents,
    producer: 'scheduler',
    summary:
      'Changes of test clocks (docs/decisions/0048): `data` is the clock as the API returns it, plus `sequence` (its generation). For the services that judge what lives on a clock by its time.',
    schemas: ClockEvents,
    descriptions: {
      'clock.created': 'A test clock was created, at its `time`.',
      'clock.advanced': 'A test clock moved forward to its `time`.',
      'clock.ready': 'A test clock reached where its advance went: everything due up to its `time` has happened.',
      'clock.deleted': 'A test clock was deleted, with everything on it.',
    },
  },
  {
    exchange: Exchanges.platformEvents,
    producer: 'gateway',
    summary:
      'The audit log (docs/audit.md): every change an admin client or a staff member made, with who, why and its answer. `data` is the entry as `GET /admin/audit` shows it.',
    schemas: AuditEvents,
    descriptions: {
      'audit.recorded':
        'A change by an admin client or a staff member was answered (`status`), or the gateway stopped before its answer (`status` null).',
    },
  },
];
