import { buildAsyncApiDocument } from './asyncapi';

/** What this page reads of an AsyncAPI channel. */
interface AmqpChannel {
  address: string;
  description: string;
  messages: Record<string, unknown>;
  bindings?: { amqp?: { is: string; exchange?: { name: string; type: string } } };
}

/**
 * docs/events.md: the envelope, and for each event type its exchange, routing key and the
 * JSON Schema of its `data`, rendered from the AsyncAPI document (itself derived from the zod
 * contracts that producers and consumers use).
 */
export function buildEventsDocument(): string {
  const lines = [
    '# Events',
    '',
    '<!-- Generated from libs/contracts by `npm run docs`; a test fails when it is out of date. -->',
    '',
    'Every message is a CloudEvents 1.0 document in structured JSON mode (docs/architecture.md):',
    '`{specversion: "1.0", id, source, type, subject, time, datacontenttype: "application/json", data}`.',
    '`type` equals the routing key, `subject` is the entity id. AMQP properties: `messageId` = `id`,',
    '`type`, `contentType: application/cloudevents+json`, `timestamp`, `appId` = `source`, persistent',
    'delivery, and the W3C `traceparent` header. Delivery is at least once: consumers de-duplicate by',
    '`id` and order by `data.sequence` (the generation of the entity).',
    '',
    'Every change event of `rights.events` and `subscriptions.events` also carries who made the change,',
    'as the extension attributes `actorkind` (`client`, `user`, `staff` or `system`) and `actorid` (the API',
    "client's id, the Bearer token's user, or the service whose command made it: `scheduler` for",
    'renewal and expiry, `subscriptions` for rights issued for a period and the suspend/activate',
    'cascade). They are the `actor` of the same change in `…/history` (docs/api.md).',
    '',
  ];
  lines.push(
    'The machine-readable description is `docs/asyncapi.json` (AsyncAPI 3.0), from which this page is made.',
    '',
  );
  const asyncApi = buildAsyncApiDocument();
  const families = new Map<
    string,
    { description: string; types: Array<{ type: string; summary: string; data: unknown }> }
  >();
  for (const channel of Object.values(asyncApi.channels) as AmqpChannel[]) {
    const exchange = channel.bindings?.amqp?.exchange;
    if (channel.bindings?.amqp?.is !== 'routingKey' || !exchange) continue;
    const heading = `## \`${exchange.name}\` (${exchange.type})`;
    const message = asyncApi.components.messages[Object.keys(channel.messages)[0]!] as {
      summary: string;
      payload: { properties: { data: unknown } };
    };
    const family = families.get(heading) ?? { description: channel.description, types: [] };
    family.types.push({ type: channel.address, summary: message.summary, data: message.payload.properties.data });
    families.set(heading, family);
  }
  for (const [heading, { description, types }] of families) {
    lines.push(heading, '', description, '');
    for (const { type, summary, data } of types)
      lines.push(`### \`${type}\``, '', summary, '', '```json', JSON.stringify(data, null, 2), '```', '');
  }
  return `${lines.join('\n').trimEnd()}\n`;
}
