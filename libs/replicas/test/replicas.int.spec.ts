import { testDatabase, type TestDatabase } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPLICA_TTL_MS, ReplicaRegistry } from '../src/index';

// docs/operations.md: limits that protect others hold across replicas, each enforcing its share.
let database: TestDatabase;
beforeAll(async () => {
  database = await testDatabase('replicas');
});
afterAll(() => database?.drop());

describe('ReplicaRegistry', () => {
  it('when a second replica joins, then each holds half of a shared limit; when one stops or lapses, then the other holds it whole', async () => {
    let now = Date.parse('2026-12-01T00:00:00Z');
    const clock = () => new Date(now);
    const db = database.db.db!;
    const first = new ReplicaRegistry(db, 'test_replicas', clock);
    const second = new ReplicaRegistry(db, 'test_replicas', clock);
    await first.renew();
    expect([first.count, first.share(8)]).toEqual([1, 8]);
    await second.renew();
    await first.renew();
    expect([first.count, second.count, first.share(8), second.share(8)]).toEqual([2, 2, 4, 4]);
    expect([first.isFirst, second.isFirst].filter(Boolean)).toHaveLength(1); // one reports for all
    expect(first.share(1, 1)).toBe(1); // never below the floor

    await second.stop(); // a graceful stop leaves at once
    await first.renew();
    expect(first.count).toBe(1);

    await second.renew();
    now += REPLICA_TTL_MS + 1; // the second stops renewing (a crash): its membership lapses
    await first.renew();
    expect([first.count, await first.liveMembers()]).toEqual([1, [first.id]]);
  });
});
