import { provideTestServers } from './servers';

/**
 * vitest globalSetup: finds or starts the real MongoDB-wire and RabbitMQ servers once,
 * and hands their URLs to every test file through the environment.
 */
export default async function setup(): Promise<() => Promise<void>> {
  const servers = await provideTestServers();
  process.env.MONGODB_URL = servers.mongoUrl;
  process.env.AMQP_URL = servers.amqpUrl;
  process.env.RABBITMQ_MANAGEMENT_URL = servers.managementUrl;
  return () => servers.stop();
}
