import http from 'node:http';
import { ROUTES, SCOPES, type PublicRoute } from '@rs/contracts';
import { systemFixture, TestSystem } from '@rs/testing';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * A property test of the edge, derived from the route table (docs/api.md): for every
 * operation, variants of its path and hostile callers. Variants never reach anything; hostile
 * callers never get a 2xx for what they may not do; nothing answers 5xx; nothing changes.
 */
const fx = systemFixture({
  name: 'gateway_edge_routes',
  backends: ['catalog', 'rights', 'subscriptions', 'webhooks', 'scheduler'],
  env: { TEST_CLOCKS_MAX: '1' },
  bearer: true,
  seed: {
    clients: [
      { clientId: 'owner', grantorId: 'A' },
      { clientId: 'intruder', grantorId: 'B' },
    ],
    users: ['victim', 'other'],
    skus: { news: {} },
  },
});

const OWNER = TestSystem.clientAuthorization('owner');
const INTRUDER = TestSystem.clientAuthorization('intruder');
const params: Record<string, string> = { connectId: 'victim', clientId: 'owner', sku: 'news', jti: 'some-jti' };
let callers: Record<'anonymous' | 'intruder' | 'bearerOfAnotherUser' | 'bearerOfAnotherClient' | 'admin', string>;

beforeAll(async () => {
  await fx.start();
  const start = new Date(Date.now() - 60_000).toISOString().replace(/\.\d{3}Z$/, 'Z');
  const right = await fx.call('POST', '/id/users/victim/rights', OWNER, {
    sku: 'news',
    grantorId: 'A',
    timeInterval: `${start}/P1D`,
    state: 'ACTIVE',
  });
  params.rightId = ((await right.json()) as { rightId: string }).rightId;
  // Starting later: the scheduler (there for the clocks) renews nothing while the test runs.
  const sub = await fx.call('POST', '/id/users/victim/subs', OWNER, {
    grantorId: 'A',
    timeSpec: 'R/2030-01-01T00:00:00Z/P1D',
    rightsSpec: [{ sku: 'news' }],
  });
  params.subscriptionId = ((await sub.json()) as { subscriptionId: string }).subscriptionId;
  const endpoint = await fx.call('POST', '/webhooks/endpoints', OWNER, { url: 'http://127.0.0.1:9/hook' });
  params.endpointId = ((await endpoint.json()) as { endpointId: string }).endpointId;
  params.deliveryId = 'D0';
  const clock = await fx.call('POST', '/clocks', OWNER, { grantorId: 'A', time: '2027-01-01T00:00:00Z' });
  params.clockId = ((await clock.json()) as { clockId: string }).clockId;
  callers = {
    anonymous: '',
    intruder: INTRUDER,
    bearerOfAnotherUser: `Bearer ${await fx.issuer.token('owner', 'other', { scope: SCOPES.join(' ') })}`,
    // The victim's own app, but of another grantor's client: the user is right, the grantor is not.
    bearerOfAnotherClient: `Bearer ${await fx.issuer.token('intruder', 'victim', { scope: SCOPES.join(' ') })}`,
    admin: fx.system.adminHeaders().authorization!,
  };
}, 180_000);
afterAll(fx.stop);

const pathOf = (route: PublicRoute) => route.path.replace(/\{([^}]+)\}/g, (_, name: string) => params[name]!);
const BODIES: Record<string, unknown> = {
  putClient: { secret: 'taken-over-0123', grantorId: 'B', admin: true },
  createRight: { sku: 'news', grantorId: 'A', timeInterval: '2026-01-01T00:00:00Z/P1D' },
  createSubscription: { grantorId: 'A', timeSpec: 'R/2030-01-01T00:00:00Z/P1D', rightsSpec: [{ sku: 'news' }] },
  putSku: { name: 'taken' },
  createWebhookEndpoint: { url: 'http://127.0.0.1:9/intruder' },
  revokeToken: {},
};
/**
 * Sends the path exactly as written (node:http; fetch would resolve dot segments first, as
 * a browser does, but an attacker's client need not). Resolves to the status.
 */
const send = (method: string, path: string, authorization: string, operationId: string) =>
  new Promise<number>((resolve, reject) => {
    const body =
      BODIES[operationId] && method !== 'GET' && method !== 'HEAD' ? JSON.stringify(BODIES[operationId]) : '';
    const gateway = new URL(fx.system.gatewayUrl);
    const request = http.request(
      {
        host: gateway.hostname,
        port: gateway.port,
        method,
        path,
        headers: {
          ...(authorization ? { authorization } : {}),
          ...(body ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : {}),
        },
      },
      (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode!));
      },
    );
    request.on('error', reject);
    request.end(body);
  });

/** What the grantor A and the admins own, as the admin reads it: it must not change. */
async function state(): Promise<string> {
  const read = async (path: string) => {
    const response = await fx.call('GET', path, callers.admin);
    return [path, response.status, await response.text()] as const;
  };
  const endpoints = (await (await fx.call('GET', '/webhooks/endpoints', callers.admin)).json()) as {
    endpoints: Array<{ endpointId: string; url: string }>;
  };
  return JSON.stringify([
    await read('/admin/clients'),
    await read('/id/users/victim'),
    await read('/id/users/other'),
    await read('/id/users/victim/rights?grantorId=A'),
    await read('/id/users/victim/subs?grantorid=A'),
    await read(`/id/users/victim/rights/${params.rightId}/history`),
    await read(`/id/users/victim/subs/${params.subscriptionId}/history`),
    await read('/catalog/skus'),
    await read(`/clocks/${params.clockId}`),
    endpoints.endpoints.filter((endpoint) => !endpoint.url.endsWith('/intruder')),
  ]).replace(/"updatedAt":"[^"]+"/g, '');
}

/** Variants of a path that name another path: literal segments changed as an attacker would. */
const variant = (route: PublicRoute) => {
  const segments = pathOf(route).split('/');
  const literals = route.path
    .split('/')
    .map((segment, i) => (segment !== '' && !segment.startsWith('{') ? i : -1))
    .filter((i) => i >= 0);
  return fc
    .record({
      at: fc.constantFrom(...literals),
      kind: fc.constantFrom(
        'upper',
        'first-upper',
        'encoded-letter',
        'trailing-slash',
        'doubled-slash',
        'dot',
        'dot-dot',
      ),
    })
    .map(({ at, kind }) => {
      const changed = [...segments];
      const literal = changed[at]!;
      const letter = [...literal].findIndex((char) => /[a-z]/.test(char));
      switch (kind) {
        case 'upper':
          changed[at] = literal.toUpperCase();
          break;
        case 'first-upper':
          changed[at] = literal.slice(0, letter) + literal[letter]!.toUpperCase() + literal.slice(letter + 1);
          break;
        case 'encoded-letter':
          changed[at] =
            literal.slice(0, letter) + `%${literal.charCodeAt(letter).toString(16)}` + literal.slice(letter + 1);
          break;
        case 'trailing-slash':
          return `${changed.join('/')}/`;
        case 'doubled-slash':
          changed[at] = `/${literal}`;
          break;
        case 'dot':
          changed[at] = `./${literal}`;
          break;
        case 'dot-dot':
          changed[at] = `x/../${literal}`;
          break;
      }
      return changed.join('/');
    });
};
const routeArb = fc.constantFrom(...(ROUTES as readonly PublicRoute[]));
const callerArb = fc.constantFrom(
  'anonymous',
  'intruder',
  'bearerOfAnotherUser',
  'bearerOfAnotherClient',
  'admin' as const,
);

/** Operations a caller may perform: any of the hostile callers of this test, on A's resources. */
function mayPerform(caller: keyof typeof callers, route: PublicRoute): boolean {
  if (route.caller === 'none') return true;
  // Any caller with credentials is told who it is, and nothing of anyone else.
  if (route.operationId === 'getMe') return caller !== 'anonymous';
  // The user's app of another grantor reads its user and checks entitlements (seeing none of A's rights).
  if (caller === 'bearerOfAnotherClient')
    return ['getUser', 'checkEntitlement', 'listEntitlements'].includes(route.operationId);
  if (caller !== 'intruder') return false;
  // Any client reads a user and checks an entitlement (seeing only the rights its grantor may
  // read: none of A's, entitlements.e2e.spec.ts); a client manages its own grantor's webhook
  // endpoints and test clocks.
  return [
    'getUser',
    'checkEntitlement',
    'listEntitlements',
    'listWebhookEndpoints',
    'createWebhookEndpoint',
    'listClocks',
    'createClock',
  ].includes(route.operationId);
}

describe('the edge, derived from the route table', () => {
  it('when an operation is called by a variant of its path, as anyone, then it is 404, 405 or 400, and nothing changes', async () => {
    // The setup's changes are in history once their events are published (docs/api.md): the
    // state compared below is taken after that, so that only the test's requests could change it.
    for (const history of [`rights/${params.rightId}`, `subs/${params.subscriptionId}`])
      await expect
        .poll(
          async () =>
            (await (await fx.call('GET', `/id/users/victim/${history}/history`, callers.admin)).json()) as object,
        )
        .toMatchObject({ history: [expect.anything()] });
    const before = await state();
    await fc.assert(
      fc.asyncProperty(
        // A path with a literal segment to vary (`/` has none).
        routeArb.filter((route) => route.path !== '/').chain((route) => fc.tuple(fc.constant(route), variant(route))),
        callerArb,
        fc.constantFrom('GET', 'PUT', 'POST', 'DELETE', 'HEAD'),
        async ([route, path], caller, method) => {
          const status = await send(method, path, callers[caller], route.operationId);
          expect([400, 404, 405], `${caller} ${method} ${path}`).toContain(status);
        },
      ),
      { numRuns: 300 },
    );
    expect(await state()).toBe(before);
  });

  it("when every operation is called by every caller that may not perform it, then never a 2xx, never a 5xx, another client's token finds none of A's objects, and nothing changes", async () => {
    const before = await state();
    // Admins may do anything (a replaced client, a deleted user): they are left out here.
    const hostile = ['anonymous', 'intruder', 'bearerOfAnotherUser', 'bearerOfAnotherClient'] as const;
    for (const route of ROUTES as readonly PublicRoute[])
      for (const caller of hostile) {
        const status = await send(route.method, pathOf(route), callers[caller], route.operationId);
        const what = `${caller} ${route.method} ${pathOf(route)}: ${status}`;
        expect(status, what).toBeLessThan(500);
        if (!mayPerform(caller, route)) expect(status >= 200 && status < 300, what).toBe(false);
        // docs/api.md "Principals and authorization": a right or subscription the token's client may not see is 404
        // for every operation on it, writes included (no 204/409 telling that it exists).
        const onObject = /\{(rightId|subscriptionId)\}/.test(route.path);
        if (caller === 'bearerOfAnotherClient' && onObject && route.bearer !== null) expect(status, what).toBe(404);
      }
    expect(await state()).toBe(before);
  });
});
