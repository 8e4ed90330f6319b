import { PARTIES, WebhookReceiver, clientsOf, systemFixture } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

// docs/decisions/0082: one grantor's webhook endpoints never hold another's deliveries back.
// Its 5 s bound is the assertion (docs/decisions/0038), so it runs alone (vitest.config.mts). The memory the dispatcher keeps deliveries in is small here (200) so that one grantor fills it
// within a second; the endpoints' timeout is the default (10 s), so a hanging endpoint holds
// each of its attempts for that long.
const { A, B } = PARTIES;
const fx = systemFixture({
  name: 'fair_delivery',
  backends: ['catalog', 'rights', 'webhooks'],
  env: { WEBHOOK_MEMORY_DELIVERIES: '200' },
  seed: { clients: clientsOf(PARTIES.grantors), users: ['alice'], skus: { video: {} } },
});
const receivers: WebhookReceiver[] = [];
beforeAll(fx.start);
afterAll(async () => {
  for (const receiver of receivers) await receiver.stop();
  await fx.stop();
});

async function receiver(behaviour?: ConstructorParameters<typeof WebhookReceiver>[0]): Promise<WebhookReceiver> {
  const started = new WebhookReceiver(behaviour);
  await started.start();
  receivers.push(started);
  return started;
}
async function register(authorization: string, url: string): Promise<string> {
  const response = await fx.call('POST', '/webhooks/endpoints', authorization, { url, events: ['right.created'] });
  expect(response.status, await response.clone().text()).toBe(201);
  return ((await response.json()) as { endpointId: string }).endpointId;
}
/** Creates a right of `grantor`; resolves with its id and when its creation was answered. */
async function createRight(grantor: 'A' | 'B'): Promise<{ rightId: string; at: number }> {
  const response = await fx.call('POST', '/id/users/alice/rights', grantor === 'A' ? A : B, {
    sku: 'video',
    grantorId: grantor,
    timeInterval: `${new Date(Date.now() - 60_000).toISOString()}/P1D`,
  });
  expect(response.status).toBe(201);
  return { rightId: ((await response.json()) as { rightId: string }).rightId, at: Date.now() };
}
/** When `receiver` got the delivery of the creation of `rightId` (undefined: not yet). */
const receivedAt = (receiver: WebhookReceiver, rightId: string, path?: string) =>
  receiver.received.find((request) => (!path || request.path === path) && request.body.includes(rightId))?.at;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('fair delivery between grantors', () => {
  it("when a grantor's 50 endpoints hang while its events stream, then another grantor's two endpoints, one on another port and one on the hanging host and port, each get every delivery within 5 s of its event", async () => {
    // Grantor A's endpoints read each request and never answer; B's second endpoint shares
    // their host and port.
    const shared = await receiver((request) => (request.path.startsWith('/a/') ? 'hang' : { status: 204 }));
    const elsewhere = await receiver();
    for (let i = 0; i < 50; i++) await register(A, shared.urlOf(`/a/${i}`));
    await register(B, elsewhere.url);
    await register(B, shared.urlOf('/b'));

    // A: four rights a second (200 deliveries a second) for 15 s; B: one a second meanwhile.
    const ofB: Array<{ rightId: string; at: number }> = [];
    const streamOfA = (async () => {
      for (let i = 0; i < 60; i++) await Promise.all([createRight('A'), sleep(250)]);
    })();
    for (let i = 0; i < 15; i++) {
      await Promise.all([createRight('B').then((created) => ofB.push(created)), sleep(1_000)]);
    }
    await streamOfA;
    await vi.waitFor(
      () => {
        for (const { rightId } of ofB) {
          expect(receivedAt(elsewhere, rightId), `${rightId} at B's other port`).toBeDefined();
          expect(receivedAt(shared, rightId, '/b'), `${rightId} at B's shared port`).toBeDefined();
        }
      },
      { timeout: 60_000, interval: 500 },
    );
    const late = ofB.flatMap(({ rightId, at }) =>
      [
        ['another port', receivedAt(elsewhere, rightId)!],
        ['the shared host and port', receivedAt(shared, rightId, '/b')!],
      ]
        .filter(([, received]) => (received as number) - at > 5_000)
        .map(([where, received]) => `${rightId} at ${where}: ${(received as number) - at} ms`),
    );
    expect(late, late.join('; ')).toEqual([]);
    // A's endpoints were sent to all the while, as their own concurrency allows.
    expect(shared.received.filter((request) => request.path.startsWith('/a/')).length).toBeGreaterThan(50);
  }, 180_000);
});

describe('bounded answers', () => {
  it('when an endpoint answers 200 with 100 MB, then the delivery is delivered and no more than a bound of the answer is read', async () => {
    const talkative = await receiver(() => ({ status: 200, bodyBytes: 100 * 1024 * 1024 }));
    const endpointId = await register(B, talkative.url);
    await createRight('B');
    await vi.waitFor(
      async () => {
        const response = await fx.call('GET', `/webhooks/endpoints/${endpointId}/deliveries`, B);
        const { deliveries } = (await response.json()) as { deliveries: Array<{ status: string }> };
        expect(deliveries.map(({ status }) => status)).toEqual(['delivered']);
      },
      { timeout: 30_000, interval: 250 },
    );
    // What the receiver could write before the connection closed: the bound read, and what the
    // sockets' buffers took (a few MB at most on loopback), never the 100 MB.
    expect(talkative.sentBytes).toBeLessThan(16 * 1024 * 1024);
  });
});
