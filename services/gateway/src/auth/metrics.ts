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

/** Requests to identity providers for their discovery document and keys (at most one per unknown `kid` per 30 s). */
export const issuerFetches = counter(
  'gateway_issuer_fetches_total',
  'Requests to a trusted issuer, by issuer and document (discovery, jwks) and outcome',
  ['issuer', 'document', 'outcome'],
);

/** Bearer tokens answered from the verified-token memory, or verified. */
export const bearerVerifications = counter(
  'gateway_bearer_verifications_total',
  'Bearer tokens presented, by whether their signature was checked or remembered',
  ['outcome'],
);
