import { describe, expect, it } from 'vitest';
import { deleted, isUnchanged, neverCatalogued, representation, upserted } from '../src/domain/sku';

const T1 = new Date('2026-03-01T00:00:00Z');
const T2 = new Date('2026-03-02T00:00:00Z');

describe('docs/operations.md: catalog entries', () => {
  it('when a SKU is put, then fields left out take their defaults and the generation starts at 1', () => {
    const entry = upserted(neverCatalogued('news'), { name: 'News' }, T1);
    expect(entry).toEqual({
      sku: 'news',
      name: 'News',
      serviceProviderId: null,
      announceOnUsage: false,
      grantorIds: null,
      generation: 1,
      createdAt: T1,
      updatedAt: T1,
      deleted: false,
    });
  });

  it('when the same settings are put again, then nothing changes; other settings replace them all', () => {
    const entry = upserted(neverCatalogued('news'), { name: 'News', announceOnUsage: true }, T1);
    expect(isUnchanged(entry, { name: 'News', announceOnUsage: true })).toBe(true);
    expect(isUnchanged(entry, { name: 'News' })).toBe(false);
    const replaced = upserted(entry, { serviceProviderId: 'SP' }, T2);
    expect(replaced).toMatchObject({ name: null, serviceProviderId: 'SP', announceOnUsage: false, generation: 2 });
    expect(replaced.createdAt).toEqual(T1);
  });

  it('when a deleted SKU is put again, then its generation goes on from the tombstone (consumers order by it)', () => {
    const tombstone = deleted(upserted(neverCatalogued('news'), {}, T1), T2);
    expect(tombstone).toMatchObject({ deleted: true, generation: 2 });
    expect(isUnchanged(tombstone, {})).toBe(false);
    const revived = upserted(tombstone, {}, T2);
    expect(revived).toMatchObject({ deleted: false, generation: 3, createdAt: T2 });
  });

  it('then the representation shows the generation as a string and the times in ISO 8601', () => {
    expect(representation(upserted(neverCatalogued('news'), { announceOnUsage: true }, T1))).toEqual({
      sku: 'news',
      name: null,
      serviceProviderId: null,
      announceOnUsage: true,
      grantorIds: null,
      generation: '1',
      createdAt: '2026-03-01T00:00:00.000Z',
      updatedAt: '2026-03-01T00:00:00.000Z',
    });
  });
});
