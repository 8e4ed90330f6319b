import { z } from 'zod';
import { CatalogEvents } from '../schemas/catalog';
import { RightsCommands, SubscriptionsCommands } from '../schemas/commands';
import { RightEvents } from '../schemas/rights';
import { SubscriptionEvents } from '../schemas/subscriptions';
import type { EventSchemas } from '../schemas/cloud-event';
import { Exchanges } from '../schemas/topology';

interface EventFamily {
  exchange: string;
  producer: string;
  summary: string;
  schemas: EventSchemas;
  descriptions: Record<string, string>;
}

/** Every event family the platform publishes; docs/events.md is generated from this list. */
export const EVENT_FAMILIES: EventFamily[] = [
  {
    exchange: Exchanges.rightsEvents,
    producer: 'rights',
    summary:
      'Every change of a right. `data` is the right as the API returns it (spec 2.4), plus `connectId` and ' +
      '`sequence` (its generation).',
    schemas: RightEvents,
    descriptions: {
      'right.created': 'A right was created (directly, or issued for a subscription period).',
      'right.activated': 'A right became ACTIVE (activate, or a subscription reactivated).',
      'right.suspended': 'A right became SUSPENDED (suspend, or a subscription suspended).',
      'right.expired': 'The interval of an ACTIVE or SUSPENDED right ended; it is EXPIRED.',
      'right.used': 'The right was used for the first time.',
      'right.removed': 'The right was removed.',
      'service.announce': 'First use of a right whose SKU has `announceOnUsage` (spec 6 "ServiceAnnounce").',
    },
  },
  {
    exchange: Exchanges.subscriptionsEvents,
    producer: 'subscriptions',
    summary:
      'Every change of a subscription, for the scheduler. `data` is the subscription as the API returns it ' +
      '(spec 2.1), plus `connectId`, `sequence` (its generation), the full `timeSpec` and `nextPeriod`, the next ' +
      'period whose rights are still to be issued.',
    schemas: SubscriptionEvents,
    descriptions: {
      'subscription.created': 'A subscription was created.',
      'subscription.activated': 'A SUSPENDED subscription became ACTIVE; its rights are reactivated.',
      'subscription.suspended': 'An ACTIVE subscription became SUSPENDED; its rights are suspended.',
      'subscription.renewed': 'The rights of a period were issued.',
      'subscription.expired': 'The subscription reached its end.',
      'subscription.deleted': 'The subscription was deleted; its rights stay.',
    },
  },
  {
    exchange: Exchanges.commands,
    producer: 'scheduler and subscriptions',
    summary:
      'Commands (direct exchange), each consumed by one durable quorum queue of its service ' +
      '(`subscriptions.commands`, `rights.commands`). Same envelope; `subject` is the entity the command is about.',
    schemas: { ...SubscriptionsCommands, ...RightsCommands },
    descriptions: {
      'subscriptions.renew':
        'From the scheduler: bring this subscription up to now (issue due periods, expire it at its end).',
      'rights.expire': 'From the scheduler: expire this right, its interval has ended. Idempotent.',
      'rights.issue': 'From the subscriptions service: the rights of one period, with deterministic ids.',
      'rights.cascade': 'From the subscriptions service: suspend or reactivate the rights of a subscription.',
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
];

/**
 * docs/events.md: the envelope, and for each event type its exchange, routing key and the
 * JSON Schema of its `data`, derived from the zod contracts that producers and consumers use.
 */
export function buildEventsDocument(): string {
  const lines = [
    '# Events',
    '',
    '<!-- Generated from libs/contracts by `npm run docs`; a test fails when it is out of date. -->',
    '',
    'Every message is a CloudEvents 1.0 document in structured JSON mode (DESIGN.md 2):',
    '`{specversion: "1.0", id, source, type, subject, time, datacontenttype: "application/json", data}`.',
    '`type` equals the routing key, `subject` is the entity id. AMQP properties: `messageId` = `id`,',
    '`type`, `contentType: application/cloudevents+json`, `timestamp`, `appId` = `source`, persistent',
    'delivery, and the W3C `traceparent` header. Delivery is at least once: consumers de-duplicate by',
    '`id` and order by `data.sequence` (the generation of the entity).',
    '',
    'Every change event of `rights.events` and `subscriptions.events` also carries who made the change,',
    'as the extension attributes `actorkind` (`client`, `user` or `system`) and `actorid` (the API',
    "client's id, the Bearer token's user, or the service whose command made it: `scheduler` for",
    'renewal and expiry, `subscriptions` for rights issued for a period and the suspend/activate',
    'cascade). They are the `actor` of the same change in `…/history` (DESIGN.md 8).',
    '',
  ];
  for (const family of EVENT_FAMILIES) {
    const kind = family.exchange === Exchanges.commands ? 'direct' : 'topic';
    lines.push(`## \`${family.exchange}\` (${kind}), published by ${family.producer}`, '', family.summary, '');
    for (const [type, schema] of Object.entries(family.schemas)) {
      const { $schema: _dialect, ...jsonSchema } = z.toJSONSchema(schema) as Record<string, unknown>;
      lines.push(
        `### \`${type}\``,
        '',
        family.descriptions[type] ?? '',
        '',
        '```json',
        JSON.stringify(jsonSchema, null, 2),
        '```',
        '',
      );
    }
  }
  return `${lines.join('\n').trimEnd()}\n`;
}
