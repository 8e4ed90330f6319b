// `npm run bench:console`: the console and the audit log (docs/console.md, docs/audit.md), on the
// services as real processes, staff signed in at the development OpenID Provider.
// - The user page of a user holding BENCH_CONSOLE_RIGHTS rights (default 1,000) and 50
//   subscriptions: from "Find" to the first page of each list and the entitlements shown, in
//   Debian's Chromium, BENCH_CONSOLE_VIEWS times (default 5); its median and slowest (promise:
//   within 1.5 s), and the console's script gzipped (promise: 200 KB at most).
// - What recording costs a write: adjustments by an acme write agent (Bearer, audited) against
//   the same adjustments by acme's own API client (Basic, not audited), BENCH_CONSOLE_WRITES of
//   each (default 1,500), 16 at a time, in the order A, B, B, A; the ratio of their mean throughputs
//   (promise: the audited at least 0.9 of the other; it carries the Bearer check too).
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { chromium } from 'playwright-core';
import { gatewayCaller, pooled, startBenchSystem, TestSystem } from './system.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const RIGHTS = Number(process.env.BENCH_CONSOLE_RIGHTS ?? 1_000);
const SUBSCRIPTIONS = 50;
const VIEWS = Number(process.env.BENCH_CONSOLE_VIEWS ?? 5);
const WRITES = Number(process.env.BENCH_CONSOLE_WRITES ?? 1_500);
const AT_ONCE = 16;
// The development provider's staff roles, as `npm start` gives the gateway its entry.
const { DEV_STAFF: STAFF } = createRequire(import.meta.url)(path.join(root, 'tools/dev-issuer/dist/policy.js'));

const { freePort, startDevIssuer } = await import(path.join(root, 'libs/testing/dist/index.js'));
const issuerUrl = `http://127.0.0.1:${await freePort()}`;
const { system, stop } = await startBenchSystem({
  name: 'bench_console',
  backends: ['catalog', 'rights', 'subscriptions'],
  env: {
    AUTH_ISSUERS: JSON.stringify([
      { issuer: issuerUrl, audience: 'rights-api', claims: { roles: 'roles' }, clients: '*', staff: STAFF },
    ]),
    CONSOLE_ISSUER: issuerUrl,
  },
});
const issuer = await startDevIssuer(issuerUrl, `${system.gatewayUrl}/console`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const ACME = TestSystem.clientAuthorization('acme');

const call = gatewayCaller(system.gatewayUrl);

let browser;
try {
  await system.seed({
    clients: [{ clientId: 'acme', grantorId: 'acme' }],
    users: ['heavy'],
    skus: { calls: { grantorIds: ['acme'] }, video: {} },
  });
  const start = new Date(Date.now() - 60_000).toISOString().replace(/\.\d{3}Z$/, 'Z');
  const rightIds = [];
  await pooled(RIGHTS, AT_ONCE, async () => {
    const right = await call('POST', '/id/users/heavy/rights', ACME, {
      sku: 'calls',
      grantorId: 'acme',
      state: 'ACTIVE',
      timeInterval: `${start}/P30D`,
      quantity: 1_000_000,
    });
    rightIds.push(right.rightId);
  });
  await pooled(SUBSCRIPTIONS, AT_ONCE, () =>
    call('POST', '/id/users/heavy/subs', ACME, {
      grantorId: 'acme',
      timeSpec: 'R/2030-01-01T00:00:00Z/P1M',
      rightsSpec: [{ sku: 'video' }],
    }),
  );
  console.log(`user heavy: ${RIGHTS} rights, ${SUBSCRIPTIONS} subscriptions`);

  // The gateway reaches the provider a few seconds after its start at worst.
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  let token = null;
  page.on('request', (request) => {
    const authorization = request.headers()['authorization'];
    if (authorization?.startsWith('Bearer ')) token = authorization;
  });
  // The gateway retries a provider it could not reach at its start: until then its tokens are 503.
  const { access_token: probe } = await (
    await fetch(`${issuerUrl}/dev/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ user: 'heavy', client: 'acme', scope: 'id.user.right.read' }),
    })
  ).json();
  for (let attempt = 0; ; attempt++) {
    const answer = await fetch(`${system.gatewayUrl}/id/users/heavy`, {
      headers: { authorization: `Bearer ${probe}` },
    });
    if (answer.status !== 503) break;
    if (attempt > 60) throw new Error('the gateway never reached the provider');
    await sleep(500);
  }
  await page.goto(`${system.gatewayUrl}/console`);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL((url) => url.origin === issuerUrl);
  await page.locator('input[name="login"]').fill('acme-agent');
  await page.locator('input[name="password"]').fill('any');
  await page.locator('button[type="submit"]').click();
  await page.locator('button[type="submit"]').click();
  await page.waitForURL((url) => url.origin === system.gatewayUrl);
  await page.getByRole('heading', { name: 'Find a user' }).waitFor();

  const views = [];
  for (let i = 0; i < VIEWS; i++) {
    await page.evaluate("location.hash = '#/'");
    await page.getByLabel('User (connectId)').fill('heavy');
    const begun = performance.now();
    await page.getByRole('button', { name: 'Find' }).click();
    await page.locator('tr[data-right]').nth(49).waitFor();
    await page.locator('tr[data-subscription]').nth(49).waitFor();
    await page.locator('tr[data-sku="calls"]').waitFor();
    views.push(performance.now() - begun);
  }
  const manifest = JSON.parse(readFileSync(path.join(root, 'apps/console/dist/manifest.json'), 'utf8'));
  const script = readFileSync(path.join(root, 'apps/console/dist/assets', manifest.script));
  console.log(
    `user page of ${RIGHTS} rights and ${SUBSCRIPTIONS} subscriptions, interactive: median ${median(views).toFixed(0)} ms, ` +
      `slowest ${Math.max(...views).toFixed(0)} ms (promise: within 1,500 ms); script ${(gzipSync(script).length / 1024).toFixed(1)} KB gzipped (promise: 200 KB at most)`,
  );

  // Writes: the same adjustments, audited (staff) or not (the grantor's client).
  const writers = {
    'staff (Bearer, audited)': { authorization: token, headers: { 'x-audit-reason': 'bench' } },
    'client (Basic, not audited)': { authorization: ACME, headers: {} },
  };
  const rates = Object.fromEntries(Object.keys(writers).map((name) => [name, []]));
  // Alternated A, B, B, A: the database's writes get slower as the run goes on, and the order
  // alone made the later writer look up to a third slower.
  const order = [...Object.entries(writers), ...Object.entries(writers).reverse()];
  for (const [name, { authorization, headers }] of order) {
    const ms = await pooled(WRITES, AT_ONCE, (i) =>
      call(
        'POST',
        `/id/users/heavy/rights/${rightIds[i % rightIds.length]}/adjustments`,
        authorization,
        { amount: 1 },
        headers,
      ),
    );
    rates[name].push((WRITES / ms) * 1000);
  }
  // The mean of each writer's two runs: in A, B, B, A the slowing cancels out.
  const mean = (name) => rates[name].reduce((sum, rate) => sum + rate, 0) / rates[name].length;
  for (const name of Object.keys(writers))
    console.log(
      `adjustments, ${name}: ${mean(name).toFixed(0)}/s (${rates[name].map((rate) => rate.toFixed(0)).join(', ')})`,
    );
  console.log(
    `audited ÷ not audited: ${(mean('staff (Bearer, audited)') / mean('client (Basic, not audited)')).toFixed(2)} (promise: at least 0.90)`,
  );
} finally {
  await browser?.close();
  issuer.stop();
  await stop();
}
