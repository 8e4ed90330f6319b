// A grantor importing its users and their subscriptions in bulk:
//   node examples/bulk-import.mjs import.json
// where import.json is {"grantorId": "…", "users": [{"connectId": "…", "subscriptions": [{timeSpec, rightsSpec}]}]}.
// Users are registered with the admin credentials (ADMIN_ID/ADMIN_SECRET), subscriptions created
// with the grantor's (CLIENT_ID/CLIENT_SECRET), eight requests at a time. Each create carries an
// Idempotency-Key derived from the file and the line, so running the import again (after a crash,
// a timeout) creates nothing twice; a 429 is waited out as its Retry-After says and sent again.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createPlatformClient, ok } from '@rs/client';
import { baseUrl, credentials, report } from './config.mjs';

const file = process.argv[2];
if (!file) throw new Error('usage: bulk-import.mjs <import.json>');
const text = readFileSync(file, 'utf8');
const { grantorId, users } = JSON.parse(text);
const batch = createHash('sha256').update(text).digest('hex').slice(0, 16);
const admin = createPlatformClient({ baseUrl, credentials: credentials('ADMIN') });
const grantor = createPlatformClient({ baseUrl, credentials: credentials() });
const counts = { users: 0, created: 0, replayed: 0, waitedOn429: 0 };

/** Sends `call` until it is not a 429, waiting what each 429's Retry-After says. */
async function honouringRetryAfter(call) {
  for (;;) {
    const result = await call();
    if (result.response.status !== 429) return result;
    counts.waitedOn429 += 1;
    const seconds = Number(result.response.headers.get('retry-after') ?? 1);
    await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  }
}

/** Runs `work` on every item, `concurrency` at a time. */
async function eachAtOnce(items, concurrency, work) {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await work(items[next], next++);
    }),
  );
}

await eachAtOnce(users, 8, async ({ connectId }) => {
  ok(await honouringRetryAfter(() => admin.PUT('/id/users/{connectId}', { params: { path: { connectId } } })));
  counts.users += 1;
});
const subscriptions = users.flatMap(({ connectId, subscriptions = [] }) =>
  subscriptions.map((subscription, i) => ({ connectId, subscription, key: `import-${batch}-${connectId}-${i}` })),
);
await eachAtOnce(subscriptions, 8, async ({ connectId, subscription, key }) => {
  const result = await honouringRetryAfter(() =>
    grantor.POST('/id/users/{connectId}/subs', {
      params: { path: { connectId }, header: { 'Idempotency-Key': key } },
      body: { grantorId, ...subscription },
    }),
  );
  ok(result);
  if (result.response.headers.get('idempotent-replayed') === 'true') counts.replayed += 1;
  else counts.created += 1;
});
report(counts);
