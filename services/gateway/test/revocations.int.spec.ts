import { createLogger } from '@rs/logging';
import { testDatabase, type TestDatabase } from '@rs/testing';
import { manualClock } from '@rs/time';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RevocationStore } from '../src/store/revocation-store';

// Revocations of access tokens (docs/security.md): two gateway replicas' stores
// on one real database, on a clock the test moves.

const HOUR = 3_600_000;
const clock = manualClock('2026-03-01T00:00:00Z');
let database: TestDatabase;
let here: RevocationStore;
let there: RevocationStore;

beforeAll(async () => {
  database = await testDatabase('gateway_revocations');
  const replica = () =>
    new RevocationStore(database.db, {
      logger: createLogger('revocations-test', 'silent'),
      minimumMs: HOUR,
      refreshMs: 50,
      clock,
    });
  here = replica();
  there = replica();
  await here.start();
  await there.start();
});
afterAll(async () => {
  await here?.stop();
  await there?.stop();
  await database?.drop();
});

describe('a revocation lasts as long as any token it names could', () => {
  it('when a revocation names an end in the past, then it still lasts the longest token lifetime, on every replica', async () => {
    expect(await here.revoke('past-end', new Date('2020-01-01T00:00:00Z'))).toBe(true);
    await expect.poll(() => there.isRevoked('past-end')).toBe(true);
    clock.advance(HOUR / 2);
    expect(here.isRevoked('past-end')).toBe(true);
    expect(there.isRevoked('past-end')).toBe(true);
  });

  it('when a revocation is repeated with a later end, then every replica keeps the later end; an earlier one never shortens it', async () => {
    const start = clock().getTime();
    expect(await here.revoke('extended', undefined)).toBe(true);
    await expect.poll(() => there.isRevoked('extended')).toBe(true);
    expect(await here.revoke('extended', new Date(start + 5 * HOUR))).toBe(false);
    expect(await there.revoke('extended', new Date(start + 2 * HOUR))).toBe(false);
    clock.advance(3 * HOUR);
    // Past the first end and the shorter second one: revoked still, on both replicas.
    await expect.poll(() => there.isRevoked('extended')).toBe(true);
    expect(here.isRevoked('extended')).toBe(true);
    clock.advance(2 * HOUR + 1);
    await expect.poll(() => there.isRevoked('extended')).toBe(false);
  });
});
