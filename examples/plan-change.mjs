// Upgrade at once, downgrade at renewal (docs/api.md "Plan changes"):
//   node examples/plan-change.mjs <connectId> <basicSku> <premiumSku> <grantorId>
// The grantor (CLIENT_ID / CLIENT_SECRET) subscribes a reader monthly to the basic SKU, upgrades
// them to premium at once (the basic right ends now, a premium one runs for the rest of the
// month), then books the way back to basic from next month, which the subscription shows as
// its pending change until then.
import { createPlatformClient, ok } from '@rs/client';
import { baseUrl, credentials, report } from './config.mjs';

const [connectId, basic, premium, grantorId] = process.argv.slice(2);
if (!connectId || !basic || !premium || !grantorId)
  throw new Error('usage: plan-change.mjs <connectId> <basicSku> <premiumSku> <grantorId>');
const grantor = createPlatformClient({ baseUrl, credentials: credentials('CLIENT') });
const user = { connectId };

/** The subscription's rights as the grantor lists them: which SKU, in which state, until when. */
async function rightsOf(subscriptionId) {
  const { right } = ok(
    await grantor.GET('/id/users/{connectId}/rights', { params: { path: user, query: { grantorId, limit: 100 } } }),
  );
  return right
    .filter((r) => r.link.some((link) => link.rel === 'subscription' && link.href.endsWith(`/${subscriptionId}`)))
    .map((r) => ({ sku: r.sku, state: r.state, until: r.timeInterval.split('/')[1] }))
    .sort((a, b) => a.until.localeCompare(b.until) || a.sku.localeCompare(b.sku));
}

/** Waits until the subscription's rights are `count`, as its commands reach the rights service. */
async function settled(subscriptionId, matches) {
  for (let waited = 0; ; waited += 100) {
    const rights = await rightsOf(subscriptionId);
    if (matches(rights)) return rights;
    if (waited > 10_000) throw new Error(`rights not as expected within 10 s: ${JSON.stringify(rights)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

// A monthly subscription from a minute ago: this month's basic right is issued within seconds.
// (An upgrade in the very second a right starts removes that right instead: it never held an
// instant, docs/api.md "Plan changes".)
const start = new Date(Date.now() - 60_000).toISOString().replace(/\.\d{3}Z$/, 'Z');
const subscription = ok(
  await grantor.POST('/id/users/{connectId}/subs', {
    params: { path: user },
    body: { grantorId, timeSpec: `R/${start}/P1M`, rightsSpec: [{ sku: basic }] },
  }),
);
const path = { connectId, subscriptionId: subscription.subscriptionId };
report({ subscribed: subscription.subscriptionId, rights: await settled(path.subscriptionId, (r) => r.length === 1) });

// Upgrade now: basic ends this second, premium runs to the end of the month.
const upgraded = ok(
  await grantor.POST('/id/users/{connectId}/subs/{subscriptionId}/change', {
    params: { path },
    body: { rightsSpec: [{ sku: premium }], at: 'now' },
  }),
);
const afterUpgrade = await settled(path.subscriptionId, (r) => r.length === 2 && r.some((x) => x.state === 'EXPIRED'));
report({
  upgraded: upgraded.rightsSpec.map((t) => t.sku),
  rights: afterUpgrade.map(({ sku, state }) => ({ sku, state })),
});

// Downgrade from next month: pending until then; this month's premium right stays.
const downgraded = ok(
  await grantor.POST('/id/users/{connectId}/subs/{subscriptionId}/change', {
    params: { path },
    body: { rightsSpec: [{ sku: basic }], at: 'next-period' },
  }),
);
report({
  plan: downgraded.rightsSpec.map((t) => t.sku),
  pending: downgraded.pendingChange.rightsSpec.map((t) => t.sku),
  from: downgraded.pendingChange.effectiveAt,
});
