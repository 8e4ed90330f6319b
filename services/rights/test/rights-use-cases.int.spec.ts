import { DomainError } from '@rs/contracts';
import { basicCaller, fixedCatalog, testDatabase, type TestDatabase } from '@rs/testing';
import { manualClock } from '@rs/time';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NowFor } from '@rs/http';
import { RightCommands } from '../src/app/right-commands';
import { RightsUseCases } from '../src/app/rights';
import { RightMessages } from '../src/messages/events';
import { RightStore } from '../src/store/right-store';
import { rightHistory } from '../src/store/right-history';

// The middle tier: the rights use cases with their real store on the real
// database, in this process, on a clock the test moves instead of waiting for intervals.

const A = basicCaller('A');
const SP = basicCaller('SP');
const clock = manualClock('2026-03-01T00:00:00Z');
let database: TestDatabase;
let store: RightStore;
let rights: RightsUseCases;
let commands: RightCommands;

beforeAll(async () => {
  database = await testDatabase('rights_use_cases');
  store = new RightStore(database.db);
  await store.ensureIndexes();
  const catalog = fixedCatalog({ news: { serviceProviderId: 'SP', announceOnUsage: true, grantorIds: ['A', 'B'] } });
  const time = new NowFor(clock);
  const messages = new RightMessages('https://api.example.com');
  rights = new RightsUseCases({ store, history: rightHistory(database.db.db!), skus: catalog, messages, time });
  commands = new RightCommands({ store, skus: catalog, messages, time });
});
afterAll(async () => {
  await database?.drop();
});

const create = async (state: 'CREATED' | 'ACTIVE' | 'SUSPENDED', timeInterval = '2026-03-01T00:00:00Z/PT1H') =>
  (await rights.create(A, 'alice', { sku: 'news', grantorId: 'A', timeInterval, state, serviceProviderId: 'SP' }))
    .right;
/** A right as the caller reads it now. */
const get = async (...args: Parameters<RightsUseCases['get']>) => (await rights.get(...args)).right;
const expire = async (rightId: string) => {
  const { expired, failed } = await commands.expireMany([{ connectId: 'alice', rightId }], clock());
  expect(failed).toEqual([]);
  return expired;
};
const codeOf = async (promise: Promise<unknown>) =>
  promise.then(
    () => 'done',
    (error: unknown) => (error instanceof DomainError ? error.code : String(error)),
  );

describe('expiry (docs/api.md "Rights"), on a pinned clock', () => {
  it('when the interval of an ACTIVE or SUSPENDED right has not ended, then expiry leaves it; once it has, it is EXPIRED', async () => {
    clock.set('2026-03-01T00:00:00Z');
    const active = await create('ACTIVE');
    const suspended = await create('SUSPENDED');
    clock.set('2026-03-01T00:59:59Z');
    expect(await expire(active.rightId)).toEqual([]);
    expect(await get(A, 'alice', active.rightId)).toMatchObject({ state: 'ACTIVE', generation: 1 });
    clock.set('2026-03-01T01:00:00Z');
    for (const right of [active, suspended]) {
      expect((await expire(right.rightId)).map((expired) => expired.state)).toEqual(['EXPIRED']);
      expect(await get(A, 'alice', right.rightId)).toMatchObject({ state: 'EXPIRED', generation: 2 });
    }
  });

  it('when an expiry is delivered again, then it changes nothing and names the right again (its event is published again)', async () => {
    clock.set('2026-03-02T00:00:00Z');
    const right = await create('ACTIVE', '2026-03-02T00:00:00Z/PT1M');
    clock.advance(60_000);
    await expire(right.rightId);
    expect((await expire(right.rightId)).map((expired) => [expired.rightId, expired.generation])).toEqual([
      [right.rightId, 2],
    ]);
  });

  it('when an interval ends, then the right reads EXPIRED at its next generation at that instant, before any expiry is written, and later changes build on that', async () => {
    clock.set('2026-03-07T00:00:00Z');
    const ends = await create('ACTIVE', '2026-03-07T00:00:00Z/PT1M');
    const removed = await create('SUSPENDED', '2026-03-07T00:00:00Z/PT1M');
    const listedActive = async () =>
      (
        await rights.list(A, { userId: 'alice', grantorId: 'A', activeAt: clock(), limit: 1000, after: null })
      ).items.map((right) => right.rightId);
    expect(await listedActive()).toContain(ends.rightId);
    clock.set('2026-03-07T00:01:00Z');
    const stored = async (id: string) =>
      (await database.db.collection('rights').findOne({ _id: id } as never)) as { state: string } | null;
    expect(await get(A, 'alice', ends.rightId)).toMatchObject({ state: 'EXPIRED', generation: 2 });
    expect((await stored(ends.rightId))?.state).toBe('ACTIVE');
    expect(await listedActive()).not.toContain(ends.rightId);
    expect(await codeOf(rights.transition(A, 'alice', ends.rightId, 'suspend'))).toBe('conflict');
    // If-Match of the generation a reader sees; removing it writes the generation after that.
    expect(await codeOf(rights.remove(A, 'alice', removed.rightId, 2))).toBe('done');
    expect(await store.findEvenRemoved('alice', removed.rightId)).toMatchObject({
      removed: true,
      entity: { state: 'EXPIRED', generation: 3 },
    });

    // The scheduler names each right's end; a right stored before expiry keys is still found (by id).
    const before = await create('ACTIVE', '2026-03-07T00:00:00Z/PT1M');
    await database.db.collection('rights').updateOne({ _id: before.rightId } as never, { $unset: { expiresKey: '' } });
    const end = '2026-03-07T00:01:00Z';
    const { unwritten } = await commands.expireMany(
      [
        { connectId: 'alice', rightId: ends.rightId, end },
        { connectId: 'alice', rightId: before.rightId, end },
      ],
      clock(),
    );
    expect(unwritten.map((right) => right.rightId)).toEqual([ends.rightId, before.rightId]);
    unwritten.pop();
    expect(unwritten.map((right) => right.rightId)).toEqual([ends.rightId]);
    expect(await commands.writeExpiries(unwritten)).toEqual([true]);
    expect((await stored(ends.rightId))?.state).toBe('EXPIRED');
    expect(await get(A, 'alice', ends.rightId)).toMatchObject({ state: 'EXPIRED', generation: 2 });
    expect((await commands.expireMany([{ connectId: 'alice', rightId: ends.rightId }], clock())).unwritten).toEqual([]);
  });

  it('when a CREATED right ends, then expiry leaves it CREATED (only ACTIVE and SUSPENDED expire)', async () => {
    clock.set('2026-03-03T00:00:00Z');
    const right = await create('CREATED', '2026-03-03T00:00:00Z/PT1M');
    clock.advance(120_000);
    expect(await expire(right.rightId)).toEqual([]);
    expect(await get(A, 'alice', right.rightId)).toMatchObject({ state: 'CREATED' });
  });
});

describe('usage (docs/api.md "Usage"), on a pinned clock', () => {
  it('when the right is active, then the first use records it; a repeat changes nothing; after the interval, 409', async () => {
    clock.set('2026-03-04T00:00:00Z');
    const right = await create('ACTIVE', '2026-03-04T00:00:00Z/PT1H');
    clock.advance(30 * 60_000);
    expect(await codeOf(rights.use(SP, { userId: 'alice', rightId: right.rightId }))).toBe('done');
    expect(await get(A, 'alice', right.rightId)).toMatchObject({ used: true, generation: 2 });
    expect(await codeOf(rights.use(SP, { userId: 'alice', rightId: right.rightId }))).toBe('done');
    expect(await get(A, 'alice', right.rightId)).toMatchObject({ generation: 2 });
    clock.set('2026-03-04T01:00:00Z');
    const other = await create('ACTIVE', '2026-03-04T00:00:00Z/PT1H');
    expect(await codeOf(rights.use(SP, { userId: 'alice', rightId: other.rightId }))).toBe('conflict');
  });

  it('when the right was created but not activated, then usage is 409; after activation it is allowed', async () => {
    clock.set('2026-03-05T00:00:00Z');
    const right = await create('CREATED', '2026-03-05T00:00:00Z/PT1H');
    expect(await codeOf(rights.use(SP, { userId: 'alice', rightId: right.rightId }))).toBe('conflict');
    await rights.transition(A, 'alice', right.rightId, 'activate');
    expect(await codeOf(rights.use(SP, { userId: 'alice', rightId: right.rightId }))).toBe('done');
  });

  it('when If-Match names another generation, then the change is refused (412) and nothing changes', async () => {
    clock.set('2026-03-06T00:00:00Z');
    const right = await create('CREATED', '2026-03-06T00:00:00Z/PT1H');
    expect(await codeOf(rights.transition(A, 'alice', right.rightId, 'activate', 7))).toBe('precondition_failed');
    expect(await get(A, 'alice', right.rightId)).toMatchObject({ state: 'CREATED', generation: 1 });
  });
});
