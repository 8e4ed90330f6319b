import mongoose from 'mongoose';
import { afterAll, describe, expect, it } from 'vitest';
import {
  ABANDONED_AFTER_MS,
  databasesNamed,
  dropAbandonedTestDatabases,
  dropDatabases,
  TestSystem,
  testName,
} from '@rs/testing';

/**
 * What the suite leaves on the shared local servers: nothing of a run that stopped, and what a
 * killed run left is dropped by the next (it once piled up to hundreds of databases, and every
 * query of the local FerretDB got slower).
 */
const mongoUrl = process.env.MONGODB_URL!;
const made: string[] = [];

async function databaseWithADocument(name: string): Promise<void> {
  const connection = await mongoose.createConnection(mongoUrl, { dbName: name }).asPromise();
  await connection.collection('things').insertOne({ made: new Date() });
  await connection.close();
  made.push(name);
}

afterAll(() => dropDatabases(mongoUrl, made));

describe('the test databases', () => {
  it('when a test system that only ran migrations stops, then none of its databases is left', async () => {
    const system = await TestSystem.start({ name: 'leftovers', backends: [], gateway: false });
    for (const service of ['catalog', 'rights']) expect((await system.migrate(service)).code).toBe(0);
    expect(await databasesNamed(mongoUrl, `${system.prefix}_`)).toHaveLength(2);
    await system.stop();
    expect(await databasesNamed(mongoUrl, `${system.prefix}_`)).toEqual([]);
  });

  it('when abandoned test databases are dropped, then those named before the bound go and younger ones stay', async () => {
    const now = Date.now();
    const old = `${testName('abandoned', now - ABANDONED_AFTER_MS - 60_000)}_rights`;
    const recent = `${testName('running', now - ABANDONED_AFTER_MS + 600_000)}_rights`;
    await databaseWithADocument(old);
    await databaseWithADocument(recent);
    const dropped = await dropAbandonedTestDatabases(mongoUrl);
    expect(dropped).toContain(old);
    expect(dropped).not.toContain(recent);
    const left = await databasesNamed(mongoUrl, 't_');
    expect(left).not.toContain(old);
    expect(left).toContain(recent);
  });
});
