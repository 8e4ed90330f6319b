import { storableText } from './formats';
import { z } from 'zod';

/** The webhooks API (docs/api.md "Webhooks"): bodies and answers. */

export const EndpointId = z.string().regex(/^[0-9A-Za-z]{1,64}$/, 'must be 1-64 letters or digits');
export const DeliveryId = z.string().regex(/^[0-9a-f]{32}$/, 'must be 32 hex digits');

/** `POST /webhooks/endpoints`. Unknown fields are refused. */
export const EndpointCreateBody = z.strictObject({
  url: z.string().min(1).max(2048),
  /** Patterns of event types: `right.*`, `subscription.renewed`, `*`; default all. */
  events: z.array(z.string().min(1).max(100)).min(1).max(50).optional(),
  description: storableText(500).optional(),
  /** Whether it receives the events of objects on test clocks (docs/api.md "Test clocks"); default false. */
  clocks: z.boolean().optional(),
});
export type EndpointCreateBody = z.infer<typeof EndpointCreateBody>;

export const WebhookEndpoint = z.object({
  endpointId: EndpointId,
  url: z.string(),
  events: z.array(z.string()),
  description: z.string().nullable(),
  clocks: z.boolean(),
  createdAt: z.iso.datetime({ offset: true }),
});
export type WebhookEndpoint = z.infer<typeof WebhookEndpoint>;

/** The answer of a create and of a rotation: the only times the secret is shown. */
export const WebhookEndpointWithSecret = WebhookEndpoint.extend({ secret: z.string().startsWith('whsec_') });

export const WebhookEndpointList = z.object({ endpoints: z.array(WebhookEndpoint) });

export const WebhookDelivery = z.object({
  deliveryId: DeliveryId,
  eventId: z.string(),
  type: z.string(),
  status: z.enum(['pending', 'delivered', 'failed']),
  attempts: z.number().int().min(0),
  lastStatus: z.number().int().nullable(),
  nextAttemptAt: z.iso.datetime({ offset: true }).nullable(),
  createdAt: z.iso.datetime({ offset: true }),
});
export type WebhookDelivery = z.infer<typeof WebhookDelivery>;

export const WebhookDeliveryList = z.object({ deliveries: z.array(WebhookDelivery) });
