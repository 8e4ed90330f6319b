import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import AxeBuilder from '@axe-core/playwright';
import { DEV_STAFF } from '@rs/dev-issuer';
import { clientsOf, freePort, startDevIssuer, TestSystem } from '@rs/testing';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

// docs/console.md, in a real browser (Debian's Chromium driven by playwright-core): staff sign in
// at the development OpenID Provider (authorization code with PKCE), find a user and act on
// them; the audit log shows who did what and why. axe-core checks every page. With
// CONSOLE_SCREENSHOTS=<folder> (npm run screenshots) the run also draws docs/console.md's pictures.
const CHROMIUM = '/usr/bin/chromium';
const SCREENSHOTS = process.env.CONSOLE_SCREENSHOTS;
// The development provider is the platform's own: any client but an admin, operators of every grantor.
const STAFF = DEV_STAFF;
let system: TestSystem;
let issuerUrl: string;
let browser: Browser;
let stopIssuer: () => void;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run deploy/local/setup.sh`);
  issuerUrl = `http://127.0.0.1:${await freePort()}`;
  // The gateway trusts the provider as `npm start` sets it up; it is reached once it runs.
  system = await TestSystem.start({
    name: 'console',
    backends: ['catalog', 'rights', 'subscriptions', 'webhooks'],
    env: {
      AUTH_ISSUERS: JSON.stringify([
        { issuer: issuerUrl, audience: 'rights-api', claims: { roles: 'roles' }, clients: '*', staff: STAFF },
      ]),
      CONSOLE_ISSUER: issuerUrl,
      // A delivery to the unreachable endpoint below fails for good within seconds, to be retried.
      WEBHOOK_RETRY_SCHEDULE: '1s',
    },
  });
  ({ stop: stopIssuer } = await startDevIssuer(issuerUrl, `${system.gatewayUrl}/console`));
  // The gateway retries a provider it could not reach at its start: until then its tokens are 503.
  const { access_token } = (await (
    await fetch(`${issuerUrl}/dev/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ user: 'alice', client: 'acme', scope: 'id.user.right.read' }),
    })
  ).json()) as { access_token: string };
  await vi.waitFor(
    async () =>
      expect(
        (await fetch(`${system.gatewayUrl}/id/users/alice`, { headers: { authorization: `Bearer ${access_token}` } }))
          .status,
      ).not.toBe(503),
    { timeout: 30_000, interval: 250 },
  );
  await system.seed({
    clients: clientsOf({ acme: 'acme', globex: 'globex' }),
    users: ['alice'],
    skus: { calls: { grantorIds: ['acme', 'globex'] }, news: {}, video: {} },
  });
  const acme = TestSystem.clientAuthorization('acme');
  const subscription = await fetch(`${system.gatewayUrl}/id/users/alice/subs`, {
    method: 'POST',
    headers: { authorization: acme, 'content-type': 'application/json' },
    body: JSON.stringify({ grantorId: 'acme', timeSpec: 'R/2026-01-01T00:00:00Z/P1M', rightsSpec: [{ sku: 'video' }] }),
  });
  expect(subscription.status).toBe(201);
  const endpoint = await fetch(`${system.gatewayUrl}/webhooks/endpoints`, {
    method: 'POST',
    headers: { authorization: acme, 'content-type': 'application/json' },
    body: JSON.stringify({ url: 'http://127.0.0.1:9/acme-hooks', events: ['right.*'] }),
  });
  expect(endpoint.status).toBe(201);
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
}, 180_000);
afterAll(async () => {
  await browser?.close();
  stopIssuer?.();
  await system?.stop();
});

/** The deliveries to acme's endpoint, as an admin reads them. */
async function deliveries(): Promise<Array<{ deliveryId: string; status: string; attempts: number }>> {
  const admin = system.adminHeaders();
  const { endpoints } = (await (await fetch(`${system.gatewayUrl}/webhooks/endpoints`, { headers: admin })).json()) as {
    endpoints: Array<{ endpointId: string }>;
  };
  const answer = await fetch(
    `${system.gatewayUrl}/webhooks/endpoints/${endpoints[0]!.endpointId}/deliveries?limit=100`,
    {
      headers: admin,
    },
  );
  return ((await answer.json()) as { deliveries: Array<{ deliveryId: string; status: string; attempts: number }> })
    .deliveries;
}

/** A page of a fresh browser context, every request it makes recorded. */
/** Runs `test` on a page of its own `width` px wide, closed afterwards whatever happens. */
async function inBrowser(test: (page: Page, requested: string[]) => Promise<void>, width = 1280): Promise<void> {
  const context = await browser.newContext({ viewport: { width, height: 900 } });
  try {
    const page = await context.newPage();
    // What the console's own pages ask for (the provider's sign-in pages are the provider's).
    const requested: string[] = [];
    page.on('request', (request) => {
      if (request.frame().url().startsWith(system.gatewayUrl)) requested.push(request.url());
    });
    await test(page, requested);
  } finally {
    await context.close();
  }
}

/** Signs `login` in through the provider's own pages, as a person would; back on the console. */
async function signIn(page: Page, login: string): Promise<void> {
  await page.goto(`${system.gatewayUrl}/console`);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL((url) => url.origin === issuerUrl);
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill('any password');
  await page.locator('button[type="submit"]').click();
  await page.locator('button[type="submit"]').click(); // the consent
  await page.waitForURL((url) => url.origin === system.gatewayUrl);
  await expect.poll(() => page.getByRole('heading', { name: 'Find a user' }).count()).toBe(1);
}

/** axe-core's serious and critical findings on the page as it is. */
async function accessibilityProblems(page: Page): Promise<string[]> {
  const { violations } = await new AxeBuilder({ page }).analyze();
  return violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map((violation) => `${violation.id}: ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`);
}

async function screenshot(page: Page, name: string): Promise<void> {
  if (!SCREENSHOTS) return;
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/** Asks for an action through its dialog: the fields, the reason, and the submit. */
async function act(page: Page, button: string, fields: Record<string, string>, reason: string, row?: string) {
  const scope = row ? page.locator(row) : page;
  await scope.getByRole('button', { name: button, exact: true }).first().click();
  const dialog = page.getByRole('dialog');
  for (const [label, value] of Object.entries(fields)) {
    const field = dialog.getByLabel(label);
    if ((await field.evaluate((element) => element.tagName)) === 'SELECT') await field.selectOption(value);
    else await field.fill(value);
  }
  await dialog.getByLabel('Reason (recorded in the audit log)').fill(reason);
  await dialog.locator('button[type="submit"]').click();
  await expect.poll(() => page.getByRole('dialog').count()).toBe(0);
}

/** Looks for `id` on the find page, as an agent quoted any id would. */
async function find(page: Page, id: string): Promise<void> {
  await page.getByRole('link', { name: 'Find', exact: true }).click();
  await page.getByLabel('connectId, right id or subscription id').fill(id);
  await page.getByRole('button', { name: 'Find' }).click();
}

const cellOf = (page: Page, row: string, column: number) => page.locator(`${row} td`).nth(column).innerText();

/** Waits until the page lists a row of `selector`; when it never does, the failure says what the page showed. */
async function untilListed(page: Page, selector: string): Promise<void> {
  try {
    await expect.poll(() => page.locator(selector).count()).toBeGreaterThan(0);
  } catch (error) {
    const shown = await page.locator('body').innerText();
    throw new Error(`no ${selector} at ${page.url()}; the page showed:\n${shown}`, { cause: error });
  }
}

describe('signing in (docs/console.md "Sign-in")', () => {
  it('when an agent signs in, then the console asks only for openid profile, and the session refreshes its token without an offline one', async () => {
    await inBrowser(async (page) => {
      // The page's own clock, moved on below; the provider and the gateway keep real time.
      await page.clock.install();
      const authorizations: URL[] = [];
      const grants: Array<{ grant: string; answer: Record<string, unknown> }> = [];
      page.on('request', (request) => {
        if (request.url().startsWith(`${issuerUrl}/auth?`)) authorizations.push(new URL(request.url()));
      });
      page.on('response', async (response) => {
        if (!response.url().startsWith(`${issuerUrl}/token`) || response.request().method() !== 'POST') return;
        const grant = new URLSearchParams(response.request().postData() ?? '').get('grant_type') ?? '';
        grants.push({ grant, answer: (await response.json()) as Record<string, unknown> });
      });
      await signIn(page, 'acme-agent');
      expect(authorizations.map((url) => url.searchParams.get('scope'))).toEqual(['openid profile']);
      await expect.poll(() => grants.length).toBe(1);
      expect(grants[0]!.grant).toBe('authorization_code');
      expect(grants[0]!.answer.refresh_token).toEqual(expect.any(String));
      expect(String(grants[0]!.answer.scope)).not.toContain('offline_access');
      // Five minutes on, the access token is about to expire: the page's next calls (several at
      // once) share one refresh, since the provider takes each refresh token once.
      await page.clock.fastForward('05:00');
      await find(page, 'alice');
      await expect.poll(() => page.getByRole('heading', { name: 'Subscriptions' }).count()).toBe(1);
      expect(grants.map(({ grant }) => grant)).toEqual(['authorization_code', 'refresh_token']);
      expect(grants[1]!.answer.access_token).toEqual(expect.any(String));
    });
  });

  it('when the agent cancels at the provider, then the console shows the provider’s own error', async () => {
    await inBrowser(async (page) => {
      await page.goto(`${system.gatewayUrl}/console`);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL((url) => url.origin === issuerUrl);
      await page.getByRole('link', { name: '[ Cancel ]' }).click();
      await page.waitForURL((url) => url.origin === system.gatewayUrl);
      const problem = page.getByRole('alert');
      await expect.poll(() => problem.count()).toBe(1);
      expect(await problem.innerText()).toBe(
        'The identity provider refused the sign-in (access_denied: End-User aborted interaction).',
      );
      expect(await accessibilityProblems(page)).toEqual([]);
    });
  });
});

describe('the development provider’s pages (docs/identity-providers.md "Locally")', () => {
  it('when its sign-in page is shown, then it loads nothing from another host', async () => {
    await inBrowser(async (page) => {
      const elsewhere: string[] = [];
      page.on('request', (request) => {
        const origin = new URL(request.url()).origin;
        if (origin !== issuerUrl && origin !== system.gatewayUrl) elsewhere.push(request.url());
      });
      await page.goto(`${system.gatewayUrl}/console`);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL((url) => url.origin === issuerUrl);
      await expect.poll(() => page.locator('input[name="login"]').count()).toBe(1);
      const policy = await page.evaluate<string>(
        "fetch(location.href).then((answer) => answer.headers.get('content-security-policy') ?? '')",
      );
      expect(policy).toContain("default-src 'self'");
      expect(await page.content()).not.toMatch(/https?:\/\/(?!127\.0\.0\.1)[a-z]/);
      expect(elsewhere).toEqual([]);
    });
  });
});

describe('the console (docs/console.md)', () => {
  it('when an acme write agent signs in, finds a user, grants a metered right, adjusts it, suspends it and changes a plan, then the audit page shows each with the reason and the agent', async () => {
    await inBrowser(async (page, requested) => {
      await signIn(page, 'acme-agent');
      expect(await accessibilityProblems(page)).toEqual([]);
      await screenshot(page, 'find');
      await find(page, 'alice');
      await expect.poll(() => page.getByRole('heading', { name: 'Subscriptions' }).count()).toBe(1);

      await page.getByRole('button', { name: 'Grant a right' }).click();
      const grant = page.getByRole('dialog');
      await grant.getByLabel('SKU').fill('calls');
      await grant.getByLabel('Units (empty: not metered)').fill('100');
      await grant.getByLabel('Reason (recorded in the audit log)').fill('welcome pack');
      await grant.getByRole('button', { name: 'Grant', exact: true }).click();
      await expect.poll(() => page.locator('tr[data-sku="calls"] .balance').count()).toBe(1);
      expect(await page.locator('tr[data-sku="calls"] .balance').innerText()).toBe('100');

      const row = 'tr[data-right]';
      await act(page, 'Adjust', { 'Units to add (negative: take away)': '25' }, 'goodwill after the outage', row);
      await expect.poll(() => cellOf(page, row, 3)).toBe('125 of 125');
      await act(page, 'Suspend', {}, 'fraud check', row);
      await expect.poll(() => cellOf(page, row, 1)).toBe('SUSPENDED');
      await act(page, 'Change plan', { 'New plan (SKU)': 'news' }, 'asked for the news plan', 'tr[data-subscription]');
      await expect.poll(() => cellOf(page, 'tr[data-subscription]', 3)).toBe('news');
      // One timeline of everything listed, newest first: the adjustment and the suspension among it.
      // History is written as each change's event is published, within seconds (docs/api.md), so the
      // agent reads it again until every change is there.
      const changes = ['right.created', 'right.adjusted', 'right.suspended', 'subscription.changed'];
      await page.getByRole('button', { name: 'Show the history of what is listed' }).click();
      const history = page.getByRole('table', { name: /^History of alice/ });
      const changesShown = async () => {
        const text = (await history.count()) === 1 ? await history.innerText() : '';
        const shown = changes.filter((type) => text.includes(type));
        // A click waits until the previous reading is done (the button is disabled meanwhile).
        if (shown.length < changes.length) await page.getByRole('button', { name: 'Read the history again' }).click();
        return shown;
      };
      await expect.poll(changesShown, { timeout: 15_000 }).toEqual(changes);
      const timeline = await history.innerText();
      expect(timeline).toContain('staff acme-agent');
      expect(await accessibilityProblems(page)).toEqual([]);
      await screenshot(page, 'user');

      await page.getByRole('link', { name: 'Audit log' }).click();
      await expect.poll(() => page.locator('tr[data-audit]').count()).toBeGreaterThanOrEqual(4);
      const rows = await page.locator('tr[data-audit]').allInnerTexts();
      for (const reason of ['welcome pack', 'goodwill after the outage', 'fraud check', 'asked for the news plan'])
        expect(rows.some((text) => text.includes(reason) && text.includes('Ada Agent (acme, write)'))).toBe(true);
      expect(await accessibilityProblems(page)).toEqual([]);
      await screenshot(page, 'audit');

      // The console asked nothing of anyone but the gateway and the staff's provider.
      expect(requested.filter((url) => !url.startsWith(system.gatewayUrl) && !url.startsWith(issuerUrl))).toEqual([]);
    });
  });

  it('when a read agent signs in, then no write control is shown, and a write forged with its token is refused', async () => {
    await inBrowser(async (page) => {
      const tokens: string[] = [];
      page.on('request', (request) => {
        const authorization = request.headers()['authorization'];
        if (authorization?.startsWith('Bearer ')) tokens.push(authorization);
      });
      await signIn(page, 'acme-reader');
      await page.goto(`${system.gatewayUrl}/console#/users/alice`);
      await untilListed(page, 'tr[data-right]');
      expect(await page.getByRole('button', { name: /Grant|Adjust|Suspend|Activate|Change plan/ }).count()).toBe(0);
      const rightId = await page.locator('tr[data-right]').first().getAttribute('data-right');
      // Quoted only the right's id, the agent finds its user.
      await find(page, rightId!);
      await expect.poll(() => page.url()).toBe(`${system.gatewayUrl}/console#/users/alice`);
      const forged = await fetch(`${system.gatewayUrl}/id/users/alice/rights/${rightId}/activate`, {
        method: 'POST',
        headers: { authorization: tokens.at(-1)!, 'x-audit-reason': 'forged' },
      });
      expect(forged.status).toBe(401);
      expect(await accessibilityProblems(page)).toEqual([]);
    });
  });

  it('when an agent of another grantor looks for the same user, then nothing of acme’s is there for them', async () => {
    await inBrowser(async (page) => {
      await signIn(page, 'globex-agent');
      // acme's right and subscription of alice, by their ids: not there for globex.
      const acme = TestSystem.clientAuthorization('acme');
      const listed = async (path: string) =>
        (await (await fetch(`${system.gatewayUrl}${path}`, { headers: { authorization: acme } })).json()) as Record<
          string,
          Array<{ rightId?: string; subscriptionId?: string }>
        >;
      const rightId = (await listed('/id/users/alice/rights?grantorId=acme')).right![0]!.rightId!;
      const subscriptionId = (await listed('/id/users/alice/subs?grantorid=acme')).subscription![0]!.subscriptionId!;
      for (const id of [rightId, subscriptionId]) {
        await find(page, id);
        await expect.poll(() => page.getByText(`Nothing you may see has the id ${id}.`).count()).toBe(1);
      }
      await page.goto(`${system.gatewayUrl}/console#/users/alice`);
      await expect.poll(() => page.getByRole('heading', { name: 'Subscriptions' }).count()).toBe(1);
      await expect.poll(() => page.getByText('No active right.').count()).toBe(1);
      expect(await page.locator('tr[data-right]').count()).toBe(0);
      expect(await page.locator('tr[data-subscription]').count()).toBe(0);
    });
  });

  it('when the user page is opened on a phone 390 px wide, then nothing overflows the screen and every control is reachable', async () => {
    await inBrowser(async (page) => {
      await signIn(page, 'operator');
      await page.goto(`${system.gatewayUrl}/console#/users/alice`);
      await untilListed(page, 'tr[data-right]');
      // In the page (a string: the tests are typed for Node, not the DOM).
      const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
      expect(overflow).toBeLessThanOrEqual(0);
      expect(await accessibilityProblems(page)).toEqual([]);
      await screenshot(page, 'user-phone');
    }, 390);
  });

  it('when an operator signs in, then the catalog, API clients and webhooks pages show what an admin sees', async () => {
    await inBrowser(async (page) => {
      await signIn(page, 'operator');
      for (const [link, row, name] of [
        ['Catalog', 'tr[data-sku="calls"]', 'catalog'],
        ['API clients', 'tr[data-client="acme"]', 'clients'],
        ['Webhooks', 'tr[data-endpoint]', 'webhooks'],
      ] as const) {
        await page.getByRole('link', { name: link, exact: true }).click();
        await expect.poll(() => page.locator(row).count(), { message: link }).toBeGreaterThan(0);
        expect(await accessibilityProblems(page), link).toEqual([]);
        await screenshot(page, name);
      }
      // A delivery to the unreachable endpoint has failed for good: the operator sends it again.
      const failed = await vi.waitFor(
        async () => {
          const found = (await deliveries()).find((delivery) => delivery.status === 'failed');
          expect(found).toBeDefined();
          return found!;
        },
        { timeout: 30_000, interval: 500 },
      );
      await page.getByRole('button', { name: 'Deliveries' }).click();
      await expect.poll(() => page.getByRole('heading', { name: 'Deliveries' }).count()).toBe(1);
      expect(await accessibilityProblems(page)).toEqual([]);
      const row = `tr[data-delivery="${failed.deliveryId}"]`;
      await act(page, 'Retry', {}, 'the receiver is back', row);
      await expect
        .poll(async () => (await deliveries()).find((delivery) => delivery.deliveryId === failed.deliveryId)!.attempts)
        .toBeGreaterThan(failed.attempts);
      await page.getByRole('link', { name: 'Audit log' }).click();
      await expect
        .poll(async () =>
          (await page.locator('tr[data-audit]').allInnerTexts()).some((text) => text.includes('the receiver is back')),
        )
        .toBe(true);
    });
  });

  it('when a staff member who is not an admin signs in, then the admin pages are not offered', async () => {
    await inBrowser(async (page) => {
      await signIn(page, 'acme-reader');
      expect(await page.getByRole('link', { name: 'Catalog' }).count()).toBe(0);
      expect(await page.getByRole('link', { name: 'API clients' }).count()).toBe(0);
    });
  });

  it('when the page is served, then its policy allows no inline script and no framing, and its files are named by their content', async () => {
    const answer = await fetch(`${system.gatewayUrl}/console`);
    expect(answer.status).toBe(200);
    const policy = answer.headers.get('content-security-policy')!;
    expect(policy).toContain("script-src 'self'");
    expect(policy).not.toContain('unsafe-inline');
    expect(policy).toContain("frame-ancestors 'none'");
    expect(policy).toContain(`connect-src 'self' ${issuerUrl}`);
    const html = await answer.text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)/);
    const [script] = /\/console\/assets\/console-[A-Z0-9]+\.js/.exec(html)!;
    const asset = await fetch(`${system.gatewayUrl}${script}`);
    expect(asset.headers.get('cache-control')).toContain('immutable');
    expect((await fetch(`${system.gatewayUrl}/console/assets/console-NOPE.js`)).status).toBe(404);
  });
});
