import { createCloudEvent, Exchanges } from '@rs/contracts';
import { testDatabase, type TestDatabase } from '@rs/testing';
import { outboxEntry, WriteFailed, type OutboxEntry } from '@rs/store';
import { bucketOf } from '@rs/hashing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SubscriptionEntity } from '../src/domain/subscription';
import { SubscriptionStore } from '../src/store/subscription-store';

// docs/decisions/0026 on the real database: every change after creation is a record claimed
// by its (subscription, generation); reads apply the latest.

let database: TestDatabase;
let store: SubscriptionStore;

beforeAll(async () => {
  database = await testDatabase('progress_records');
  store = new SubscriptionStore(database.db);
  await store.ensureIndexes();
});
afterAll(() => database?.drop());

const NONE: OutboxEntry[] = [];
const WHOLE = { after: undefined, limit: 1000 };
const created = (subscriptionId: string): SubscriptionEntity => ({
  subscriptionId,
  userId: 'alice',
  grantorId: 'G',
  grantorContext: null,
  state: 'ACTIVE',
  rightsSpec: [
    { sku: 'news', serviceProviderId: null, timeSpec: null, grantorContext: null, quantity: null, grace: null },
  ],
  plan: 0,
  pendingChange: null,
  timeSpec: 'R/2026-01-01T00:00:00Z/P1M',
  origTimeSpec: 'R/2026-01-01T00:00:00Z/P1M',
  paymentAgreement: 'card',
  nextPeriod: 0,
  clockId: null,
  generation: 1,
  createdAt: new Date('2026-01-01T00:00:00Z'),
  updatedAt: new Date('2026-01-01T00:00:00Z'),
});
const renewedFrom = (current: SubscriptionEntity): SubscriptionEntity => ({
  ...current,
  nextPeriod: (current.nextPeriod ?? 0) + 1,
  generation: current.generation + 1,
  updatedAt: new Date(current.updatedAt.getTime() + 1000),
});

describe('progress records (docs/decisions/0026)', () => {
  it('when two writers decide from the same generation, then one stores and the other finds its generation taken', async () => {
    const first = created('S1');
    expect(await store.insert(first, NONE)).toBe(true);
    const renewal = { current: first, next: renewedFrom(first) };
    const suspended = { ...first, state: 'SUSPENDED' as const, generation: 2, updatedAt: new Date() };

    expect(await store.renewMany([renewal])).toEqual([true]);
    // The suspend was decided from generation 1 too: its record's key is taken.
    expect(await store.update({ current: first, next: suspended, outbox: NONE })).toBe(false);
    // A repeated renewal from the same snapshot stores nothing either.
    expect(await store.renewMany([renewal])).toEqual([false]);

    const read = await store.find('alice', 'S1');
    expect(read).toMatchObject({ state: 'ACTIVE', nextPeriod: 1, generation: 2, paymentAgreement: 'card' });
    // Read by its id alone (find by id), it is the same renewed subscription.
    expect(await store.findById('S1')).toEqual(read);
  });

  it('when a change follows a creation whose events are still pending, then the document is not rewritten until the relay has sent them, and reads show the change at once', async () => {
    const first = created('S-pending');
    const announced = createCloudEvent({
      source: '/test',
      type: 'subscription.created',
      subject: 'S-pending',
      data: {},
    });
    expect(await store.insert(first, [outboxEntry(Exchanges.subscriptionsEvents, announced)])).toBe(true);
    const stored = () => database.db.collection('subscriptions').findOne({ _id: 'S-pending' } as never);
    expect(await stored()).toMatchObject({ generation: 1, outbox: [expect.anything()] });

    const suspended = { ...first, state: 'SUSPENDED' as const, generation: 2, updatedAt: new Date() };
    expect(await store.update({ current: first, next: suspended, outbox: NONE })).toBe(true);
    // Left alone: a rewrite could race the relay clearing the outbox and put the event back.
    expect(await stored()).toMatchObject({ generation: 1, state: 'ACTIVE', outbox: [expect.anything()] });
    expect(await store.find('alice', 'S-pending')).toMatchObject({ state: 'SUSPENDED', generation: 2 });

    // As the relay leaves it once the event is published: the next change is copied.
    await database.db
      .collection('subscriptions')
      .updateOne({ _id: 'S-pending' } as never, { $set: { outbox: [], outboxPending: false } });
    const active = { ...suspended, state: 'ACTIVE' as const, generation: 3, updatedAt: new Date() };
    expect(await store.update({ current: suspended, next: active, outbox: NONE })).toBe(true);
    expect(await stored()).toMatchObject({ generation: 3, state: 'ACTIVE', outbox: [] });
  });

  it('when changes follow one another, then reads, lists and the rebuild show the latest, and a delete removes it from all', async () => {
    const first = created('S2');
    await store.insert(first, NONE);
    const renewed = renewedFrom(first);
    expect(await store.renewMany([{ current: first, next: renewed }])).toEqual([true]);
    const suspended = { ...renewed, state: 'SUSPENDED' as const, generation: 3, updatedAt: new Date() };
    expect(await store.update({ current: renewed, next: suspended, outbox: NONE })).toBe(true);
    const again = renewedFrom(suspended);
    expect(await store.renewMany([{ current: suspended, next: again }])).toEqual([true]);

    const latest = { state: 'SUSPENDED', nextPeriod: 2, generation: 4 };
    expect(await store.find('alice', 'S2')).toMatchObject(latest);
    const listed = await store.list({ userId: 'alice', grantorId: null, limit: 10, after: null });
    expect(listed.items.find((one) => one.subscriptionId === 'S2')).toMatchObject(latest);
    expect(
      (await store.ofBucket(bucketOf('S2'), WHOLE)).items.find((one) => one.subscriptionId === 'S2'),
    ).toMatchObject(latest);

    const deleted = { ...again, generation: 5, updatedAt: new Date() };
    expect(await store.update({ current: again, next: deleted, outbox: NONE, removes: true })).toBe(true);
    expect(await store.find('alice', 'S2')).toBeNull();
    expect(await store.findEvenRemoved('alice', 'S2')).toMatchObject({ removed: true, entity: { generation: 5 } });
    expect(
      (await store.list({ userId: 'alice', grantorId: null, limit: 10, after: null })).items.map(
        (one) => one.subscriptionId,
      ),
    ).not.toContain('S2');
    expect((await store.ofBucket(bucketOf('S2'), WHOLE)).items.map((one) => one.subscriptionId)).not.toContain('S2');
  });

  it('when the newest subscriptions were deleted but their documents not yet rewritten, then a page reads on and is still full', async () => {
    const ofBob = (subscriptionId: string) => ({ ...created(subscriptionId), userId: 'bob' });
    const pending = (subscriptionId: string) => [
      outboxEntry(
        Exchanges.subscriptionsEvents,
        createCloudEvent({ source: '/test', type: 'subscription.created', subject: subscriptionId, data: {} }),
      ),
    ];
    await store.insert(ofBob('B-kept'), NONE);
    // Their creations' events still pending: a delete is recorded, the document left as it is.
    for (const id of ['B-gone-1', 'B-gone-2']) {
      const first = ofBob(id);
      await store.insert(first, pending(id));
      const deleted = { ...first, generation: 2, updatedAt: new Date() };
      expect(await store.update({ current: first, next: deleted, outbox: NONE, removes: true })).toBe(true);
    }
    const page = await store.list({ userId: 'bob', grantorId: 'G', limit: 1, after: null });
    expect(page.items.map((one) => one.subscriptionId)).toEqual(['B-kept']);
    const next = await store.list({ userId: 'bob', grantorId: 'G', limit: 1, after: page.last });
    expect(next.items).toEqual([]);
  });

  it('when a batch of renewals is stored, then each gets its own outcome', async () => {
    const a = created('S3');
    const b = created('S4');
    await store.insert(a, NONE);
    await store.insert(b, NONE);
    await store.renewMany([{ current: a, next: renewedFrom(a) }]);
    const outcomes = await store.renewMany([
      { current: a, next: renewedFrom(a) },
      { current: b, next: renewedFrom(b) },
    ]);
    expect(outcomes).toEqual([false, true]);
    expect(outcomes.some((one) => one instanceof WriteFailed)).toBe(false);
  });

  it('when the rebuild reads a bucket in pages, then each page holds its subscriptions once, each with its own latest record, and the last page ends the bucket', async () => {
    // Ids of one bucket, some renewed (records `<id>@<generation>` between them in id order).
    const ids = Array.from({ length: 2000 }, (_, i) => `P${String(i).padStart(4, '0')}`)
      .filter((id) => bucketOf(id) === bucketOf('P0000'))
      .slice(0, 5);
    expect(ids).toHaveLength(5);
    for (const [i, id] of ids.entries()) {
      const first = created(id);
      await store.insert(first, NONE);
      if (i % 2 === 0) await store.renewMany([{ current: first, next: renewedFrom(first) }]);
    }
    const pages: Array<Array<[string, number]>> = [];
    let after: string | undefined;
    for (;;) {
      const page = await store.ofBucket(bucketOf('P0000'), { after, limit: 2 });
      pages.push(
        page.items
          .filter((one) => ids.includes(one.subscriptionId))
          .map((one) => [one.subscriptionId, one.nextPeriod!]),
      );
      if (page.lastId === null) break;
      after = page.lastId;
    }
    expect(pages.flat()).toEqual(ids.map((id, i) => [id, i % 2 === 0 ? 1 : 0]));
    expect(pages.every((page) => page.length <= 2)).toBe(true);
  });
});
