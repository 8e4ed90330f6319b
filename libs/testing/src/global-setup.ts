import { useTestServers } from './servers';

/**
 * vitest globalSetup: finds or starts the real MongoDB-wire and RabbitMQ servers once,
 * and hands their URLs to every test file through the environment.
 */
export default async function setup(): Promise<() => Promise<void>> {
  const servers = await useTestServers();
  return () => servers.stop();
}
