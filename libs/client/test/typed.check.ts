// Compiled by `npm run typecheck:tests` (tsc -p tsconfig.test.json), never run: each line
// marked below must stay a type error, so a client that stopped being typed end to end fails
// the build: a wrong field fails tsc.
import { createPlatformClient, type Schemas } from '@rs/client';

const client = createPlatformClient({ baseUrl: 'http://localhost:8080' });
const alice = { path: { connectId: 'alice' } };

export const wrongField = client.POST('/id/users/{connectId}/rights', {
  params: alice,
  // @ts-expect-error `skus` is not a field of RightCreateBody
  body: { skus: 'news', grantorId: 'A', timeInterval: '2026-01-01T00:00:00Z/P1D' },
});

// @ts-expect-error no such path
export const wrongPath = client.GET('/id/users/{connectId}/right', { params: alice });

// @ts-expect-error a right's state is never "PAUSED"
export const wrongState: Schemas['Right']['state'] = 'PAUSED';

export const missingParameter = client.GET('/id/users/{connectId}/entitlements/{sku}', {
  // @ts-expect-error the path needs the SKU too
  params: { path: { connectId: 'alice' } },
});

export async function wrongAnswer(): Promise<string> {
  const { data } = await client.GET('/id/users/{connectId}', { params: alice });
  // @ts-expect-error a user has no `rights`
  return data!.rights;
}
