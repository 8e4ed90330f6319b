import { z } from 'zod';
import { CatalogEvents } from './catalog';
import type { EventSchemas } from './cloud-event';
import { Exchanges } from './topology';

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
  ];
  for (const family of EVENT_FAMILIES) {
    lines.push(`## \`${family.exchange}\` (topic), published by ${family.producer}`, '', family.summary, '');
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
