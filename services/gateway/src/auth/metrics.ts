import { counter } from '@rs/telemetry/metrics';

/** scrypt runs of the gateway: with the single flight, one per new credential, not one per request. */
export const secretVerifications = counter(
  'gateway_secret_verifications_total',
  'Basic secrets verified against their stored hash, by outcome',
  ['outcome'],
);

/** Reads of the gateway's directories behind its caches (one per key and refresh, not per request). */
export const directoryLookups = counter(
  'gateway_directory_lookups_total',
  'Lookups of API clients and users in the gateway database, by directory',
  ['directory'],
);
