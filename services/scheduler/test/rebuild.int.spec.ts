import { InternalTokenSigner } from '@rs/http';
import {
  TEST_INTERNAL_SECRET,
  TestSystem,
  clientsOf,
  systemFixture,
  testDatabase,
  type TestDatabase,
} from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rebuildSchedules } from '../src/app/rebuild';
import { partitionOf, PARTITIONS, secondOf } from '../src/domain/due';
import { createStores } from '../src/store/stores';

// docs/operations.md: the rebuild reads only the partitions a replica owns, a page at a time, from
// the services that own the data; two replicas read the data once between them.

const A = TestSystem.clientAuthorization('grantor-a');
const fx = systemFixture({
  name: 'rebuild',
  backends: ['catalog', 'rights', 'subscriptions'],
  seed: { clients: clientsOf({ 'grantor-a': 'A' }), users: ['alice', 'bob'], skus: { news: {} } },
});
let database: TestDatabase;
beforeAll(async () => {
  await fx.start();
  database = await testDatabase('rebuild');
});
afterAll(async () => {
  await database?.drop();
  await fx.stop();
});

describe('the rebuild, shared by replicas (docs/operations.md)', () => {
  it('when two replicas each rebuild the partitions they own, then between them they read every subscription, right and held reservation once, and each records only its own', async () => {
    const due = new Date(Math.ceil(Date.now() / 1000) * 1000 + 3_600_000);
    const iso = due.toISOString().replace(/\.000Z$/, 'Z');
    const subscriptions = await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        const response = await fx.call('POST', `/id/users/${i % 2 ? 'alice' : 'bob'}/subs`, A, {
          grantorId: 'A',
          timeSpec: `R/${iso}/P1M`,
          rightsSpec: [{ sku: 'news' }],
        });
        expect(response.status).toBe(201);
        return ((await response.json()) as { subscriptionId: string }).subscriptionId;
      }),
    );
    const rights = await Promise.all(
      Array.from({ length: 40 }, async () => {
        const response = await fx.call('POST', '/id/users/alice/rights', A, {
          sku: 'news',
          grantorId: 'A',
          state: 'ACTIVE',
          timeInterval: `${new Date().toISOString()}/${iso}`,
        });
        expect(response.status).toBe(201);
        return ((await response.json()) as { rightId: string }).rightId;
      }),
    );

    // A metered right of the same end, and reservations on it: their lapses are rebuilt too
    // (no scheduler here follows `scheduler.hold`; only the rebuild records them).
    const metered = await fx.call('POST', '/id/users/bob/rights', A, {
      sku: 'news',
      grantorId: 'A',
      state: 'ACTIVE',
      quantity: 100,
      timeInterval: `${new Date().toISOString()}/${iso}`,
    });
    rights.push(((await metered.json()) as { rightId: string }).rightId);
    const reservations = [];
    for (let i = 0; i < 6; i++) {
      const reserved = await fx.call('POST', '/id/users/bob/entitlements/news/reservations', A, { ttl: 'PT1H' });
      expect(reserved.status).toBe(201);
      reservations.push((await reserved.json()) as { reservationId: string; expiresAt: string });
    }

    const urls = { subscriptions: fx.system.service('subscriptions').url, rights: fx.system.service('rights').url };
    const signer = new InternalTokenSigner(TEST_INTERNAL_SECRET, 'scheduler');
    const stores = createStores(database.db);
    const halves = [
      Array.from({ length: PARTITIONS / 2 }, (_, p) => p),
      Array.from({ length: PARTITIONS / 2 }, (_, p) => p + PARTITIONS / 2),
    ];
    const read = [];
    for (const partitions of halves) read.push(await rebuildSchedules({ urls, signer, stores, partitions }));
    expect(read[0]! + read[1]!).toBe(subscriptions.length + rights.length + reservations.length);
    expect(read.every((count) => count > 0)).toBe(true);

    // Each item is recorded once, under its own partition's key, by the replica that owns it.
    const recorded = async (store: (typeof stores)['rightExpiries'], ids: string[]) => {
      const found = (
        await Promise.all(Array.from({ length: PARTITIONS }, (_, p) => store.inSecond(p, secondOf(due))))
      ).flat();
      expect(found.map((item) => item.id).sort()).toEqual([...ids].sort());
      for (const item of found) expect(item.dueAt.getTime()).toBe(due.getTime());
    };
    await recorded(stores.subscriptionSchedules, subscriptions);
    await recorded(stores.rightExpiries, rights);
    for (const { reservationId, expiresAt } of reservations) {
      const lapse = new Date(expiresAt);
      const found = await stores.holdExpiries.inSecond(partitionOf(reservationId), secondOf(lapse));
      expect(found.map((item) => [item.id, item.dueAt.getTime()])).toContainEqual([reservationId, lapse.getTime()]);
    }
    const first = await rebuildSchedules({ urls, signer, stores, partitions: halves[0]! });
    const owned = [...subscriptions, ...rights, ...reservations.map(({ reservationId }) => reservationId)].filter(
      (id) => halves[0]!.includes(partitionOf(id)),
    );
    expect(first).toBe(owned.length);
  });
});
