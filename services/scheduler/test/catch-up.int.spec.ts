import { systemFixture } from '@rs/testing';
import mongoose from 'mongoose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PARTITIONS } from '../src/domain/due';
import { RIGHT_EXPIRIES, SUBSCRIPTION_SCHEDULES } from '../src/store/stores';

const fx = systemFixture({ name: 'catch-up', backends: ['scheduler'], gateway: false });
beforeAll(fx.start);
afterAll(fx.stop);

const HOURS_BEHIND = 6;
/**
 * How long a started scheduler may take to save every partition's first position: a process
 * start, a membership, then a sweep of each partition. About 15 s alone; with the other test
 * files loading both cores it took over 30 s, which is slowness, not the fault this test finds
 * (a position never saved, or saved behind where it stopped).
 */
const UNDER_WAY_MS = 60_000;
const keys = [RIGHT_EXPIRIES, SUBSCRIPTION_SCHEDULES].flatMap((collection) =>
  Array.from({ length: PARTITIONS }, (_, partition) => `${collection}:${partition}`),
);

/** The sweep cursors of the scheduler's database, by `<collection>:<partition>`. */
async function withCursors<T>(use: (cursors: mongoose.mongo.Collection) => Promise<T>): Promise<T> {
  const connection = await mongoose.createConnection(fx.system.mongoUrlFor('scheduler')).asPromise();
  try {
    return await use(connection.db!.collection('sweep_cursors'));
  } finally {
    await connection.close();
  }
}
const cursors = () =>
  withCursors(async (collection) => {
    const documents = await collection.find({}).toArray();
    return new Map(documents.map((document) => [String(document._id), Number(document.second)]));
  });

describe('a scheduler catching up after downtime (docs/decisions/0011)', () => {
  it(
    'when it is stopped while catching up hours of missed seconds, then it stops gracefully, and the next one goes on from where it stopped',
    { timeout: 3 * UNDER_WAY_MS },
    async () => {
      const scheduler = fx.system.services.get('scheduler')!;
      expect(await scheduler.stop()).toBe(0);
      // Every partition was last swept hours ago, as after a long outage.
      const behind = Math.floor(Date.now() / 1000) - HOURS_BEHIND * 3600;
      await withCursors(async (collection) => {
        for (const key of keys)
          await collection.updateOne({ _id: key as never }, { $set: { second: behind } }, { upsert: true });
      });

      await scheduler.start();
      // Stopped once every partition is under way, hours from the end of its catch-up.
      const slowest = async () => {
        const now = await cursors();
        return Math.min(...keys.map((key) => now.get(key) ?? behind));
      };
      await expect.poll(slowest, { timeout: UNDER_WAY_MS, interval: 200 }).toBeGreaterThan(behind);
      // A graceful stop (exit code 0), not one cut short by the stop timeout while a sweep runs on.
      expect(await scheduler.stop()).toBe(0);
      const stoppedAt = await cursors();
      const now = Math.floor(Date.now() / 1000);
      for (const key of keys) {
        expect(stoppedAt.get(key), key).toBeGreaterThan(behind);
        expect(stoppedAt.get(key), key).toBeLessThan(now - 3600);
      }

      await scheduler.start();
      // The next one goes on from there: every partition moves past where the first stopped.
      await expect
        .poll(
          async () => {
            const later = await cursors();
            return keys.filter((key) => !(later.get(key)! > stoppedAt.get(key)!));
          },
          { timeout: UNDER_WAY_MS, interval: 200 },
        )
        .toEqual([]);
      expect(await scheduler.stop()).toBe(0);
    },
  );
});
