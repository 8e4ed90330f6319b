// `npm run bench:renewal`: how fast N subscriptions that fall due at the same instant are
// renewed (issue: subscriptions and the scheduler). Subscriptions are monthly and start
// just ahead of now, so all of their first periods come due together; the clock runs from
// that instant until every right has been published on rights.events (so it exists) and
// every subscription.renewed event too. N defaults to 10,000 (BENCH_RENEWALS).
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const { provideTestServers, TestSystem, EventCollector } = require(path.join(root, 'libs/testing/dist/index.js'));

const N = Number(process.env.BENCH_RENEWALS ?? 10_000);
const PARALLEL = 8;

const servers = await provideTestServers();
process.env.MONGODB_URL = servers.mongoUrl;
process.env.AMQP_URL = servers.amqpUrl;
process.env.RABBITMQ_MANAGEMENT_URL = servers.managementUrl;
const system = await TestSystem.start({
  name: 'bench_renewal',
  backends: ['catalog', 'rights', 'subscriptions', 'scheduler'],
  env: { LOG_LEVEL: 'warn', RATE_LIMIT_PER_SECOND: '0', SCHEDULER_TICK_MS: '200' },
});
// Interrupted (Ctrl-C, timeout): stop the services too, or they keep loading the servers.
for (const signal of ['SIGINT', 'SIGTERM'])
  process.once(signal, () => void system.stop().finally(() => process.exit(130)));
try {
  await system.seed({
    clients: [{ clientId: 'bench-grantor', grantorId: 'B' }],
    users: ['bench-user'],
    skus: { monthly: {} },
  });
  const authorization = TestSystem.clientAuthorization('bench-grantor');
  const rights = await EventCollector.start(system.amqpUrl, 'rights.events', 'right.created');
  const renewed = await EventCollector.start(system.amqpUrl, 'subscriptions.events', 'subscription.renewed');

  // Creating N subscriptions takes a while here: start them after that, all at the same second.
  const createRate = 60; // subscriptions per second this machine manages, with margin
  const due = new Date(Math.ceil((Date.now() + 10_000 + (N / createRate) * 1000) / 1000) * 1000);
  const body = JSON.stringify({
    grantorId: 'B',
    timeSpec: `R/${due.toISOString().replace(/\.000Z$/, 'Z')}/P1M`,
    rightsSpec: [{ sku: 'monthly' }],
  });
  let next = 0;
  const createdAt = Date.now();
  await Promise.all(
    Array.from({ length: PARALLEL }, async () => {
      while (next < N) {
        next += 1;
        const response = await fetch(`${system.gatewayUrl}/id/users/bench-user/subs`, {
          method: 'POST',
          headers: { authorization, 'content-type': 'application/json' },
          body,
        });
        if (response.status !== 201) throw new Error(`create: ${response.status} ${await response.text()}`);
      }
    }),
  );
  const creating = (Date.now() - createdAt) / 1000;
  if (Date.now() >= due.getTime())
    throw new Error(`creating ${N} subscriptions took past the due time; lower BENCH_RENEWALS`);
  console.log(
    `created ${N} subscriptions in ${creating.toFixed(1)} s (${(N / creating).toFixed(0)}/s); due at ${due.toISOString()}`,
  );

  await rights.waitFor((messages) => messages.length >= N && renewed.messages.length >= N, 3_600_000);
  const seconds = (Date.now() - due.getTime()) / 1000;
  console.log(`\n| N | from due to last right and event published | renewals/s |`);
  console.log(`|---:|---:|---:|`);
  console.log(`| ${N} | ${seconds.toFixed(1)} s | ${(N / seconds).toFixed(1)} |`);
  await rights.close();
  await renewed.close();
} finally {
  await system.stop();
  await servers.stop();
}
