// "10 articles a month" (docs/api.md "Usage", "Consumption by SKU", "Reservations"):
//   node examples/metered-articles.mjs <connectId> <sku> <grantorId>
// The grantor (CLIENT_ID / CLIENT_SECRET) sells a monthly subscription whose right grants 10
// units each period; the publisher serving the SKU (PROVIDER_ID / PROVIDER_SECRET) consumes one
// unit per article read, without caring which right gives it, reserves before an act whose cost
// it learns after, and checks the balance from memory; the grantor then tops the reader up
// with a direct right of 5 more.
import { createPlatformClient, ok } from '@rs/client';
import { baseUrl, credentials, report } from './config.mjs';

const [connectId, sku, grantorId] = process.argv.slice(2);
if (!connectId || !sku || !grantorId) throw new Error('usage: metered-articles.mjs <connectId> <sku> <grantorId>');
const grantor = createPlatformClient({ baseUrl, credentials: credentials('CLIENT') });
const provider = createPlatformClient({ baseUrl, credentials: credentials('PROVIDER') });
const user = { connectId };
const balance = async () =>
  ok(await provider.GET('/id/users/{connectId}/entitlements/{sku}', { params: { path: { connectId, sku } } })).balance;

// The grantor: a subscription from now, monthly, each period's right worth 10 articles.
const start = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
const subscription = ok(
  await grantor.POST('/id/users/{connectId}/subs', {
    params: { path: user },
    body: { grantorId, timeSpec: `R/${start}/P1M`, rightsSpec: [{ sku, quantity: 10 }] },
  }),
);
// The first period's right is issued as the subscription is created; the check shows it once it is there.
for (let waited = 0; (await balance()) !== 10; waited += 100) {
  if (waited > 10_000) throw new Error('the first period brought no 10 units within 10 s');
  await new Promise((resolve) => setTimeout(resolve, 100));
}
report({ subscribed: subscription.subscriptionId, balance: 10 });

// The publisher: three articles read, one unit each, from whichever right ends first.
for (let article = 1; article <= 3; article++) {
  const consumed = ok(
    await provider.POST('/id/users/{connectId}/entitlements/{sku}/consumption', {
      params: { path: { connectId, sku } },
      body: { amount: 1 },
      headers: { 'Idempotency-Key': `read-${subscription.subscriptionId}-${article}` },
    }),
  );
  report({ read: article, remaining: consumed.remaining });
}

// A long piece priced after it is rendered: hold 2, then settle for what it cost (1); the other is freed.
const reservation = ok(
  await provider.POST('/id/users/{connectId}/entitlements/{sku}/reservations', {
    params: { path: { connectId, sku } },
    body: { amount: 2, ttl: 'PT5M' },
  }),
);
const settled = ok(
  await provider.POST('/id/users/{connectId}/entitlements/{sku}/reservations/{reservationId}/commit', {
    params: { path: { connectId, sku, reservationId: reservation.reservationId } },
    body: { amount: 1 },
  }),
);
report({ reserved: reservation.amount, committed: settled.amount, remaining: settled.remaining });

// The grantor tops the reader up with 5 articles until the end of the month.
const end = new Date(Date.now() + 30 * 86_400_000).toISOString().replace(/\.\d{3}Z$/, 'Z');
ok(
  await grantor.POST('/id/users/{connectId}/rights', {
    params: { path: user },
    body: { sku, grantorId, state: 'ACTIVE', quantity: 5, timeInterval: `${start}/${end}` },
  }),
);
report({ toppedUp: 5, balance: await balance() });
