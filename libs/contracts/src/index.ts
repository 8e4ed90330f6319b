// The public contract (docs/operations.md), in three parts:
// - schemas/: the zod schemas of every body, event and command, and their names;
// - routes/: the route table, the one description of every public route;
// - docs/: the generators of the OpenAPI document, the AsyncAPI document and the events page, from the two above.
export * from './decision';
export * from './errors';
export * from './schemas/audit';
export * from './schemas/catalog';
export * from './schemas/cloud-event';
export * from './schemas/commands';
export * from './schemas/entitlements';
export * from './schemas/formats';
export * from './schemas/history';
export * from './schemas/idempotency';
export * from './schemas/identity';
export * from './schemas/ids';
export * from './schemas/principal';
export * from './schemas/rights';
export * from './schemas/subscriptions';
export * from './schemas/topology';
export * from './schemas/webhooks';
export * from './routes/routes';
export * from './docs/asyncapi';
export * from './docs/event-families';
export * from './docs/events-doc';
export * from './docs/examples';
export * from './docs/openapi';
export * from './schemas/clocks';
