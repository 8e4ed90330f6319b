import { TestSystem, WebhookReceiver, clientsOf, systemFixture } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Reliability: at least once through a killed webhooks service, a cut broker
// connection and an endpoint that is down for a while; never to an endpoint that may not see it.

const A = TestSystem.clientAuthorization('grantor-a');
const B = TestSystem.clientAuthorization('grantor-b');
const fx = systemFixture({
  processes: true,
  name: 'webhooks_reliability',
  backends: ['catalog', 'rights', 'webhooks'],
  env: { WEBHOOK_RETRY_SCHEDULE: '1s,2s,2s,4s,8s', WEBHOOK_TIMEOUT_MS: '2000' },
  collect: { 'rights.events': 'right.created' },
  seed: { clients: clientsOf({ 'grantor-a': 'A', 'grantor-b': 'B' }), users: ['alice'], skus: { news: {} } },
});
// A's receiver answers slowly, so that deliveries are under way when the service is killed.
const ofA = new WebhookReceiver(() => ({ status: 200, delayMs: 300 }));
const ofB = new WebhookReceiver();
beforeAll(async () => {
  await fx.start();
  await ofA.start();
  await ofB.start();
});
afterAll(async () => {
  await ofA.stop();
  await ofB.stop();
  await fx.stop();
});

async function createRights(grantor: 'A' | 'B', count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const response = await fx.call('POST', '/id/users/alice/rights', grantor === 'A' ? A : B, {
      sku: 'news',
      grantorId: grantor,
      timeInterval: `${new Date(Date.now() - 60_000).toISOString()}/P1D`,
    });
    expect(response.status).toBe(201);
  }
}
async function register(authorization: string, url: string): Promise<void> {
  const response = await fx.call('POST', '/webhooks/endpoints', authorization, { url, events: ['right.*'] });
  expect(response.status).toBe(201);
}

describe('webhooks through crashes and outages', () => {
  it('when the service is killed mid-delivery, its broker connection cut and an endpoint down for a while, then afterwards every matching event was delivered, and none elsewhere', async () => {
    await register(A, ofA.url);
    await register(B, ofB.url);
    const webhooks = fx.system.service('webhooks');

    // Killed while deliveries are under way, and down while more events come.
    await createRights('A', 20);
    await expect.poll(() => ofA.received.length).toBeGreaterThan(0);
    await webhooks.kill();
    await createRights('A', 10);
    await createRights('B', 5);
    await webhooks.start();

    // Its broker connection cut (it reconnects by itself).
    expect(await fx.system.killBrokerConnection('webhooks')).toBeGreaterThan(0);
    await createRights('A', 10);
    await createRights('B', 5);

    // A's endpoint down for a few seconds: refused connections, retried later.
    await ofA.stop();
    await createRights('A', 10);
    await new Promise((resolve) => setTimeout(resolve, 3_000)); // the wait is the test's subject: the endpoint is down for a few seconds
    await ofA.start();

    const created = fx.events('rights.events').messages;
    await fx.events('rights.events').waitFor((messages) => messages.length >= 60, 20_000);
    const idsOf = (grantor: string) =>
      new Set(
        created.filter((m) => (m.body.data as { grantorId: string }).grantorId === grantor).map((m) => m.body.id!),
      );
    expect(idsOf('A').size).toBe(50);
    await expect.poll(() => [...idsOf('A')].every((id) => ofA.ids().has(id)), { timeout: 60_000 }).toBe(true);
    await expect.poll(() => [...idsOf('B')].every((id) => ofB.ids().has(id)), { timeout: 20_000 }).toBe(true);
    // Nothing to an endpoint that may not see it.
    expect(ofA.ids()).toEqual(idsOf('A'));
    expect(ofB.ids()).toEqual(idsOf('B'));
  }, 120_000);
});
