import { DeliveryId, EndpointCreateBody, EndpointId } from '@rs/contracts';
import * as http from '@rs/http';
import type { Request, Router } from 'express';
import type { EndpointUseCases } from '../app/endpoints';
import type { Delivery } from '../store/delivery-store';
import type { Endpoint } from '../store/endpoint-store';

/** An endpoint as the API shows it: never its secrets. */
const representation = (endpoint: Endpoint) => ({
  endpointId: endpoint.endpointId,
  url: endpoint.url,
  events: endpoint.events,
  description: endpoint.description,
  clocks: endpoint.clocks,
  createdAt: endpoint.createdAt.toISOString(),
});

const deliveryView = (delivery: Delivery) => ({
  deliveryId: delivery.deliveryId,
  eventId: delivery.eventId,
  type: delivery.type,
  status: delivery.status,
  attempts: delivery.attempts,
  lastStatus: delivery.lastStatus,
  nextAttemptAt: delivery.status === 'pending' ? (delivery.nextAttemptAt?.toISOString() ?? null) : null,
  createdAt: delivery.createdAt.toISOString(),
});

/** The webhooks API of docs/api.md, behind the gateway: HTTP in and out; the rules are the use cases'. */
export function webhookRoutes(endpoints: EndpointUseCases, publicBaseUrl: string): Router {
  const router = http.exactRouter();
  const endpointId = (req: Request) => http.parseParam(EndpointId, 'endpointId', req.params.endpointId);

  http.serveRoutes(router, 'webhooks', {
    createWebhookEndpoint: async (req, res) => {
      const body = http.parseBody(EndpointCreateBody, req.body);
      const { endpoint, secret } = await endpoints.create(res.locals.principal, body);
      http.sendJson(res.status(201).location(`${publicBaseUrl}/webhooks/endpoints/${endpoint.endpointId}`), {
        ...representation(endpoint),
        secret,
      });
    },
    listWebhookEndpoints: async (_req, res) => {
      http.sendJson(res, { endpoints: (await endpoints.list(res.locals.principal)).map(representation) });
    },
    getWebhookEndpoint: async (req, res) => {
      http.sendJson(res, representation(await endpoints.get(res.locals.principal, endpointId(req))));
    },
    deleteWebhookEndpoint: async (req, res) => {
      await endpoints.remove(res.locals.principal, endpointId(req));
      http.sendDone(res);
    },
    rotateWebhookSecret: async (req, res) => {
      const { endpoint, secret } = await endpoints.rotate(res.locals.principal, endpointId(req));
      http.sendJson(res, { ...representation(endpoint), secret });
    },
    listWebhookDeliveries: async (req, res) => {
      const id = endpointId(req);
      await http.sendNewestFirst(req, res, publicBaseUrl, {
        read: (limit, after) => endpoints.deliveriesPage(res.locals.principal, id, limit, after),
        body: (found) => ({ deliveries: found.map(deliveryView) }),
      });
    },
    retryWebhookDelivery: async (req, res) => {
      const deliveryId = http.parseParam(DeliveryId, 'deliveryId', req.params.deliveryId);
      await endpoints.retry(res.locals.principal, endpointId(req), deliveryId);
      res.status(202).end();
    },
  });
  return router;
}
