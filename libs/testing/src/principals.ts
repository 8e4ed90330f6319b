import type { Principal } from '@rs/http';

/**
 * Callers as the gateway establishes them (docs/api.md "Principals and authorization"), for unit tests of
 * access rules: an API client with Basic credentials, or a Bearer token for a user.
 */
export const basicCaller = (grantorId: string, admin = false): Principal => ({
  clientId: `${grantorId}-app`,
  grantorId,
  admin,
  scheme: 'basic',
  scopes: [],
  subject: null,
});

export const bearerCaller = (grantorId: string, subject: string, scopes: string[], admin = false): Principal => ({
  ...basicCaller(grantorId, admin),
  scheme: 'bearer',
  scopes,
  subject,
});
