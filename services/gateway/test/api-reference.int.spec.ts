import { existsSync } from 'node:fs';
import { ROUTES, type PublicRoute } from '@rs/contracts';
import { systemFixture } from '@rs/testing';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// GET /docs in a real browser: Debian's Chromium (deploy/local/setup.sh) driven
// by playwright-core.
const CHROMIUM = '/usr/bin/chromium';
const fx = systemFixture({ name: 'api_reference', backends: ['catalog'] });
let browser: Browser;
beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run deploy/local/setup.sh`);
  await fx.start();
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
});
afterAll(async () => {
  await browser?.close();
  await fx.stop();
});

/** Swagger UI's element id of an operation. */
const blockOf = (route: PublicRoute) => `operations-${route.tag}-${route.operationId}`;

describe('the API reference page (GET /docs, and GET / to it)', () => {
  it('when the gateway itself is opened in a browser without credentials, then it lands on the page, which shows every operation of the route table, from files the gateway serves', async () => {
    const page = await browser.newPage();
    const requested: string[] = [];
    page.on('request', (request) => requested.push(request.url()));
    const failed: string[] = [];
    page.on('requestfailed', (request) => failed.push(request.url()));
    const refusedByPolicy: string[] = [];
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) refusedByPolicy.push(message.text());
    });
    const answer = await page.goto(`${fx.system.gatewayUrl}/`);
    expect(answer?.status()).toBe(200);
    expect(page.url()).toBe(`${fx.system.gatewayUrl}/docs`);
    expect(answer?.headers()['content-security-policy']).toMatch(/frame-ancestors 'none'/);
    expect(answer?.headers()['x-content-type-options']).toBe('nosniff');
    await page.waitForSelector('.opblock', { timeout: 30_000 });
    const shown = await page.$$eval('.opblock', (blocks) => blocks.map((block) => block.id));
    expect(shown.sort()).toEqual((ROUTES as readonly PublicRoute[]).map(blockOf).sort());
    // Nothing from a CDN: every file came from the gateway.
    expect(requested.filter((url) => !url.startsWith(fx.system.gatewayUrl))).toEqual([]);
    expect(failed).toEqual([]);
    // The page's own policy lets it do all it does.
    expect(refusedByPolicy).toEqual([]);
    await page.close();
  });

  it('when an HTML error page is answered, then it may load nothing, be framed nowhere and not be sniffed', async () => {
    for (const path of ['/no-such-page', '/id/users/alice']) {
      const answer = await fetch(`${fx.system.gatewayUrl}${path}`);
      expect(answer.headers.get('content-type'), path).toMatch(/^text\/html/);
      expect(answer.headers.get('content-security-policy'), path).toBe(
        "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
      );
      expect(answer.headers.get('x-content-type-options'), path).toBe('nosniff');
    }
  });

  it('when an operation is tried out from the page, then the request reaches this gateway and its answer is shown', async () => {
    const page = await browser.newPage();
    await page.goto(`${fx.system.gatewayUrl}/docs`);
    const route = (ROUTES as readonly PublicRoute[]).find((entry) => entry.operationId === 'getOpenApi')!;
    const block = page.locator(`#${blockOf(route)}`);
    await block.locator('.opblock-summary').first().click();
    await block.locator('.try-out__btn').click();
    const sent = page.waitForRequest((request) => request.url() === `${fx.system.gatewayUrl}/openapi.json`);
    await block.locator('.execute').click();
    await sent;
    await expect
      .poll(() => block.locator('.live-responses-table tbody .response-col_status').first().textContent())
      .toMatch(/200/);
    await page.close();
  });

  it('when an asset the page does not have is asked for, then 404', async () => {
    expect((await fetch(`${fx.system.gatewayUrl}/docs/index.html`)).status).toBe(404);
    expect((await fetch(`${fx.system.gatewayUrl}/docs/swagger-ui.css`)).headers.get('content-type')).toMatch(
      /^text\/css/,
    );
  });
});
