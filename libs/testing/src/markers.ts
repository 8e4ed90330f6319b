import type { EventCollector } from './event-collector';
import type { TestSystem } from './system';

const isoSecond = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/**
 * A positive marker that the system has moved past everything sent before it, for a test that
 * must show something did not happen twice: a right for `user`, ending within two seconds, is
 * created through the gateway, and its `right.expired` awaited in `events`. The scheduler
 * commands expiries in the order of their seconds and the rights service handles its command
 * queue in order, so once the marker has expired every command sent before it (a redelivery
 * after a crash included) has been handled, and whatever it published has been collected.
 * Resolves the marker's right id (its events are in `events` too).
 */
export async function passExpiryMarker(
  system: TestSystem,
  marker: { authorization: string; user: string; grantorId: string; sku: string; events: EventCollector },
): Promise<string> {
  const now = Date.now();
  const response = await fetch(`${system.gatewayUrl}/id/users/${encodeURIComponent(marker.user)}/rights`, {
    method: 'POST',
    headers: { authorization: marker.authorization, 'content-type': 'application/json' },
    body: JSON.stringify({
      sku: marker.sku,
      grantorId: marker.grantorId,
      state: 'ACTIVE',
      timeInterval: `${isoSecond(now - 1_000)}/${isoSecond(now + 2_000)}`,
    }),
  });
  if (response.status !== 201)
    throw new Error(`the marker right was refused: ${response.status} ${await response.text()}`);
  const { rightId } = (await response.json()) as { rightId: string };
  await marker.events.waitFor(
    (messages) => messages.some((m) => m.routingKey === 'right.expired' && m.body.subject === rightId),
    60_000,
  );
  return rightId;
}
