import { createCloudEvent } from '@rs/contracts';
import { createLogger } from '@rs/logging';
import { AmqpClient } from '@rs/messaging';
import { EventCollector, RabbitAdmin, replicaConnections, testName } from '@rs/testing';
import { newOutbox, outboxEntry, pendingKeyAt } from '@rs/store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutboxRelay } from '../src/index';

// One relay publishes a collection at a time: the one that holds its lease (docs/architecture.md).
// When the lease's holder stops, the relays of the other replicas all find it lapsed at once;
// taking it over is a compare-and-set on the lease as read (docs/decisions/0046), so exactly
// one of them takes it and publishes, and no event goes out twice. Each relay here reads and
// writes through a connection of its own, as replicas do.

const EXCHANGE = 'rights.events';
const RELAYS = 8;
const DOCUMENTS = 20;
const ROUNDS = 3;
const vhost = testName('relay_lease');
const rabbit = new RabbitAdmin(process.env.RABBITMQ_MANAGEMENT_URL!);
const logger = createLogger('relay-lease-test', 'silent');
let replicas: Awaited<ReturnType<typeof replicaConnections>>;
let client: AmqpClient;
let published: EventCollector;

beforeAll(async () => {
  await rabbit.createVhost(vhost);
  const url = new URL(process.env.AMQP_URL!);
  url.pathname = `/${vhost}`;
  client = new AmqpClient({ url: url.toString(), connectionName: 'relay-lease-test', logger });
  client.start();
  await client.waitUntilConnected(10_000);
  published = await EventCollector.start(url.toString(), EXCHANGE, '#');
  replicas = await replicaConnections('relay_lease');
});
afterAll(async () => {
  await published?.close();
  await client?.close();
  await replicas?.drop();
  await rabbit.deleteVhost(vhost);
});

const timesPublished = (subject: string) =>
  published.messages.filter((message) => message.body.subject === subject).length;

describe('a lapsed relay lease found by every replica', () => {
  it('when the relays of several replicas take it over at once, then one publishes, and every event goes out once', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const collection = `things_${round}`;
      const db = replicas.connections[0]!.db!;
      // The relay that held the lease stopped a minute ago, leaving events pending.
      await db.collection('outbox_leases').insertOne({
        _id: `outbox:${collection}`,
        owner: 'a stopped relay',
        until: new Date(0),
        generation: 3,
      } as never);
      const subjects = Array.from({ length: DOCUMENTS }, (_, i) => `${collection}-${i}`);
      await db.collection(collection).insertMany(
        subjects.map((subject) => ({
          _id: subject,
          generation: 1,
          ...newOutbox([
            outboxEntry(
              EXCHANGE,
              createCloudEvent({ source: '/test', type: 'right.created', subject, data: { subject } }),
            ),
          ]),
          outboxPending: pendingKeyAt(Date.now()),
        })) as never[],
      );
      const relays = Array.from(
        { length: RELAYS },
        (_, i) =>
          new OutboxRelay({
            db: replicas.connections[i % replicas.connections.length]!.db!,
            collection,
            client,
            logger,
            pollIntervalMs: 100,
            fullPassMs: 60_000,
          }),
      );
      try {
        for (const relay of relays) relay.start();
        await published.waitFor(() => subjects.every((subject) => timesPublished(subject) > 0), 10_000);
        // Stopped, every relay has had its publishes confirmed; a marker published after them on
        // the same channel arrives after every one of them.
        await Promise.all(relays.map((relay) => relay.stop()));
        const marker = `${collection}-marker`;
        await client.publish(EXCHANGE, 'right.created', Buffer.from(JSON.stringify({ subject: marker })), {});
        await published.waitFor(() => timesPublished(marker) > 0, 10_000);
        expect(
          subjects.filter((subject) => timesPublished(subject) !== 1),
          `round ${round}: events published more than once`,
        ).toEqual([]);
      } finally {
        await Promise.all(relays.map((relay) => relay.stop()));
      }
    }
  });
});
