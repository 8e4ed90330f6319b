import { CloudEvent, Exchanges, InvalidMessage, namesAClock } from '@rs/contracts';
import type { Logger } from '@rs/logging';
import { consume, type AmqpClient } from '@rs/messaging';
import { z } from 'zod';
import { mayReceive, matchesPatterns } from '../domain/endpoint';
import { deliveryIdOf, type Delivery, type DeliveryStore } from '../store/delivery-store';
import type { GrantorEndpoints } from '../app/grantor-endpoints';
import type { Clock } from '@rs/time';
import type { Dispatcher } from '../app/dispatcher';

export const WEBHOOKS_EVENT_QUEUE = 'webhooks.events';

/**
 * The webhooks service's own durable queue on `rights.events` and `subscriptions.events`
 * (docs/architecture.md): each event becomes a delivery for every endpoint that may see it
 * (docs/api.md) and whose patterns match its type, stored (leased to this process for its
 * first attempt) before the event is acked, then handed to the dispatcher. A redelivered event finds its deliveries stored (their ids are
 * derived from endpoint and event) and makes none twice.
 */
export async function consumeEventsForWebhooks(
  broker: AmqpClient,
  endpoints: GrantorEndpoints,
  deliveries: DeliveryStore,
  dispatcher: Pick<Dispatcher, 'enqueue' | 'ownLeaseUntil'>,
  logger: Logger,
  clock: Clock,
): Promise<void> {
  const handleBatch = async (events: CloudEvent[]) => {
    const now = clock();
    const candidates = await endpoints.forEvents(events.map((event) => event.data));
    const found = events.flatMap((event, i) => {
      const body = JSON.stringify(event);
      return candidates[i]!.filter(
        (endpoint) => matchesPatterns(endpoint.events, event.type) && mayReceive(endpoint, event.data),
      ).map((endpoint): Delivery => ({
        deliveryId: deliveryIdOf(endpoint.endpointId, event.id),
        endpointId: endpoint.endpointId,
        eventId: event.id,
        type: event.type,
        body,
        status: 'pending',
        attempts: 0,
        lastStatus: null,
        nextAttemptAt: now,
        createdAt: now,
        generation: 0,
      }));
    });
    const leasedUntil = dispatcher.ownLeaseUntil(now);
    const stored = await deliveries.insertMany(found, leasedUntil);
    // Those stored now are this process's to attempt; those stored before (the event came
    // again) are attempted only if a claim gets them.
    await dispatcher.enqueue(
      found.filter((delivery) => stored.has(delivery.deliveryId)),
      leasedUntil,
    );
    await dispatcher.enqueue(found.filter((delivery) => !stored.has(delivery.deliveryId)));
  };
  await consume(
    broker,
    {
      queue: WEBHOOKS_EVENT_QUEUE,
      bindings: [
        { exchange: Exchanges.rightsEvents, routingKey: '#' },
        { exchange: Exchanges.subscriptionsEvents, routingKey: '#' },
      ],
      parse: (body) => {
        const event = CloudEvent.safeParse(body);
        if (!event.success) throw new InvalidMessage(`not a CloudEvent: ${z.prettifyError(event.error)}`);
        return event.data as CloudEvent;
      },
      handle: (event) => handleBatch([event]),
      // A rehearsal's events wait in the clock lane, behind none of real time's (docs/decisions/0054).
      lane: { holds: (event) => namesAClock(event.data) },
      prefetch: 200,
      batch: { max: 100, lingerMs: 20, handle: (messages) => handleBatch(messages.map(({ message }) => message)) },
    },
    logger.child({ component: 'events' }),
  );
}
