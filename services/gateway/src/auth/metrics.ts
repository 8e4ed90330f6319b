import client from 'prom-client';

/** scrypt runs of the gateway: with the single flight, one per new credential, not one per request. */
export const secretVerifications = new client.Counter({
  name: 'gateway_secret_verifications_total',
  help: 'Basic secrets verified against their stored hash, by outcome',
  labelNames: ['outcome'] as const,
});

/** Reads of the gateway's directories behind its caches (one per key and refresh, not per request). */
export const directoryLookups = new client.Counter({
  name: 'gateway_directory_lookups_total',
  help: 'Lookups of API clients and users in the gateway database, by directory',
  labelNames: ['directory'] as const,
});
