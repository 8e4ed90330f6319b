import { testDatabase, type TestDatabase } from '@rs/testing';
import mongoose from 'mongoose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BY_ID, documentSchema, OutboxStore, outboxDocumentFields } from '../src/index';

// A new document is stored without the fields that still hold what they hold until set (null,
// false, an empty list; docs/decisions/0078), and every read of the store gives them back: what
// the store stores and what a filter on null finds are seen through the driver.

interface Thing {
  id: string;
  generation: number;
  createdAt: Date;
  updatedAt: Date;
  label: string;
  note: string | null;
  count: number | null;
  extra: unknown;
  removed: boolean;
  tags: string[];
}
type ThingDocument = Omit<Thing, 'id'> & { _id: string };

const schema = documentSchema<ThingDocument>('things', {
  label: 'string',
  note: 'string?',
  count: 'number?',
  extra: 'json?',
  removed: 'flag',
  tags: 'json[]',
  ...outboxDocumentFields,
});

class ThingStore extends OutboxStore<ThingDocument, Thing> {
  constructor(db: mongoose.Connection) {
    super(db, 'Thing', schema, {
      tombstone: 'removed',
      toEntity: ({ _id, bucket: _bucket, ...fields }: ThingDocument & { bucket?: number }) => ({ id: _id, ...fields }),
      indexes: { collection: 'things', queries: [BY_ID] },
    });
  }

  insert({ id, ...fields }: Thing): Promise<boolean> {
    return this.documents.insert({ _id: id, ...fields }, []);
  }

  find(id: string): Promise<Thing | null> {
    return this.findLive(id);
  }

  async idsWhere(filter: Record<string, unknown>): Promise<string[]> {
    const docs = await this.model.find(filter, { _id: 1 }).sort({ _id: 1 }).lean<Array<{ _id: string }>>();
    return docs.map((doc) => doc._id);
  }

  set(id: string, generation: number, set: Partial<ThingDocument>): Promise<boolean> {
    return this.documents.compareAndSet({ id, generation, set: { ...set, generation: generation + 1 }, outbox: [] });
  }
}

let database: TestDatabase;
let store: ThingStore;

const thing = (id: string, fields: Partial<Thing> = {}): Thing => ({
  id,
  generation: 1,
  createdAt: new Date('2026-12-03T10:00:00Z'),
  updatedAt: new Date('2026-12-03T10:00:00Z'),
  label: id,
  note: null,
  count: null,
  extra: null,
  removed: false,
  tags: [],
  ...fields,
});

beforeAll(async () => {
  database = await testDatabase('unset_fields');
  store = new ThingStore(database.db);
}, 60_000);
afterAll(async () => {
  await database?.drop();
});

const storedFields = async (id: string) =>
  Object.keys((await database.db.db!.collection('things').findOne({ _id: id as never }))!).sort();

describe('a new document', () => {
  it('is stored without its unset fields and read with them', async () => {
    await store.insert(thing('plain'));

    const fields = await storedFields('plain');
    expect(fields).not.toContain('note');
    expect(fields).not.toContain('count');
    expect(fields).not.toContain('extra');
    expect(fields).not.toContain('removed');
    expect(fields).not.toContain('tags');
    expect(await store.find('plain')).toEqual(thing('plain'));
  });

  it('keeps every field set, even to a value another kind holds until set', async () => {
    const set = thing('set', { note: '', count: 0, extra: false, tags: ['a'] });
    const empty = thing('empty-list', { extra: [] });
    await store.insert(set);
    await store.insert(empty);

    expect(await storedFields('set')).toEqual(expect.arrayContaining(['note', 'count', 'extra', 'tags']));
    expect(await store.find('set')).toEqual(set);
    expect(await store.find('empty-list')).toEqual(empty);
  });

  it('is found by a filter on null or on not being a tombstone, as one stored with nulls is', async () => {
    await store.insert(thing('filter-unset'));
    await store.insert(thing('filter-set', { note: 'here' }));
    await database.db.db!.collection('things').insertOne({ ...thing('filter-nulls'), _id: 'filter-nulls' } as never);

    expect(await store.idsWhere({ _id: { $regex: '^filter' }, note: null })).toEqual(['filter-nulls', 'filter-unset']);
    expect(await store.idsWhere({ _id: { $regex: '^filter' }, removed: { $ne: true } })).toEqual([
      'filter-nulls',
      'filter-set',
      'filter-unset',
    ]);
  });

  it('takes a change of an unset field, and back', async () => {
    await store.insert(thing('changed'));

    expect(await store.set('changed', 1, { note: 'now', tags: ['t'] })).toBe(true);
    expect(await store.find('changed')).toEqual(thing('changed', { generation: 2, note: 'now', tags: ['t'] }));
    expect(await store.set('changed', 2, { note: null, tags: [] })).toBe(true);
    expect(await store.find('changed')).toEqual(thing('changed', { generation: 3 }));
  });
});
