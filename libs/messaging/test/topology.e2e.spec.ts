import { systemFixture } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DELIVERY_LIMIT } from '@rs/messaging';

// docs/operations.md "On a RabbitMQ cluster", read back from RabbitMQ's management API with every service running:
// whatever a service declares, the broker never drops a message.
const fx = systemFixture({
  name: 'broker_topology',
  backends: ['catalog', 'rights', 'subscriptions', 'scheduler', 'webhooks'],
});
beforeAll(fx.start);
afterAll(fx.stop);

const RETRY = /\.retry\.\d+ms$/;

describe('the broker topology of a running system (docs/operations.md)', () => {
  it('when every service has declared its queues, then each durable queue is a quorum queue, each consumed queue has a delivery limit and a dead-letter route into its .dlq, and each retry queue a TTL back into its queue', async () => {
    const queues = await fx.system.rabbit.queues(fx.system.vhost);
    const durable = queues.filter((queue) => !queue.exclusive);
    const consumed = durable.filter((queue) => !queue.name.endsWith('.dlq') && !RETRY.test(queue.name));
    // The command queues and the services' event queues, at least: rights, subscriptions, scheduler, webhooks.
    expect(consumed.map((queue) => queue.name)).toEqual(
      expect.arrayContaining(['rights.commands', 'subscriptions.commands', 'scheduler.rights-events']),
    );
    for (const queue of durable) expect([queue.name, queue.type, queue.durable]).toEqual([queue.name, 'quorum', true]);
    for (const queue of consumed) {
      expect([queue.name, queue.arguments]).toEqual([
        queue.name,
        expect.objectContaining({
          'x-delivery-limit': DELIVERY_LIMIT,
          'x-dead-letter-exchange': '',
          'x-dead-letter-routing-key': `${queue.name}.dlq`,
          'x-dead-letter-strategy': 'at-least-once',
        }),
      ]);
      expect(durable.map((other) => other.name)).toContain(`${queue.name}.dlq`);
      const retries = durable.filter((other) => other.name.startsWith(`${queue.name}.retry.`));
      expect(retries.length, `${queue.name} has its retry queues`).toBeGreaterThan(0);
      for (const retry of retries)
        expect(retry.arguments).toMatchObject({
          'x-message-ttl': Number(/(\d+)ms$/.exec(retry.name)![1]),
          'x-dead-letter-routing-key': queue.name,
        });
    }
    // The private queues of caches every replica fills are the only others: exclusive, deleted with their connection.
    for (const queue of queues.filter((one) => one.exclusive)) expect(queue.auto_delete).toBe(true);
  });
});
