import { testDatabase, type TestDatabase } from '@rs/testing';
import type { Clock } from '@rs/time';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partitionOf, secondOf } from '../src/domain/due';
import { DueStore } from '../src/store/due-store';

// The middle tier: the scheduler's due store on the real database (docs/decisions/0011).
// A sweeper reads a second as it begins and deletes it by key once it has passed, so a
// recording that lands after the read would be lost; one that may have is recorded as `soon` too.

const T0 = Date.parse('2026-12-01T00:00:00Z');
let database: TestDatabase;
let store: DueStore;

beforeAll(async () => {
  database = await testDatabase('due_store');
  store = new DueStore(database.db, 'right_expiries');
  await store.ensureIndexes();
});
afterAll(async () => {
  await database?.drop();
});

/** A clock that reads `recordedAt` when the recording starts and `landedAt` when it has landed. */
const recording = (recordedAt: number, landedAt: number): Clock => {
  const readings = [recordedAt, landedAt];
  return () => new Date(readings.length > 1 ? readings.shift()! : readings[0]!);
};
const item = (id: string, dueAt: number) => ({ id, sequence: 1, dueAt: new Date(dueAt), connectId: 'u1' });

describe('recording due items', () => {
  it('when an item carries a snapshot, then it reads back as recorded; a stored one that does not read as a snapshot is left out, not the item', async () => {
    const snapshot = {
      sequence: 3,
      state: 'ACTIVE' as const,
      grantorId: 'B',
      grantorContext: null,
      rightsSpec: [
        { sku: 'monthly', serviceProviderId: 'P', timeSpec: 'P1M', grantorContext: '', quantity: null, grace: null },
      ],
      origTimeSpec: 'R/2026-12-01T00:00:00Z/P1M',
      timeSpec: 'R/2026-12-01T00:00:00Z/P1M',
      nextPeriod: 2,
      createdAt: '2026-11-01T00:00:00.000Z',
    };
    const dueAt = T0 + 20_000;
    const due = { ...item('Ssnap', dueAt), sequence: 3, snapshot };
    await store.recordMany([due], recording(T0, T0 + 100));
    // As no snapshot reads: bad text, a broken document.
    const key = `${partitionOf(due.id)}:${secondOf(dueAt)}`;
    const raw = { sequence: 1, dueAt: new Date(dueAt), due: key, connectId: 'u1' };
    await store.model.collection.insertMany([
      { _id: 'Stext@1', id: 'Stext', ...raw, snapshot: '{"sequence":' } as never,
      { _id: 'Sbroken@1', id: 'Sbroken', ...raw, snapshot: JSON.stringify({ ...snapshot, state: 'NOPE' }) } as never,
    ]);
    const read = new Map(
      (await store.inSecond(partitionOf(due.id), secondOf(dueAt))).map((one) => [one.id, one.snapshot]),
    );
    expect(read.get('Ssnap')).toEqual(snapshot);
    expect([...read.keys()]).toEqual(expect.arrayContaining(['Stext', 'Sbroken']));
    expect(read.get('Stext')).toBeUndefined();
    expect(read.get('Sbroken')).toBeUndefined();
  });

  it('when a recording lands well before its second has passed, then its items are under their second only', async () => {
    const due = item('Rintime', T0 + 10_000);
    expect(await store.recordMany([due], recording(T0, T0 + 200))).toBe(0);
    expect((await store.inSecond(partitionOf(due.id), secondOf(due.dueAt))).map((i) => i.id)).toEqual([due.id]);
    expect((await store.soon()).map((i) => i.id)).not.toContain(due.id);
  });

  it('when a recording lands after its second may have been swept, then its items are in the soon bucket too, once', async () => {
    const due = item('Rlate', T0 + 5_500);
    // Recorded 5.5 s ahead (under its second), landed 6 s later: a sweeper may have read that second.
    expect(await store.recordMany([due], recording(T0, T0 + 6_000))).toBe(1);
    expect(await store.recordMany([due], recording(T0, T0 + 6_000))).toBe(1); // an event redelivered
    const soon = (await store.soon()).filter((i) => i.id === due.id);
    expect(soon.map((i) => [i.id, i.dueAt.getTime()])).toEqual([[due.id, due.dueAt.getTime()]]);
    // The sweeper removes what it commanded from the soon bucket: the copy goes, the slot stays.
    await store.remove(soon);
    expect((await store.soon()).map((i) => i.id)).not.toContain(due.id);
    expect((await store.inSecond(partitionOf(due.id), secondOf(due.dueAt))).map((i) => i.id)).toEqual([due.id]);
  });
});
