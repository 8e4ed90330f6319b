import mongoose, { type Connection } from 'mongoose';
import { testName } from './test-databases';

/**
 * A database of its own on the test server (MONGODB_URL, from the global setup), for tests
 * that run use cases and their real stores in-process (the middle tier).
 */
export interface TestDatabase {
  db: Connection;
  /** Drops the database and closes the connection. */
  drop(): Promise<void>;
}

export async function testDatabase(name: string): Promise<TestDatabase> {
  const url = process.env.MONGODB_URL;
  if (!url) throw new Error('MONGODB_URL is not set: run the tests with vitest (its globalSetup provides the servers)');
  const db = mongoose.createConnection(url, {
    dbName: testName(name),
    autoIndex: false,
  });
  await db.asPromise();
  return {
    db,
    async drop() {
      await db.dropDatabase().catch(() => undefined);
      await db.close();
    },
  };
}

/**
 * Another connection to `database` whose client reports every command it sends (the driver's
 * command monitoring): what a store asked of the server, for tests of what a read or write costs.
 */
export async function monitoredConnection(database: TestDatabase): Promise<Connection> {
  const connection = mongoose.createConnection(process.env.MONGODB_URL!, {
    dbName: database.db.name,
    monitorCommands: true,
  });
  return connection.asPromise();
}

/**
 * A test database and `count` more connections to it, each with a pool of its own, as replicas
 * of a service have: their writes race in the database, not in one connection's queue.
 */
export async function replicaConnections(
  name: string,
  count = 4,
): Promise<{ connections: Connection[]; drop(): Promise<void> }> {
  const database = await testDatabase(name);
  const connections = await Promise.all(
    Array.from({ length: count }, () =>
      mongoose.createConnection(process.env.MONGODB_URL!, { dbName: database.db.name, maxPoolSize: 8 }).asPromise(),
    ),
  );
  return {
    connections,
    async drop() {
      await Promise.all(connections.map((connection) => connection.close()));
      await database.drop();
    },
  };
}

/** A catalog of fixed entries, for use cases that only ask whether a SKU exists and how it is set. */
export function fixedCatalog(
  entries: Record<
    string,
    { serviceProviderId?: string | null; announceOnUsage?: boolean; grantorIds?: string[] | null }
  >,
) {
  return {
    async find(sku: string) {
      const entry = entries[sku];
      if (!entry) return null;
      return {
        sku,
        name: null,
        serviceProviderId: entry.serviceProviderId ?? null,
        announceOnUsage: entry.announceOnUsage ?? false,
        grantorIds: entry.grantorIds ?? null,
        generation: '1',
        createdAt: '2026-01-01T00:00:00.000Z',
        updatedAt: '2026-01-01T00:00:00.000Z',
      };
    },
  };
}
