// What the API document shows as examples: values a user can send as they are.

/**
 * A value of every parameter, by its name in `components.parameters`, that a user can send as
 * it is: the API page fills them in ("Try it out"), and a test holds each to its schema.
 */
export const PARAMETER_EXAMPLES: Record<string, unknown> = {
  sku: 'news-daily',
  asset: 'swagger-ui.css',
  consoleAsset: 'console-0000.css',
  clientId: 'acme',
  jti: '5f0c6d1e-9a4b-4c1f-8e2d-3b7a9c0d1e2f',
  connectId: 'alice',
  rightId: '01JDXW5Q3D7V9Q6Y3B2N8K4M1R',
  reservationId: '01JDXWD4F6H8K0M2P4R6T8W0Y2',
  subscriptionId: '01JDXW8T5H2K4M6P8R0T2V4X6Z',
  endpointId: '01JDXWB2C4E6G8J0L2N4Q6S8U0',
  clockId: '01JDXWE5G7J9L1N3Q5S7U9W1Y3',
  deliveryId: '9b2f4c6e8a0d1f3b5c7e9a1d3f5b7c9e',
  limit: 20,
  cursor: '41.01JDXW5Q3D7V9Q6Y3B2N8K4M1R',
  historyCursor: '3.0',
  skuCursor: 'news-daily',
  userCursor: 'alice',
  idempotencyKey: 'create-news-daily-for-alice-2026-11',
  ifMatch: '"1"',
  auditReason: 'Paid by bank transfer (ticket 4711)',
};

/** A body of every request schema a user can send as it is (see `PARAMETER_EXAMPLES`). */
export const BODY_EXAMPLES: Record<string, unknown> = {
  RightCreateBody: {
    sku: 'news-daily',
    grantorId: 'acme',
    state: 'ACTIVE',
    timeInterval: '2026-01-01T00:00:00Z/2030-01-01T00:00:00Z',
  },
  SubscriptionCreateBody: {
    grantorId: 'acme',
    timeSpec: 'R/2026-11-01T00:00:00Z/P1M',
    rightsSpec: [{ sku: 'news-daily' }],
  },
  PlanChangeBody: { rightsSpec: [{ sku: 'news-premium' }], at: 'next-period' },
  ClockCreateBody: { grantorId: 'acme', time: '2027-01-01T00:00:00Z' },
  ClockAdvanceBody: { to: '2027-04-01T00:00:00Z' },
  SkuUpsertBody: { name: 'Daily news', announceOnUsage: true },
  ClientBody: { secret: 'acme-secret-0123', grantorId: 'acme' },
  RevocationBody: { expiresAt: '2026-12-31T00:00:00Z' },
  EndpointCreateBody: { url: 'https://hooks.example.com/rights', events: ['right.*'] },
  UsageBody: { amount: 1 },
  AdjustmentBody: { amount: 10 },
  ConsumptionBody: { amount: 1 },
  ReservationBody: { amount: 3, ttl: 'PT5M' },
  CommitBody: { amount: 2 },
};
