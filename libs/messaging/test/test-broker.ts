import { createLogger } from '@rs/logging';
import { RabbitAdmin, testName } from '@rs/testing';
import { AmqpClient, consume, type ConsumerSpec } from '../src/index';

/** A test file's own virtual host on the test broker, and a client of this library connected to it. */
export interface TestBroker {
  vhost: string;
  rabbit: RabbitAdmin;
  /** The vhost's AMQP URL, for connections of the test's own. */
  amqpUrl: string;
  client: AmqpClient;
  /** Consumes `queue`, bound to the commands exchange by its own name as routing key. */
  consume<T>(queue: string, spec: Omit<ConsumerSpec<T>, 'queue' | 'bindings'>): Promise<void>;
  /** Closes the client and deletes the vhost. */
  close(): Promise<void>;
}

export async function testBroker(name: string): Promise<TestBroker> {
  const vhost = testName(name);
  const rabbit = new RabbitAdmin(process.env.RABBITMQ_MANAGEMENT_URL!);
  await rabbit.createVhost(vhost);
  const url = new URL(process.env.AMQP_URL!);
  url.pathname = `/${vhost}`;
  const amqpUrl = url.toString();
  const logger = createLogger(`${name}-test`, 'silent');
  const client = new AmqpClient({ url: amqpUrl, connectionName: `${name}-test`, logger, reconnectMinMs: 50 });
  client.start();
  await client.waitUntilConnected(10_000);
  return {
    vhost,
    rabbit,
    amqpUrl,
    client,
    consume: (queue, spec) =>
      consume(client, { ...spec, queue, bindings: [{ exchange: 'commands', routingKey: queue }] }, logger),
    async close() {
      await client.close();
      await rabbit.deleteVhost(vhost);
    },
  };
}
