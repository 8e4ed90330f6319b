import { RabbitAdmin } from './rabbit-admin';
import { useTestServers } from './servers';
import { dropAbandonedTestDatabases } from './test-databases';

/**
 * vitest globalSetup: finds or starts the real MongoDB-wire and RabbitMQ servers once, clears
 * the broker and the database server of what killed runs left behind, and hands the servers' URLs to every test file
 * through the environment.
 */
export default async function setup(): Promise<() => Promise<void>> {
  const servers = await useTestServers();
  await new RabbitAdmin(servers.managementUrl).deleteAbandonedTestVhosts();
  await dropAbandonedTestDatabases(servers.mongoUrl);
  return () => servers.stop();
}
