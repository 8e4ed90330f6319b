import { setTimeout as sleep } from 'node:timers/promises';
import amqp, { type Channel, type ChannelModel, type MessageProperties } from 'amqplib';

export interface CollectedMessage {
  routingKey: string;
  body: Record<string, unknown> & { id?: string; type?: string; subject?: string; data?: Record<string, unknown> };
  properties: MessageProperties;
  /** When this consumer got it (ms since the epoch): what a benchmark measures lateness by. */
  receivedAt: number;
}

/**
 * A test consumer: a private queue bound to an exchange, keeping every message it gets,
 * as any consumer of the platform's events would see them.
 */
export class EventCollector {
  readonly messages: CollectedMessage[] = [];

  private constructor(
    private readonly connection: ChannelModel,
    private readonly channel: Channel,
  ) {}

  static async start(
    amqpUrl: string,
    exchange: string,
    routingKey = '#',
    type: 'topic' | 'direct' = 'topic',
  ): Promise<EventCollector> {
    const connection = await amqp.connect(amqpUrl);
    const channel = await connection.createChannel();
    await channel.assertExchange(exchange, type, { durable: true });
    const { queue } = await channel.assertQueue('', { exclusive: true, autoDelete: true });
    await channel.bindQueue(queue, exchange, routingKey);
    const collector = new EventCollector(connection, channel);
    await channel.consume(
      queue,
      (message) => {
        if (!message) return;
        collector.messages.push({
          routingKey: message.fields.routingKey,
          body: JSON.parse(message.content.toString('utf8')),
          properties: message.properties,
          receivedAt: Date.now(),
        });
      },
      { noAck: true },
    );
    return collector;
  }

  /** Waits until `predicate` holds for the collected messages; fails with what arrived. */
  async waitFor(predicate: (messages: CollectedMessage[]) => boolean, timeoutMs = 20_000): Promise<CollectedMessage[]> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate(this.messages)) {
      if (Date.now() > deadline) {
        throw new Error(
          `expected messages did not arrive within ${timeoutMs} ms; got ${this.messages.length}: ${this.messages
            .map((m) => `${m.routingKey}:${m.body.subject}`)
            .slice(-20)
            .join(', ')}`,
        );
      }
      await sleep(50);
    }
    return this.messages;
  }

  async close(): Promise<void> {
    await this.channel.close().catch(() => undefined);
    await this.connection.close().catch(() => undefined);
  }
}

/** Distinct event ids per subject, for one event type: how often each entity's event was published, de-duplicated. */
export function idsBySubject(messages: CollectedMessage[], type: string): Map<string, Set<string>> {
  const result = new Map<string, Set<string>>();
  for (const { body } of messages) {
    if (body.type !== type) continue;
    const ids = result.get(body.subject!) ?? new Set<string>();
    ids.add(body.id!);
    result.set(body.subject!, ids);
  }
  return result;
}
