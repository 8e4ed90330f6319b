import { z } from 'zod';
import { CloudEvent } from '../schemas/cloud-event';
import { CLOCK_LANE, COMMAND_QUEUES, EXCHANGE_TYPES, Exchanges } from '../schemas/topology';
import { EVENT_FAMILIES } from './event-families';

/** The exchanges whose events the webhooks service delivers outside the cluster (docs/api.md). */
const DELIVERED_AS_WEBHOOKS: readonly string[] = [Exchanges.rightsEvents, Exchanges.subscriptionsEvents];
const AMQP_BINDING_VERSION = '0.3.0';
const HTTP_BINDING_VERSION = '0.3.0';

/** AsyncAPI ids allow letters, digits, `-` and `_`: `right.created` → `right_created`. */
const idOf = (name: string) => name.replace(/[^A-Za-z0-9_-]/g, '_');
const ref = (path: string) => ({ $ref: `#/${path}` });

/** The CloudEvent of one type, its `data` that type's schema, as JSON Schema (draft 7, what AsyncAPI 3 reads). */
function payloadOf(type: string, data: z.ZodType): Record<string, unknown> {
  const schema = CloudEvent.extend({ type: z.literal(type), data });
  const { $schema: _dialect, ...json } = z.toJSONSchema(schema, { target: 'draft-7' }) as Record<string, unknown>;
  return json;
}

/**
 * The AsyncAPI 3.0 document of everything on the broker and of the webhooks:
 * each event and command type a channel (its routing key on its exchange, docs/architecture.md), each
 * command queue a channel, what each service sends and receives an operation, and every
 * payload the CloudEvent envelope around the zod contract of its `data`, as producers and
 * consumers validate it. Right and subscription events are also described as webhook
 * deliveries (POST with the Standard Webhooks headers). `docs/asyncapi.json` is written from
 * it (`npm run docs`) and `docs/events.md` is rendered from it.
 */
export function buildAsyncApiDocument() {
  const channels: Record<string, unknown> = {};
  const operations: Record<string, unknown> = {};
  const messages: Record<string, unknown> = {};
  const webhookMessages: Record<string, unknown> = {};
  for (const family of EVENT_FAMILIES) {
    const exchange = family.exchange as keyof typeof EXCHANGE_TYPES;
    for (const [type, data] of Object.entries(family.schemas)) {
      const id = idOf(type);
      const channelId = `${idOf(exchange)}__${id}`;
      messages[id] = {
        name: type,
        title: type,
        summary: family.descriptions[type] ?? type,
        contentType: 'application/cloudevents+json',
        payload: payloadOf(type, data),
        bindings: { amqp: { messageType: type, bindingVersion: AMQP_BINDING_VERSION } },
      };
      channels[channelId] = {
        address: type,
        title: `${type} on ${exchange}`,
        description: family.summary,
        servers: [ref('servers/rabbitmq')],
        messages: { [id]: ref(`components/messages/${id}`) },
        bindings: {
          amqp: {
            is: 'routingKey',
            exchange: { name: exchange, type: EXCHANGE_TYPES[exchange], durable: true, autoDelete: false, vhost: '/' },
            bindingVersion: AMQP_BINDING_VERSION,
          },
        },
      };
      operations[`send__${channelId}`] = {
        action: 'send',
        title: `${family.producer} publishes ${type}`,
        channel: ref(`channels/${channelId}`),
        messages: [ref(`channels/${channelId}/messages/${id}`)],
        // Persistent, confirmed by the broker (docs/architecture.md).
        bindings: { amqp: { deliveryMode: 2, bindingVersion: AMQP_BINDING_VERSION } },
      };
      if (DELIVERED_AS_WEBHOOKS.includes(exchange)) webhookMessages[id] = ref(`components/messages/webhook__${id}`);
      if (DELIVERED_AS_WEBHOOKS.includes(exchange))
        messages[`webhook__${id}`] = {
          name: type,
          title: `${type} (webhook)`,
          summary: `${family.descriptions[type] ?? type} Delivered to each webhook endpoint that may see it and whose patterns match.`,
          contentType: 'application/json',
          headers: ref('components/schemas/StandardWebhookHeaders'),
          payload: payloadOf(type, data),
        };
    }
  }
  for (const [queue, routingKeys] of Object.entries(COMMAND_QUEUES)) {
    const channelId = `queue__${idOf(queue)}`;
    // A clock lane's routing keys are its commands' types with the lane's suffix (docs/decisions/0054).
    const lane = queue.endsWith(CLOCK_LANE);
    const types = routingKeys.map((key) => (lane ? key.slice(0, -CLOCK_LANE.length) : key));
    channels[channelId] = {
      address: queue,
      title: `the ${queue} queue`,
      description: lane
        ? `The clock lane of ${queue.split('.')[0]}: every ${types.join(', ')} command about what lives on a test clock, routed as ${routingKeys.join(', ')} and consumed a few at a time beside the real-time queue (retries in ${queue}.retry.<delay>ms, failures in ${queue}.dlq).`
        : `The durable quorum queue of ${queue.split('.')[0]}: every ${types.join(', ')} command (retries in ${queue}.retry.<delay>ms, failures in ${queue}.dlq).`,
      servers: [ref('servers/rabbitmq')],
      messages: Object.fromEntries(types.map((type) => [idOf(type), ref(`components/messages/${idOf(type)}`)])),
      bindings: {
        amqp: {
          is: 'queue',
          queue: { name: queue, durable: true, exclusive: false, autoDelete: false, vhost: '/' },
          bindingVersion: AMQP_BINDING_VERSION,
        },
      },
    };
    operations[`receive__${channelId}`] = {
      action: 'receive',
      title: `${queue.split('.')[0]} consumes ${queue}`,
      channel: ref(`channels/${channelId}`),
      messages: types.map((type) => ref(`channels/${channelId}/messages/${idOf(type)}`)),
    };
  }
  channels.webhooks = {
    address: '/',
    title: "a webhook endpoint's URL",
    description:
      'Each event of rights.events and subscriptions.events that an endpoint may see (docs/api.md) and whose ' +
      'patterns match, POSTed to its URL as the CloudEvent published on the broker (docs/webhooks.md).',
    servers: [ref('servers/webhookEndpoint')],
    messages: webhookMessages,
  };
  operations.deliverWebhook = {
    action: 'send',
    title: 'the webhooks service delivers an event',
    description:
      'A 2xx within WEBHOOK_TIMEOUT_MS delivers; anything else is retried after each delay of ' +
      'WEBHOOK_RETRY_SCHEDULE. At least once: de-duplicate by webhook-id, order by data.sequence.',
    channel: ref('channels/webhooks'),
    messages: Object.keys(webhookMessages).map((id) => ref(`channels/webhooks/messages/${id}`)),
    bindings: { http: { method: 'POST', bindingVersion: HTTP_BINDING_VERSION } },
  };
  return {
    asyncapi: '3.0.0',
    info: {
      title: 'Rights and subscriptions platform: events, commands and webhooks',
      version: '1.0.0',
      description:
        'Every message on the broker is a CloudEvents 1.0 document in structured JSON mode (docs/architecture.md): `type` ' +
        'equals the routing key, `subject` is the entity id. AMQP properties: `messageId` = `id`, `type`, ' +
        '`contentType: application/cloudevents+json`, `timestamp`, `appId` = `source`, persistent delivery, and ' +
        'the W3C `traceparent` header. Delivery is at least once: consumers de-duplicate by `id` and order by ' +
        '`data.sequence` (the generation of the entity). Change events of rights and subscriptions carry who made ' +
        'the change as `actorkind` and `actorid`.',
    },
    defaultContentType: 'application/cloudevents+json',
    servers: {
      rabbitmq: {
        host: 'rabbitmq:5672',
        protocol: 'amqp',
        protocolVersion: '0.9.1',
        description: 'The RabbitMQ of a deployment (AMQP_URL); a consumer binds a queue of its own to an exchange.',
      },
      webhookEndpoint: {
        host: 'receiver.example.com',
        protocol: 'https',
        description: 'A receiver registered with POST /webhooks/endpoints (its URL).',
      },
    },
    channels,
    operations,
    components: {
      messages,
      schemas: {
        StandardWebhookHeaders: {
          type: 'object',
          required: ['webhook-id', 'webhook-timestamp', 'webhook-signature'],
          properties: {
            'webhook-id': { type: 'string', description: 'The CloudEvent id: the same on every attempt' },
            'webhook-timestamp': { type: 'string', description: 'Unix seconds of this attempt' },
            'webhook-signature': {
              type: 'string',
              description:
                '`v1,` + base64 HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<body>` keyed with the decoded ' +
                'secret; several, space-separated, while a secret is rotated',
            },
          },
        },
      },
    },
  };
}
