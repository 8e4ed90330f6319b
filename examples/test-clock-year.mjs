// A year of a monthly subscription rehearsed in seconds on a test clock (docs/api.md "Test clocks"):
//   node examples/test-clock-year.mjs <connectId> <sku> <grantorId>
// The grantor (CLIENT_ID / CLIENT_SECRET) sets a clock of its own at 1 January 2026, subscribes
// the user on it monthly, advances it a year and waits until it is ready: by then every month
// has been renewed and every month but the last has expired, exactly as a year of real time
// would have done it. It checks the user's entitlement at the clock's time, then deletes the
// clock, which takes the subscription and its rights along. Needs test clocks on (the
// scheduler's TEST_CLOCKS_MAX, 10 by default, not 0).
import { createPlatformClient, ok } from '@rs/client';
import { baseUrl, credentials, report } from './config.mjs';

const [connectId, sku, grantorId] = process.argv.slice(2);
if (!connectId || !sku || !grantorId) throw new Error('usage: test-clock-year.mjs <connectId> <sku> <grantorId>');
const grantor = createPlatformClient({ baseUrl, credentials: credentials('CLIENT') });
const user = { connectId };

const clock = ok(await grantor.POST('/clocks', { body: { grantorId, time: '2026-01-01T00:00:00Z' } }));
const { clockId } = clock;
const subscription = ok(
  await grantor.POST('/id/users/{connectId}/subs', {
    params: { path: user },
    body: { grantorId, timeSpec: 'R/2026-01-01T00:00:00Z/P1M', rightsSpec: [{ sku }], clockId },
  }),
);
report({ clock: clockId, time: clock.time, subscribed: subscription.subscriptionId });

/** Waits until the clock is ready (everything due up to its time has happened). */
async function ready() {
  for (let waited = 0; ; waited += 200) {
    const now = ok(await grantor.GET('/clocks/{clockId}', { params: { path: { clockId } } }));
    if (now.status === 'ready') return now;
    if (waited > 120_000) throw new Error(`clock ${clockId} not ready within 2 minutes: ${JSON.stringify(now)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** The subscription's rights: their months and states. */
async function rightsOf() {
  const { right } = ok(
    await grantor.GET('/id/users/{connectId}/rights', { params: { path: user, query: { grantorId, limit: 100 } } }),
  );
  return right
    .filter((r) => r.clockId === clockId)
    .map((r) => ({ from: r.timeInterval.split('/')[0], state: r.state }))
    .sort((a, b) => a.from.localeCompare(b.from));
}

// The first month starts at the clock's time: issued without an advance.
await ready();
ok(
  await grantor.POST('/clocks/{clockId}/advance', {
    params: { path: { clockId } },
    body: { to: '2027-01-01T00:00:00Z' },
  }),
);
const year = await ready();
const rights = await rightsOf();
report({
  time: year.time,
  rights: rights.length,
  expired: rights.filter((r) => r.state === 'EXPIRED').length,
  active: rights.filter((r) => r.state === 'ACTIVE').map((r) => r.from),
});

// The check counts the rights on the clock only when the clock is named, at its time: a
// rehearsal never entitles the user in real time.
const checkOn = async (query) =>
  ok(await grantor.GET('/id/users/{connectId}/entitlements/{sku}', { params: { path: { connectId, sku }, query } }));
const onClock = await checkOn({ clockId });
const onRealTime = await checkOn({});
report({ entitled: onClock.entitled, until: onClock.until, entitledInRealTime: onRealTime.entitled });

// Deleting the clock takes what lives on it along.
ok(await grantor.DELETE('/clocks/{clockId}', { params: { path: { clockId } } }));
report({ deleted: clockId });
