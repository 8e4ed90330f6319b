import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  ferretdbIndexFieldsSql,
  ginFieldsOf,
  indexTable,
  indexTableOf,
  mongoIndexesOf,
  type ServiceIndexes,
} from '@rs/store';
import { ferretdbGinFields, REPO_ROOT, TestSystem } from '@rs/testing';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectionIndexes as catalog } from '../../../services/catalog/src/store/indexes';
import { collectionIndexes as gateway } from '../../../services/gateway/src/store/indexes';
import { collectionIndexes as rights } from '../../../services/rights/src/store/indexes';
import { collectionIndexes as scheduler } from '../../../services/scheduler/src/store/indexes';
import { collectionIndexes as subscriptions } from '../../../services/subscriptions/src/store/indexes';
import { collectionIndexes as webhooks } from '../../../services/webhooks/src/store/indexes';

// Each collection's queries and indexes are declared once, beside its store; each service lists
// its collections in src/store/indexes.ts (docs/operations.md, "Queries and their indexes").
// This holds the generated documents to the declarations, each service's migration (run as the
// Kubernetes Job runs it) to its list, and the server under test to both: on MongoDB the named
// indexes exist, on the local FerretDB the GIN index on each declared field.

/** A retention set, so that the purges' TTL indexes are declared too (unset by default). */
const RETENTION_DAYS = 365;
/** In the order `npm run docs` lists them (scripts/docs.mjs). */
const DECLARED: ServiceIndexes[] = [
  { service: 'gateway', collections: gateway(RETENTION_DAYS) },
  { service: 'catalog', collections: catalog() },
  { service: 'rights', collections: rights(RETENTION_DAYS) },
  { service: 'subscriptions', collections: subscriptions(RETENTION_DAYS) },
  { service: 'scheduler', collections: scheduler() },
  { service: 'webhooks', collections: webhooks(RETENTION_DAYS) },
];

let system: TestSystem;
let client: MongoClient;
/** Per service, what its migration reported: the indexes declared by collection, and whether the server got them. */
const migrated = new Map<string, { indexes: Record<string, string[]>; driverIndexesCreated: boolean }>();

beforeAll(async () => {
  system = await TestSystem.start({ name: 'indexes', backends: [], gateway: false });
  client = await MongoClient.connect(process.env.MONGODB_URL!);
  for (const { service } of DECLARED) {
    const { code, logs } = await system.migrate(service, {
      HISTORY_RETENTION_DAYS: String(RETENTION_DAYS),
      WEBHOOK_DELIVERY_RETENTION_DAYS: String(RETENTION_DAYS),
    });
    if (code !== 0) throw new Error(`${service} migration failed:\n${logs.join('\n')}`);
    migrated.set(
      service,
      logs.map((text) => JSON.parse(text)).find((entry) => entry.msg === 'migrated'),
    );
  }
}, 120_000);
afterAll(async () => {
  await client?.close();
  await system?.stop();
});

describe('the indexes the stores declare', () => {
  it('when the declarations are rendered, then docs/operations.md and deploy/local/ferretdb-index-fields.sql are what `npm run docs` wrote from them', () => {
    const page = readFileSync(path.join(REPO_ROOT, 'docs/operations.md'), 'utf8');
    expect(indexTableOf(page)).toBe(indexTable(DECLARED));
    expect(readFileSync(path.join(REPO_ROOT, 'deploy/local/ferretdb-index-fields.sql'), 'utf8')).toBe(
      ferretdbIndexFieldsSql(DECLARED),
    );
    // Every service, and in it the queries of the hot paths: lists, pending events, due items.
    expect(indexTable(DECLARED).split('\n').length).toBeGreaterThan(20);
  });

  it('when every service is migrated, then it declares the indexes of its listed collections, and no other', () => {
    for (const { service, collections } of DECLARED) {
      const listed = Object.fromEntries(
        collections.map((declared) => [declared.collection, mongoIndexesOf(declared).map((index) => index.name)]),
      );
      expect(migrated.get(service)!.indexes, service).toEqual(listed);
    }
  });

  it('when every service is migrated, then the server under test has the index of every declared query', async () => {
    for (const { service, collections } of DECLARED) {
      const { driverIndexesCreated } = migrated.get(service)!;
      const database = new URL(system.mongoUrlFor(service)).pathname.slice(1);
      for (const declared of collections) {
        const where = `${service} ${declared.collection}`;
        if (driverIndexesCreated) {
          const names = (await client.db(database).collection(declared.collection).indexes()).map(
            (index) => index.name,
          );
          expect(names, where).toEqual(expect.arrayContaining(mongoIndexesOf(declared).map((index) => index.name)));
        } else {
          const fields = await ferretdbGinFields(database, declared.collection);
          expect(fields.sort(), where).toEqual(ginFieldsOf(declared).sort());
        }
      }
    }
  });
});
