import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ferretdbGinFields, REPO_ROOT, TestSystem } from '@rs/testing';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// docs/operations.md "Queries and their indexes" is the list of every query a hot or periodic
// path makes and the index that serves it (DESIGN.md 10). Each service's migration, run as the
// Kubernetes Job runs it, reports the indexes it declares; this holds the table and them to
// each other, and to the server under test: on MongoDB the named indexes exist, on the local
// FerretDB the GIN index on each named field (deploy/local/ferretdb-indexes.sql).

interface Row {
  service: string;
  collections: string[];
  query: string;
  mongodb: string[];
  ferretdb: string[];
}

const ticked = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((match) => match[1]!);

function listedQueries(): Row[] {
  const doc = readFileSync(path.join(REPO_ROOT, 'docs/operations.md'), 'utf8');
  const lines = doc.slice(doc.indexOf('## Queries and their indexes')).split('\n');
  const first = lines.findIndex((line) => line.startsWith('|'));
  const end = lines.findIndex((line, i) => i > first && !line.startsWith('|'));
  // The rows after the header and its separator.
  return lines.slice(first + 2, end).map((line) => {
    const [service, collections, query, mongodb, ferretdb] = line
      .split('|')
      .slice(1, -1)
      .map((cell) => cell.trim());
    return {
      service: service!,
      collections: ticked(collections!),
      query: query!,
      // Names, not the fields some are followed by in parentheses.
      mongodb: ticked(mongodb!.replace(/\([^)]*\)/g, '')),
      ferretdb: ferretdb!.startsWith('none') ? [] : ticked(ferretdb!),
    };
  });
}

const SERVICES = ['gateway', 'catalog', 'rights', 'subscriptions', 'scheduler', 'webhooks'];

let system: TestSystem;
let client: MongoClient;
/** Per service, what its migration reported: the indexes declared by collection, and whether the server got them. */
const migrated = new Map<string, { indexes: Record<string, string[]>; driverIndexesCreated: boolean }>();

beforeAll(async () => {
  system = await TestSystem.start({ name: 'indexes', backends: [], gateway: false });
  client = await MongoClient.connect(process.env.MONGODB_URL!);
  for (const service of SERVICES) {
    // With a history retention set, so that its TTL index is declared too (unset by default).
    const { code, logs } = await system.migrate(service, { HISTORY_RETENTION_DAYS: '365' });
    if (code !== 0) throw new Error(`${service} migration failed:\n${logs.join('\n')}`);
    const line = logs.map((text) => JSON.parse(text)).find((entry) => entry.msg === 'migrated');
    migrated.set(service, line);
  }
}, 120_000);
afterAll(async () => {
  await client?.close();
  await system?.stop();
});

describe('the indexes of docs/operations.md', () => {
  const rows = listedQueries();

  it('when the table is read, then it lists queries of every service that declares indexes', () => {
    expect(rows.length).toBeGreaterThan(15);
    expect(new Set(rows.map((row) => row.service))).toEqual(new Set(SERVICES));
  });

  it('when every service is migrated, then each index the table names is one its migration declares, and each declared index serves a listed query', () => {
    for (const row of rows) {
      const declared = migrated.get(row.service)!.indexes;
      for (const collection of row.collections)
        for (const name of row.mongodb) expect(declared[collection], `${row.service} ${collection}`).toContain(name);
    }
    for (const [service, { indexes }] of migrated)
      for (const [collection, names] of Object.entries(indexes)) {
        const listed = rows
          .filter((row) => row.service === service && row.collections.includes(collection))
          .flatMap((row) => row.mongodb);
        for (const name of names) expect(listed, `${service} ${collection} declares ${name}`).toContain(name);
      }
  });

  it('when every service is migrated, then the server under test has the index of every listed query', async () => {
    for (const row of rows) {
      const { driverIndexesCreated } = migrated.get(row.service)!;
      const database = new URL(system.mongoUrlFor(row.service)).pathname.slice(1);
      for (const collection of row.collections) {
        const where = `${row.service} ${collection}: ${row.query}`;
        if (driverIndexesCreated) {
          const names = (await client.db(database).collection(collection).indexes()).map((index) => index.name);
          expect(names, where).toEqual(expect.arrayContaining(row.mongodb));
        } else {
          expect(await ferretdbGinFields(database, collection), where).toEqual(expect.arrayContaining(row.ferretdb));
        }
      }
    }
  });
});
