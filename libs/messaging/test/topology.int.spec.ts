import { createLogger } from '@rs/logging';
import amqp from 'amqplib';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { deadLetterQueueOf, declareDurableQueue, DELIVERY_LIMIT, retryQueueOf } from '../src/index';
import { testBroker, type TestBroker } from './test-broker';

// docs/operations.md "On a RabbitMQ cluster", on a real RabbitMQ: the broker never drops a message, and retries of
// different delays never wait behind one another.

const logger = createLogger('topology-test', 'silent');
let broker: TestBroker;

beforeAll(async () => {
  broker = await testBroker('topology');
});
afterAll(() => broker?.close());

const Work = z.object({ name: z.string() });
const send = (queue: string, name: string, headers: Record<string, unknown> = {}) =>
  broker.client.publish('commands', queue, Buffer.from(JSON.stringify({ name })), {
    persistent: true,
    contentType: 'application/json',
    headers,
  });

describe('the broker topology (docs/operations.md)', () => {
  it('when a consumer declares its queue, then it and its .dlq and retry queues are quorum queues, the queue with a delivery limit and a dead-letter route into its .dlq, each retry queue a TTL back into it', async () => {
    await broker.consume('test.declared', {
      parse: (body) => Work.parse(body),
      retryDelaysMs: [250, 4_000, 4_000],
      handle: async () => undefined,
    });
    const queues = new Map((await broker.rabbit.queues(broker.vhost)).map((queue) => [queue.name, queue]));
    const own = [...queues.keys()].filter((name) => name.startsWith('test.declared')).sort();
    expect(own).toEqual(
      [
        'test.declared',
        deadLetterQueueOf('test.declared'),
        retryQueueOf('test.declared', 250),
        retryQueueOf('test.declared', 4_000),
      ].sort(),
    );
    for (const name of own)
      expect([name, queues.get(name)!.type, queues.get(name)!.durable]).toEqual([name, 'quorum', true]);
    expect(queues.get('test.declared')!.arguments).toMatchObject({
      'x-delivery-limit': DELIVERY_LIMIT,
      'x-dead-letter-exchange': '',
      'x-dead-letter-routing-key': 'test.declared.dlq',
      'x-dead-letter-strategy': 'at-least-once',
    });
    expect(queues.get(retryQueueOf('test.declared', 250))!.arguments).toMatchObject({
      'x-message-ttl': 250,
      'x-dead-letter-routing-key': 'test.declared',
    });
    expect(queues.get(deadLetterQueueOf('test.declared'))!.arguments).not.toHaveProperty('x-delivery-limit');
  });

  it('when a message is delivered past the delivery limit without an ack (a consumer that dies holding it), then the broker moves it to the .dlq instead of dropping it', async () => {
    const connection = await amqp.connect(broker.amqpUrl);
    try {
      await declareDurableQueue(connection, 'test.limited', logger);
      const channel = await connection.createChannel();
      channel.sendToQueue('test.limited', Buffer.from(JSON.stringify({ name: 'crashes-its-consumer' })), {
        persistent: true,
      });
      let deliveries = 0;
      const dead = await vi.waitFor(
        async (): Promise<amqp.GetMessage> => {
          const message = await channel.get('test.limited', { noAck: false });
          if (message) {
            deliveries += 1;
            channel.nack(message, false, true); // given back unhandled, as a dying consumer's message is
          }
          const deadLettered = await channel.get(deadLetterQueueOf('test.limited'), { noAck: true });
          if (!deadLettered) throw new Error(`not dead-lettered after ${deliveries} deliveries`);
          return deadLettered;
        },
        { timeout: 20_000, interval: 50 },
      );
      expect(JSON.parse(dead.content.toString())).toEqual({ name: 'crashes-its-consumer' });
      expect(deliveries).toBeGreaterThanOrEqual(DELIVERY_LIMIT);
      expect(deliveries).toBeLessThanOrEqual(DELIVERY_LIMIT + 1);
    } finally {
      await connection.close();
    }
  });

  it('when a message waits a long retry and another a short one, then the short one is handled first', async () => {
    const handled: string[] = [];
    const failed: string[] = [];
    await broker.consume('test.retried', {
      parse: (body) => Work.parse(body),
      maxAttempts: 5,
      retryDelaysMs: [3_000, 100],
      handle: async ({ name }, delivery) => {
        // `long` fails its first attempt (retried in 3 s); `short` arrives as a second attempt
        // and fails it (retried in 0.1 s): it enters the retry queues after `long` did.
        if (delivery.attempt <= (name === 'long' ? 1 : 2)) {
          failed.push(name);
          throw new Error('not yet');
        }
        handled.push(name);
      },
    });
    await send('test.retried', 'long');
    await expect.poll(() => failed).toEqual(['long']);
    await send('test.retried', 'short', { 'x-rs-attempt': 1 });
    await expect.poll(() => handled.length).toBe(2);
    expect(handled).toEqual(['short', 'long']);
  });
});
