import amqp from 'amqplib';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { BrokerUnavailable, deadLetterQueueOf } from '../src/index';
import { testBroker, type TestBroker } from './test-broker';

let broker: TestBroker;
const attempts = new Map<number, number>();
const handled: number[] = [];

const Work = z.object({ n: z.number().int() });

beforeAll(async () => {
  broker = await testBroker('consumer');
  await broker.consume('test.work', {
    parse: (body) => Work.parse(body),
    maxAttempts: 3,
    retryDelaysMs: [100],
    handle: async ({ n }) => {
      const attempt = (attempts.get(n) ?? 0) + 1;
      attempts.set(n, attempt);
      if (n === 2 && attempt < 3) throw new Error('transient failure');
      if (n === 3) throw new Error('permanent failure');
      handled.push(n);
    },
  });
});
afterAll(() => broker?.close());

const send = (body: string) =>
  broker.client.publish('commands', 'test.work', Buffer.from(body), {
    persistent: true,
    contentType: 'application/json',
  });

async function deadLettered(): Promise<Array<{ body: string; error: string }>> {
  const connection = await amqp.connect(broker.amqpUrl);
  const channel = await connection.createChannel();
  const found: Array<{ body: string; error: string }> = [];
  for (
    let message = await channel.get(deadLetterQueueOf('test.work'));
    message;
    message = await channel.get(deadLetterQueueOf('test.work'))
  ) {
    found.push({ body: message.content.toString(), error: String(message.properties.headers?.['x-rs-error']) });
  }
  await connection.close(); // the unacked messages go back to the queue
  return found;
}

describe('consumer with retry and dead-letter queue', () => {
  it('when handlers succeed, fail for a while, fail for good, or get garbage, then each ends where it should', async () => {
    for (const body of ['{"n":1}', '{"n":2}', '{"n":3}', 'not json', '{"n":"x"}']) await send(body);
    await expect.poll(() => handled.includes(2)).toBe(true);
    await expect.poll(async () => (await deadLettered()).length).toBe(3);
    expect(handled).toEqual([1, 2]);
    expect(attempts.get(2)).toBe(3);
    expect(attempts.get(3)).toBe(3);
    const dead = await deadLettered();
    expect(dead.map((d) => d.body).sort()).toEqual(['not json', '{"n":"x"}', '{"n":3}'].sort());
    expect(dead.find((d) => d.body === '{"n":3}')?.error).toBe('permanent failure');
    expect(await broker.rabbit.queueMessageCount(broker.vhost, 'test.work')).toBe(0);
  });

  it('when the broker connection is lost, then publishing fails fast, and after the automatic reconnect consuming resumes', async () => {
    const names = await vi.waitFor(
      async () => {
        const found = await broker.rabbit.connectionsNamed(broker.vhost, 'consumer-test');
        if (found.length === 0) throw new Error('the broker lists no connection of the consumer yet');
        return found;
      },
      { timeout: 15_000, interval: 100 },
    );
    expect(names).toHaveLength(1);
    const disconnected = new Promise<void>((resolve) => broker.client.once('disconnected', () => resolve()));
    await broker.rabbit.closeConnection(names[0]!);
    await disconnected;
    await expect(send('{"n":4}')).rejects.toBeInstanceOf(BrokerUnavailable);
    await broker.client.waitUntilConnected(10_000);
    await send('{"n":5}');
    await expect.poll(() => handled.includes(5)).toBe(true);
  });
});
