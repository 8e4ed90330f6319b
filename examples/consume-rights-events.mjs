// A consumer of rights.events on RabbitMQ with `amqplib` (docs/events.md, docs/asyncapi.json):
//   AMQP_URL=amqp://… QUEUE=my-app.rights-events node examples/consume-rights-events.mjs
// Its own durable queue, bound to every right event; each event acked once handled, handled
// once by its CloudEvent `id` (delivery is at least once), in `data.sequence` order per right.
import amqp from 'amqplib';
import { report } from './config.mjs';

const queue = process.env.QUEUE ?? 'example.rights-events';
const connection = await amqp.connect(process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672');
const channel = await connection.createChannel();
await channel.assertQueue(queue, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
await channel.bindQueue(queue, 'rights.events', 'right.*');
await channel.prefetch(50);
/** Per right, the last sequence handled (a real consumer keeps it with what it does). */
const sequences = new Map();
await channel.consume(queue, (message) => {
  const event = JSON.parse(message.content.toString('utf8'));
  const last = sequences.get(event.subject) ?? 0;
  if (event.data.sequence > last) {
    sequences.set(event.subject, event.data.sequence);
    report({ event: event.type, id: event.id, rightId: event.subject, sequence: event.data.sequence });
  }
  channel.ack(message);
});
report({ consuming: queue });
process.on('SIGTERM', () => connection.close().finally(() => process.exit(0)));
