import { createCloudEvent } from '@rs/contracts';
import { testDatabase, type TestDatabase } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HistoryLog, purgeExpired, RETENTION_INDEX, serverLimits } from '../src/index';

// docs/operations.md: history and webhook deliveries have a retention an operator sets
// (docs/decisions/0032): a TTL index on MongoDB, the service's own purge where there is none.
let database: TestDatabase;
beforeAll(async () => {
  database = await testDatabase('retention');
});
afterAll(() => database?.drop());

const DAY_MS = 86_400_000;
const changed = (subject: string, sequence: number, at: Date) =>
  createCloudEvent({ source: '/test', type: 'thing.changed', subject, data: { sequence }, time: at });

describe('a history with a retention', () => {
  it('when records are older than the retention, then the purge deletes them and keeps the rest, and the server has the TTL index or the service purges', async () => {
    const now = new Date('2026-12-01T00:00:00Z');
    const db = database.db.db!;
    const history = new HistoryLog(db, 'kept_30_days', new Set(['thing.changed']), { kind: 'system', id: 'test' }, 30);
    await history.ensureIndexes();
    await history.record([
      changed('old', 1, new Date(now.getTime() - 31 * DAY_MS)),
      changed('old', 2, new Date(now.getTime() - 30 * DAY_MS - 1)),
      changed('recent', 1, new Date(now.getTime() - 30 * DAY_MS + 60_000)),
      changed('recent', 2, now),
    ]);

    const { usesDriverIndexes } = await serverLimits(db);
    const indexes = await db.collection('kept_30_days').indexes();
    const ttl = indexes.find((index) => index.name === RETENTION_INDEX);
    if (usesDriverIndexes) expect(ttl).toMatchObject({ key: { time: 1 }, expireAfterSeconds: 30 * 86_400 });
    else expect(ttl).toBeUndefined(); // FerretDB: no TTL indexes, the purge below does it

    const purged: number[] = [];
    const errors: unknown[] = [];
    const purge = purgeExpired(history.retained, {
      clock: () => now,
      onPurged: (deleted) => purged.push(deleted),
      onError: (error) => errors.push(error),
    });
    try {
      if (!usesDriverIndexes) await expect.poll(() => purged).toEqual([2]);
      expect(errors).toEqual([]);
    } finally {
      await purge.stop();
    }
    if (!usesDriverIndexes) {
      expect((await everything(history, 'old')).records).toEqual([]);
      expect((await everything(history, 'recent')).records.map((record) => record.generation)).toEqual([1, 2]);
    }
  });

  it('when no retention is set, then nothing is purged and no TTL index is declared', async () => {
    const db = database.db.db!;
    const history = new HistoryLog(db, 'kept_forever', new Set(['thing.changed']), { kind: 'system', id: 'test' });
    await history.ensureIndexes();
    await history.record([changed('ancient', 1, new Date('2001-01-01T00:00:00Z'))]);
    const errors: unknown[] = [];
    const purge = purgeExpired(history.retained, {
      clock: () => new Date(),
      onPurged: () => undefined,
      onError: (e) => errors.push(e),
    });
    await purge.stop(); // its first run is done by then
    expect((await everything(history, 'ancient')).records).toHaveLength(1);
    expect((await db.collection('kept_forever').indexes()).map((index) => index.name)).not.toContain(RETENTION_INDEX);
    expect(errors).toEqual([]);
  });
});

/** The whole (short) history of a subject, as one page. */
const everything = (history: HistoryLog, subject: string) =>
  history.page(subject, { after: null, limit: 1000, lastGeneration: 10 });
