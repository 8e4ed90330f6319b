// A service provider deciding whether to let a user in (docs/entitlements.md):
//   node examples/check-entitlement.mjs <connectId> <sku>
// Online, one call: the entitlement check. Offline: the platform's public keys fetched once at
// start (a fresh deployment publishes one already), then a signed right token of the user's
// right verified locally with `jose`, as a device or an edge would without calling back.
import { createPlatformClient, ok } from '@rs/client';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { baseUrl, credentials, report } from './config.mjs';

const [connectId, sku] = process.argv.slice(2);
if (!connectId || !sku) throw new Error('usage: check-entitlement.mjs <connectId> <sku>');
const platform = createPlatformClient({ baseUrl, credentials: credentials() });

// At start: the keys that verify right tokens (cache them; fetch again on an unknown `kid`).
const jwks = createLocalJWKSet(await (await fetch(`${baseUrl}/.well-known/jwks.json`)).json());

// Online: may this user use this SKU now?
const entitlement = ok(
  await platform.GET('/id/users/{connectId}/entitlements/{sku}', { params: { path: { connectId, sku } } }),
);

// Offline: a token of one of the rights behind it, verified without calling the platform again.
let offline = null;
const right = entitlement.rights[0];
if (right) {
  const token = ok(
    await platform.GET('/id/users/{connectId}/rights/{rightId}/token', {
      params: { path: { connectId, rightId: right.rightId } },
      parseAs: 'text',
    }),
  );
  const { payload } = await jwtVerify(token, jwks, { issuer: baseUrl, typ: 'right+jwt', subject: connectId });
  offline = { rightId: payload.rid, sku: payload.sku, validUntil: new Date(payload.exp * 1000).toISOString() };
}
report({ connectId, sku, entitled: entitlement.entitled, until: entitlement.until, offline });
