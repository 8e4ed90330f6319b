import { expiryOf, type RightEntity } from '../src/domain/right';

const END = new Date('2026-03-01T10:00:00Z');

/**
 * A right as the service holds it, for the unit tests of its rules: ACTIVE, 2026-03-01 00:00 to
 * 10:00 UTC; it expires at its end, or at the end of the `grace` given.
 */
export const aRight = (fields: Partial<RightEntity> = {}): RightEntity => ({
  rightId: 'R1',
  userId: 'alice',
  state: 'ACTIVE',
  grantorId: 'A',
  grantorContext: null,
  serviceProviderId: null,
  sku: 'news',
  payload: null,
  used: false,
  quantity: null,
  remaining: null,
  holds: [],
  grace: null,
  start: new Date('2026-03-01T00:00:00Z'),
  end: END,
  expiresAt: fields.expiresAt ?? expiryOf(fields.end ?? END, fields.grace ?? null),
  timeInterval: '2026-03-01T00:00:00Z/2026-03-01T10:00:00Z',
  subscriptionId: null,
  clockId: null,
  generation: 1,
  createdAt: new Date('2026-03-01T00:00:00Z'),
  updatedAt: new Date('2026-03-01T00:00:00Z'),
  ...fields,
});
