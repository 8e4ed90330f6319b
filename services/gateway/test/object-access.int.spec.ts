import { BODY_EXAMPLES, ROUTES, SCOPES, type PublicRoute } from '@rs/contracts';
import { clientsOf, STAFF_ROLES, systemFixture, TEST_ADMIN, TestSystem, TokenIssuer } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * Object access, walked in full (docs/security.md): every route of the route table that names
 * an object (a right, a subscription, a webhook endpoint) × every kind of principal × objects
 * owned by each grantor, each answer checked against the visibility rules. What the caller
 * may not see is never a 2xx: reads and usage are 404, the changes of docs/api.md "Principals and authorization" are
 * 401 whether or not it could read the object. Calls the caller may make are sent when they
 * only read; the changes it may make are left out, so that nothing changes at all.
 *
 * Its principals come from three identity providers (docs/identity-providers.md "Issuers stay in
 * their lane"): grantor A's (client-a and A's staff), grantor B's (client-b and B's staff) and the
 * platform's own (any client but an admin, and operators). Tokens where one grantor's provider
 * speaks for another grantor, or for an admin, reach nothing at all.
 */
const idpOfA = new TokenIssuer({ issuer: 'self', path: '/a' });
const idpOfB = new TokenIssuer({ issuer: 'self', path: '/b' });
const platformIdp = new TokenIssuer({ issuer: 'self', path: '/platform' });
const IDPS = [idpOfA, idpOfB, platformIdp];
/** The gateway's settings, known once the providers listen (set before the system starts). */
const env: Record<string, string> = { TRUSTED_PROXIES: '127.0.0.1' };
const fx = systemFixture({
  name: 'object_access',
  backends: ['catalog', 'rights', 'subscriptions', 'webhooks'],
  env,
  seed: {
    clients: clientsOf({ 'client-a': 'A', 'client-b': 'B', 'provider-sp': 'SP' }),
    users: ['victim', 'other'],
    skus: { news: { serviceProviderId: 'SP', grantorIds: ['A', 'B'] } },
  },
});

interface Principal {
  name: string;
  /** The grantor whose objects it sees (null: an admin, who sees all). */
  grantor: string | null;
  bearer: boolean;
  /** A Bearer token's user. */
  user?: string;
  /** A staff member's role (docs/identity-providers.md "Staff"). */
  staff?: 'read' | 'write' | 'admin';
  /** A token in which a provider speaks for a tenant that did not choose it: refused everywhere (401, or 429 once it has failed often). */
  foreign?: true;
  authorization: string;
  /** Its own source address (forwarded by the trusted loopback proxy), so that its failures spend only its budget. */
  address: string;
}
interface Owned {
  kind: 'right' | 'subscription' | 'endpoint';
  id: string;
  grantor: string;
  provider: string | null;
}

let principals: Principal[];
const objects: Owned[] = [];
/** Staff members say why they change anything (docs/audit.md); the walk says it on every call, so answers are about access. */
const REASON = { 'x-audit-reason': 'object access walk' };

beforeAll(async () => {
  for (const idp of IDPS) await idp.start();
  const entry = (idp: TokenIssuer, clients: string[] | '*', grantors: string[]) => ({
    issuer: idp.issuer,
    audience: idp.audience,
    jwksUri: idp.jwksUrl,
    claims: { roles: 'roles' },
    clients,
    staff: { ...STAFF_ROLES, grantor: 'grantor', grantors },
  });
  env.AUTH_ISSUERS = JSON.stringify([
    entry(idpOfA, ['client-a'], ['A']),
    entry(idpOfB, ['client-b'], ['B']),
    entry(platformIdp, '*', ['*']),
  ]);
  await fx.start();
  const start = new Date(Date.now() - 60_000).toISOString().replace(/\.\d{3}Z$/, 'Z');
  for (const [grantor, client, provider] of [
    ['A', 'client-a', undefined],
    ['B', 'client-b', 'B'],
  ] as const) {
    const authorization = TestSystem.clientAuthorization(client);
    const right = await fx.call('POST', '/id/users/victim/rights', authorization, {
      sku: 'news',
      grantorId: grantor,
      timeInterval: `${start}/P1D`,
      state: 'ACTIVE',
      ...(provider ? { serviceProviderId: provider } : {}),
    });
    const made = (await right.json()) as { rightId: string; serviceProviderId: string | null };
    objects.push({ kind: 'right', id: made.rightId, grantor, provider: made.serviceProviderId });
    const subscription = await fx.call('POST', '/id/users/victim/subs', authorization, {
      grantorId: grantor,
      timeSpec: `R/2030-01-01T00:00:00Z/P1D`,
      rightsSpec: [{ sku: 'news' }],
    });
    const { subscriptionId } = (await subscription.json()) as { subscriptionId: string };
    objects.push({ kind: 'subscription', id: subscriptionId, grantor, provider: null });
    const endpoint = await fx.call('POST', '/webhooks/endpoints', authorization, {
      url: `http://127.0.0.1:9/${grantor}`,
    });
    const { endpointId } = (await endpoint.json()) as { endpointId: string };
    objects.push({ kind: 'endpoint', id: endpointId, grantor, provider: null });
  }
  const idpOf = (grantor: string | null) => (grantor === 'A' ? idpOfA : grantor === 'B' ? idpOfB : platformIdp);
  const token = async (client: string, user: string, idp = idpOf(client === 'client-a' ? 'A' : 'B')) =>
    `Bearer ${await idp.token(client, user, { scope: SCOPES.join(' ') })}`;
  // Staff members of a grantor from its provider, or admins from the platform's (docs/identity-providers.md "Staff").
  const staff = await Promise.all(
    (['read', 'write', 'admin'] as const)
      .flatMap((role) => (role === 'admin' ? [null] : ['A', 'B']).map((grantor) => ({ role, grantor })))
      .map(async ({ role, grantor }) => {
        const name = `${role} staff${grantor ? ` of ${grantor}` : ''}`;
        const token = await idpOf(grantor).staffToken(name.replace(/ /g, '-'), role, grantor ? [grantor] : []);
        return { name, grantor, bearer: false, staff: role, authorization: `Bearer ${token}` };
      }),
  );
  // A provider speaking for a tenant that did not choose it.
  const foreign = async (name: string, authorization: Promise<string>) => ({
    name,
    grantor: null,
    bearer: true,
    foreign: true as const,
    authorization: await authorization,
  });
  const everywhere = [
    await foreign("B's provider naming client-a", token('client-a', 'victim', idpOfB)),
    await foreign("A's provider naming the admin client", token(TEST_ADMIN.clientId, 'victim', idpOfA)),
    await foreign(
      'the platform’s provider ("*") naming the admin client',
      token(TEST_ADMIN.clientId, 'victim', platformIdp),
    ),
    await foreign(
      "A's provider: write staff claiming B",
      idpOfA.staffToken('mallory', 'write', ['A', 'B']).then((one) => `Bearer ${one}`),
    ),
    await foreign(
      "A's provider: admin staff",
      idpOfA.staffToken('mallory', 'admin').then((one) => `Bearer ${one}`),
    ),
  ];
  const listed: Array<Omit<Principal, 'address'>> = [
    { name: 'grantor A', grantor: 'A', bearer: false, authorization: TestSystem.clientAuthorization('client-a') },
    { name: 'grantor B', grantor: 'B', bearer: false, authorization: TestSystem.clientAuthorization('client-b') },
    { name: 'provider SP', grantor: 'SP', bearer: false, authorization: TestSystem.clientAuthorization('provider-sp') },
    { name: 'admin', grantor: null, bearer: false, authorization: fx.system.adminHeaders().authorization! },
    {
      name: "victim's app of A",
      grantor: 'A',
      bearer: true,
      user: 'victim',
      authorization: await token('client-a', 'victim'),
    },
    {
      name: "victim's app of B",
      grantor: 'B',
      bearer: true,
      user: 'victim',
      authorization: await token('client-b', 'victim'),
    },
    {
      name: "other's app of A",
      grantor: 'A',
      bearer: true,
      user: 'other',
      authorization: await token('client-a', 'other'),
    },
    ...staff,
    ...everywhere,
  ];
  principals = listed.map((principal, i) => ({ ...principal, address: `198.51.100.${i + 1}` }));
}, 180_000);
afterAll(async () => {
  await fx.stop();
  for (const idp of IDPS) await idp.close();
});

/**
 * Reservations of units of grantor A's metered right of `victim` (docs/api.md "Reservations"),
 * one made by each kind of principal: only its maker, the right's grantor and an admin settle
 * it; to every other caller who passes the gateway it does not exist (404).
 */
interface Reserved {
  id: string;
  maker: string;
}
const reservations: Reserved[] = [];
const RESERVATION_MAKERS = ['provider SP', 'grantor A', "victim's app of A", 'admin', 'write staff of A'];
const reservationPath = (id: string) => `/id/users/victim/entitlements/news/reservations/${id}`;
let meteredRight = '';

beforeAll(async () => {
  const made = await fx.call('POST', '/id/users/victim/rights', TestSystem.clientAuthorization('client-a'), {
    sku: 'news',
    grantorId: 'A',
    timeInterval: `${new Date(Date.now() - 60_000).toISOString().replace(/\.\d{3}Z$/, 'Z')}/P1D`,
    state: 'ACTIVE',
    quantity: 100,
  });
  meteredRight = ((await made.json()) as { rightId: string }).rightId;
  for (const maker of RESERVATION_MAKERS) {
    const { authorization } = principals.find((principal) => principal.name === maker)!;
    const reserved = await fx.call(
      'POST',
      '/id/users/victim/entitlements/news/reservations',
      authorization,
      { amount: 1, ttl: 'PT1H' },
      REASON,
    );
    expect(reserved.status, `${maker}: ${await reserved.clone().text()}`).toBe(201);
    reservations.push({ id: ((await reserved.json()) as { reservationId: string }).reservationId, maker });
  }
}, 60_000);

/** Who settles a reservation (commit or release): its maker, the right's grantor (Basic), an admin. */
function settles(principal: Principal, reservation: Reserved): 'allowed' | 401 | 404 {
  if (principal.foreign || (principal.bearer && principal.user !== 'victim')) return 401;
  if (principal.staff === 'read') return 401; // a change: the gateway asks for the write role
  const mayUse = principal.grantor === null || principal.grantor === 'A' || principal.grantor === 'SP';
  if (!mayUse) return 404;
  const grantorOfRight = !principal.bearer && principal.grantor === 'A';
  return principal.name === reservation.maker || principal.grantor === null || grantorOfRight ? 'allowed' : 404;
}

/** The metered right's balances as an admin reads them: must not change. */
async function meteredState(): Promise<string> {
  const admin = fx.system.adminHeaders().authorization!;
  const right = (await (await fx.call('GET', `/id/users/victim/rights/${meteredRight}`, admin)).json()) as object;
  const check = (await (await fx.call('GET', '/id/users/victim/entitlements/news', admin)).json()) as object;
  return JSON.stringify([right, 'balance' in check ? check.balance : null]);
}

/** The changes docs/api.md "Principals and authorization" keep to the object's grantor (and admins): 401 for anyone else. */
const MANAGE = new Set([
  'removeRight',
  'adjustRight',
  'activateRight',
  'suspendRight',
  'deleteSubscription',
  'activateSubscription',
  'suspendSubscription',
  'changeSubscriptionPlan',
  'withdrawSubscriptionChange',
]);
const READS = new Set(['GET', 'HEAD']);
/** Webhook endpoints and their secrets are managed by their grantor's client and admins, not by write staff. */
const MANAGE_ENDPOINT = new Set(['deleteWebhookEndpoint', 'rotateWebhookSecret']);

const kindOf = (route: PublicRoute): Owned['kind'] | null =>
  route.path.includes('{rightId}')
    ? 'right'
    : route.path.includes('{subscriptionId}')
      ? 'subscription'
      : route.path.includes('{endpointId}')
        ? 'endpoint'
        : null;

/** What the rules say a principal gets for a route on an object: allowed, or the refusal. */
function expected(route: PublicRoute, principal: Principal, object: Owned): 'allowed' | 401 | 404 {
  if (principal.foreign) return 401;
  if (principal.bearer && (route.bearer === null || principal.user !== 'victim')) return 401;
  if (principal.staff === 'read' && !READS.has(route.method)) return 401;
  const admin = principal.grantor === null;
  const visible =
    admin || object.grantor === principal.grantor || (object.kind === 'right' && object.provider === principal.grantor);
  // A staff member's change of what it cannot see is 404, as an unknown id is.
  if (principal.staff && !visible) return 404;
  if (MANAGE_ENDPOINT.has(route.operationId) && principal.staff && !admin) return 401;
  if (MANAGE.has(route.operationId))
    return admin || (!principal.bearer && object.grantor === principal.grantor) ? 'allowed' : 401;
  return visible ? 'allowed' : 404;
}

/** Whether a status is what was wanted: a foreign token may also be refused for failing too often (429). */
const answered = (principal: Principal, status: number, want: 401 | 404) =>
  status === want || (principal.foreign === true && status === 429);

async function send(route: PublicRoute, { authorization, address }: Principal, object: Owned): Promise<number> {
  const path = route.path
    .replace('{connectId}', 'victim')
    .replace(/\{(rightId|subscriptionId|endpointId)\}/, object.id)
    .replace('{deliveryId}', '0'.repeat(32)); // well formed, and no delivery of anyone's
  // A body the route requires is the API page's example, so that the answer is about access, not the body.
  const body = route.body?.required ? JSON.stringify(BODY_EXAMPLES[route.body.schema]) : undefined;
  const response = await fetch(`${fx.system.gatewayUrl}${path}`, {
    method: route.method,
    headers: {
      authorization,
      'x-forwarded-for': address,
      ...REASON,
      ...(body ? { 'content-type': 'application/json' } : {}),
    },
    ...(body ? { body } : {}),
  });
  await response.body?.cancel();
  return response.status;
}

/** Every object as an admin reads it, with its history: must not change. */
async function state(): Promise<string> {
  const admin = fx.system.adminHeaders().authorization!;
  const read = async (path: string) => (await fx.call('GET', path, admin)).text();
  const parts: string[] = [];
  for (const object of objects) {
    if (object.kind === 'right') {
      parts.push(await read(`/id/users/victim/rights/${object.id}`));
      parts.push(await read(`/id/users/victim/rights/${object.id}/history`));
    } else if (object.kind === 'subscription') {
      parts.push(await read(`/id/users/victim/subs/${object.id}`));
      parts.push(await read(`/id/users/victim/subs/${object.id}/history`));
    } else parts.push(await read(`/webhooks/endpoints/${object.id}`));
  }
  return parts.join('\n');
}

describe('object access: every route × every principal × every owner', () => {
  it('when each principal calls each route on each grantor’s objects, then every answer is what the visibility rules say, and nothing changes', async () => {
    // The setup's own changes are in history once their events are out: wait for them first.
    await expect.poll(async () => (await state()).match(/"history":\[\]/g)?.length ?? 0).toBe(0);
    const before = await state();
    const wrong: string[] = [];
    let sent = 0;
    for (const route of ROUTES as readonly PublicRoute[]) {
      const kind = kindOf(route);
      if (kind === null) continue;
      for (const object of objects.filter((one) => one.kind === kind))
        for (const principal of principals) {
          const want = expected(route, principal, object);
          // A change the principal may make is left out: the walk changes nothing.
          if (want === 'allowed' && !READS.has(route.method)) continue;
          const status = await send(route, principal, object);
          sent += 1;
          const ok =
            want === 'allowed'
              ? status < 300 || (route.path.includes('{deliveryId}') && status === 404)
              : answered(principal, status, want);
          if (!ok)
            wrong.push(
              `${principal.name} ${route.operationId} on ${object.grantor}'s ${kind}: ${status}, wanted ${want}`,
            );
        }
    }
    expect(wrong).toEqual([]);
    expect(sent).toBeGreaterThan(300);
    expect(await state()).toBe(before);
  });
});

describe('reservations: commit and release × every principal × every maker', () => {
  it('when each principal settles each principal’s reservation, then only its maker, the grantor and an admin may; to anyone else it does not exist, and nothing changes', async () => {
    const before = await meteredState();
    const wrong: string[] = [];
    for (const reservation of reservations)
      for (const principal of principals) {
        const want = settles(principal, reservation);
        if (want === 'allowed') continue; // the walk changes nothing
        for (const [method, path] of [
          ['POST', `${reservationPath(reservation.id)}/commit`],
          ['DELETE', reservationPath(reservation.id)],
        ] as const) {
          const status = (
            await fx.call(method, path, principal.authorization, undefined, {
              ...REASON,
              'x-forwarded-for': principal.address,
            })
          ).status;
          if (!answered(principal, status, want))
            wrong.push(`${principal.name} ${method} of ${reservation.maker}'s reservation: ${status}, wanted ${want}`);
        }
      }
    expect(wrong).toEqual([]);
    expect(await meteredState()).toBe(before);
    // Then every principal allowed releases it (a release is done once, and 204 again after).
    for (const reservation of reservations)
      for (const principal of principals.filter((one) => settles(one, reservation) === 'allowed')) {
        const status = (
          await fx.call('DELETE', reservationPath(reservation.id), principal.authorization, undefined, {
            ...REASON,
            'x-forwarded-for': principal.address,
          })
        ).status;
        if (status !== 204)
          wrong.push(`${principal.name} release of ${reservation.maker}'s reservation: ${status}, wanted 204`);
      }
    expect(wrong).toEqual([]);
    expect(
      reservations.map((reservation) => principals.filter((one) => settles(one, reservation) === 'allowed').length),
    ).toEqual([5, 4, 5, 4, 4]);
  });
});

describe('the audit log × every principal', () => {
  it('when each principal reads the audit log, then admins and admin staff read every entry, other staff only their grantor’s, and anyone else is refused', async () => {
    // Entries of A exist (the reservations of the admin and of A's write staff), and others.
    const admin = fx.system.adminHeaders().authorization!;
    const all = async (authorization: string, query = '', address = '127.0.0.1') => {
      const response = await fx.call('GET', `/admin/audit?limit=1000${query}`, authorization, undefined, {
        'x-forwarded-for': address,
      });
      const body = response.ok ? ((await response.json()) as { entries: Array<{ grantorId: string | null }> }) : null;
      return { status: response.status, grantors: new Set(body?.entries.map((entry) => entry.grantorId)) };
    };
    const everything = await all(admin);
    expect(everything.status).toBe(200);
    expect(everything.grantors.has('A')).toBe(true);
    const wrong: string[] = [];
    for (const principal of principals) {
      const read = await all(principal.authorization, '', principal.address);
      const reader = principal.staff !== undefined || (principal.grantor === null && !principal.bearer);
      const wanted = !reader ? 401 : 200;
      if (read.status !== wanted && !(wanted === 401 && answered(principal, read.status, 401)))
        wrong.push(`${principal.name}: ${read.status}, wanted ${wanted}`);
      if (read.status !== 200) continue;
      const sees = principal.grantor === null ? everything.grantors : new Set([principal.grantor]);
      if ([...read.grantors].some((grantor) => !sees.has(grantor)))
        wrong.push(`${principal.name} read entries of ${[...read.grantors].join(', ')}`);
      // Asking for another grantor's entries finds none.
      if (principal.grantor !== null) {
        const other = await all(
          principal.authorization,
          `&grantorId=${principal.grantor === 'A' ? 'B' : 'A'}`,
          principal.address,
        );
        if (other.status !== 200 || other.grantors.size !== 0)
          wrong.push(`${principal.name} asked for another grantor: ${other.status}, ${[...other.grantors].join(', ')}`);
      }
    }
    expect(wrong).toEqual([]);
  });
});
