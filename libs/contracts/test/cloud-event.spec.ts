import { describe, expect, it } from 'vitest';
import { CatalogEvents, createCloudEvent, InvalidMessage, parseEvent } from '../src/index';

const upserted = {
  sku: 'news-daily',
  name: 'Daily news',
  serviceProviderId: null,
  announceOnUsage: false,
  grantorIds: null,
  generation: '1',
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:00.000Z',
  sequence: 1,
};

describe('parseEvent', () => {
  it('when the envelope and payload are valid, then the typed event comes back', () => {
    const event = createCloudEvent({ source: 'catalog', type: 'sku.upserted', subject: 'news-daily', data: upserted });
    const parsed = parseEvent(CatalogEvents, JSON.parse(JSON.stringify(event)));
    expect(parsed.type).toBe('sku.upserted');
    expect(parsed.data).toEqual(upserted);
    expect(parsed.id).toMatch(/^[0-9A-Z]{26}$/);
  });

  it('when the type is unknown, then it is refused', () => {
    const event = createCloudEvent({ source: 'catalog', type: 'sku.renamed', subject: 'x', data: {} });
    expect(() => parseEvent(CatalogEvents, event)).toThrow(/unknown event type sku.renamed/);
  });

  it('when the envelope or the payload is malformed, then it is refused with the reason', () => {
    expect(() => parseEvent(CatalogEvents, { specversion: '0.3' })).toThrow(InvalidMessage);
    const event = createCloudEvent({
      source: 'c',
      type: 'sku.deleted',
      subject: 'x',
      data: { sku: 'has space', sequence: 1 },
    });
    expect(() => parseEvent(CatalogEvents, event)).toThrow(/invalid sku.deleted data/);
  });
});
