import { answerOf, creationOf, systemFixture, TestSystem, clientsOf } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const basic = TestSystem.clientAuthorization;
const A = basic('grantor-a');
const B = basic('grantor-b');
const SP = basic('provider-sp');
const admin = () => fx.system.adminHeaders().authorization!;

function call(
  method: string,
  path: string,
  authorization: string,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  return fetch(`${fx.system.gatewayUrl}${path}`, {
    method,
    headers: { authorization, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    redirect: 'manual',
  });
}

type RightView = Record<string, unknown> & {
  rightId: string;
  href: string;
  generation: string;
  state: string;
  used: boolean;
  active: boolean;
};

const NOW = Date.now();
const iso = (offsetMs: number) => new Date(NOW + offsetMs).toISOString().replace(/\.\d{3}Z$/, 'Z');
const CURRENT = `${iso(-3_600_000)}/${iso(86_400_000)}`;

async function createRight(body: Record<string, unknown>, authorization = A, user = 'alice'): Promise<RightView> {
  const response = await call('POST', `/id/users/${user}/rights`, authorization, {
    sku: 'news',
    grantorId: 'A',
    timeInterval: CURRENT,
    ...body,
  });
  expect(response.status, await response.clone().text()).toBe(201);
  return (await response.json()) as RightView;
}

/** The events of one right, de-duplicated by id as a consumer does (delivery is at least once). */
const eventsOf = (rightId: string) => {
  const seen = new Set<unknown>();
  return fx
    .events('rights.events')
    .messages.filter((m) => m.body.subject === rightId && !seen.has(m.body.id) && seen.add(m.body.id));
};
const eventTypesOf = async (rightId: string, count: number) => {
  await fx.events('rights.events').waitFor(() => eventsOf(rightId).length >= count);
  return eventsOf(rightId).map((m) => m.routingKey);
};

const fx = systemFixture({
  name: 'rights_api',
  backends: ['catalog', 'rights'],
  bearer: true,
  collect: { 'rights.events': '#', 'catalog.events': 'sku.upserted' },
  seed: {
    clients: clientsOf({ 'grantor-a': 'A', 'grantor-b': 'B', 'provider-sp': 'SP', 'app-a': 'A' }),
    users: ['alice', 'bob', 'meg'],
    skus: { news: { announceOnUsage: true, serviceProviderId: 'SP', grantorIds: ['A', 'B'] }, video: {} },
  },
});
beforeAll(fx.start);
afterAll(fx.stop);

describe('create and retrieve (docs/api.md)', () => {
  it('when a grantor creates a right, then 201 returns it with every field of docs/api.md, and right.created is published', async () => {
    const response = await call('POST', '/id/users/alice/rights', A, {
      sku: 'news',
      grantorId: 'A',
      timeInterval: '2026-01-31T00:00:00+01:00/P1M',
      grantorContext: 'order-17',
      payload: { seats: 2 },
    });
    const { answer, created: right } = await creationOf<RightView>(response);
    expect(answer).toEqual({ status: 201, type: 'application/json', etag: '"1"', location: right.href });
    const href = `${fx.system.gatewayUrl}/id/users/alice/rights/${right.rightId}`;
    expect(right).toEqual({
      rightId: expect.stringMatching(/^[0-9A-Za-z]+$/),
      generation: '1',
      href,
      state: 'CREATED',
      userId: 'alice',
      link: [
        { rel: 'self', href, type: null, idref: null },
        { rel: 'user', href: `${fx.system.gatewayUrl}/id/users/alice`, type: null, idref: null },
        { rel: 'use', href: `${href}/usage`, type: null, idref: null },
        { rel: 'suspend', href: `${href}/suspend`, type: 'action', idref: null },
      ],
      grantorId: 'A',
      grantorContext: 'order-17',
      // Named by the catalog: the SKU's provider (docs/api.md "Service providers agree to what they serve").
      serviceProviderId: 'SP',
      timeInterval: '2026-01-31T00:00:00+01:00/2026-02-28T00:00:00+01:00',
      sku: 'news',
      payload: { seats: 2 },
      used: false,
      active: false,
      // A plain right: no units (docs/api.md "Metered rights"), no grace (docs/api.md "Grace").
      quantity: null,
      remaining: null,
      grace: null,
      inGrace: false,
      graceEnds: null,
      clockId: null,
    });
    const read = await call('GET', `/id/users/alice/rights/${right.rightId}`, A);
    expect(read.status).toBe(200);
    expect(read.headers.get('etag')).toBe('"1"');
    expect(await read.json()).toEqual(right);

    expect(await eventTypesOf(right.rightId, 1)).toEqual(['right.created']);
    const [created] = eventsOf(right.rightId);
    expect(created!.body).toMatchObject({
      specversion: '1.0',
      source: '/rights',
      type: 'right.created',
      subject: right.rightId,
    });
    expect(created!.body.data).toEqual({ ...right, connectId: 'alice', sequence: 1 });
  });

  it('when a right is read, then its JSON answer gives its type and length; HEAD the same headers; with its ETag in If-None-Match, then 304 and no body', async () => {
    const right = await createRight({});
    const path = `/id/users/alice/rights/${right.rightId}`;
    const read = await call('GET', path, A);
    const text = await read.text();
    expect([read.status, read.headers.get('content-type'), read.headers.get('etag')]).toEqual([
      200,
      'application/json; charset=utf-8',
      '"1"',
    ]);
    expect(Number(read.headers.get('content-length'))).toBe(Buffer.byteLength(text));
    expect(JSON.parse(text)).toEqual(right);

    const head = await call('HEAD', path, A);
    expect([head.status, head.headers.get('content-type'), head.headers.get('content-length')]).toEqual([
      200,
      'application/json; charset=utf-8',
      read.headers.get('content-length'),
    ]);
    expect(await head.text()).toBe('');

    // As a browser revalidates (fetch alone would add `Cache-Control: no-cache`, which asks for the whole answer).
    const revalidate = (etag: string) => ({ 'if-none-match': etag, 'cache-control': 'max-age=0' });
    const unchanged = await call('GET', path, A, undefined, revalidate('"1"'));
    expect([unchanged.status, await unchanged.text()]).toEqual([304, '']);
    const changed = await call('GET', path, A, undefined, revalidate('"0"'));
    expect([changed.status, await changed.json()]).toEqual([200, right]);
  });

  it('when a right is created with a quantity, then it holds that many units, all remaining; a quantity out of bounds is 400 naming it', async () => {
    const metered = await createRight({ quantity: 10 });
    expect(metered).toMatchObject({ quantity: 10, remaining: 10 });
    expect(await (await call('GET', `/id/users/alice/rights/${metered.rightId}`, A)).json()).toMatchObject({
      quantity: 10,
      remaining: 10,
    });
    for (const quantity of [0, 1.5, 1_000_000_001, '10']) {
      const refused = await call('POST', '/id/users/alice/rights', A, {
        sku: 'news',
        grantorId: 'A',
        timeInterval: CURRENT,
        quantity,
      });
      expect(refused.status, String(quantity)).toBe(400);
      expect(await refused.text()).toMatch(/^quantity: /);
    }
  });

  it('when the service provider equals the grantor, then it is stored as null; otherwise kept', async () => {
    expect((await createRight({ serviceProviderId: 'A' })).serviceProviderId).toBeNull();
    expect((await createRight({ serviceProviderId: 'SP' })).serviceProviderId).toBe('SP');
  });

  it('when the body is bad, then 400 text/plain names the field and nothing is created', async () => {
    const before = fx.events('rights.events').messages.length;
    const cases: Array<[unknown, RegExp]> = [
      [{ grantorId: 'A', timeInterval: CURRENT }, /^sku: /],
      [{ sku: 'nope', grantorId: 'A', timeInterval: CURRENT }, /^sku: nope is not in the catalog/],
      [{ sku: 'news', grantorId: 'A' }, /^timeInterval: /],
      [{ sku: 'news', grantorId: 'A', timeInterval: 'tomorrow' }, /^timeInterval: must be/],
      [
        { sku: 'news', grantorId: 'A', timeInterval: `${iso(1000)}/${iso(0)}` },
        /^timeInterval: end must be after start/,
      ],
      [{ sku: 'news', grantorId: 'A', timeInterval: '2026-01-01T00:00:00/P1D' }, /^timeInterval: .* has no offset/],
      [
        { sku: 'news', grantorId: 'A', timeInterval: CURRENT, state: 'EXPIRED' },
        /^state: must be CREATED, ACTIVE or SUSPENDED/,
      ],
      [{ sku: 'news', grantorId: 'A', timeInterval: CURRENT, grantorContext: 7 }, /^grantorContext: /],
      [
        { sku: 'news', grantorId: 'A', timeInterval: CURRENT, payload: 'x'.repeat(17_000) },
        /^payload: must be at most 16384 bytes/,
      ],
      [{ sku: 'news', grantorId: 'A', timeInterval: CURRENT, color: 'red' }, /^unknown field\(s\): color/],
      ['{"sku":', /not valid JSON/],
    ];
    const answers = [];
    for (const [body] of cases) answers.push(await answerOf(await call('POST', '/id/users/bob/rights', A, body)));
    const refusal = (message: RegExp) => ({ status: 400, type: 'text/plain', text: expect.stringMatching(message) });
    expect(answers).toEqual(cases.map(([, message]) => refusal(message)));
    const list = await call('GET', '/id/users/bob/rights?grantorId=A', A);
    expect(((await list.json()) as { right: unknown[] }).right).toEqual([]);
    expect(
      fx
        .events('rights.events')
        .messages.slice(before)
        .filter((m) => (m.body.data as { connectId?: string })?.connectId === 'bob'),
    ).toEqual([]);
  });

  it('when a grantor creates a right for another grantor, then 401; an admin may', async () => {
    const refused = await call('POST', '/id/users/alice/rights', A, {
      sku: 'news',
      grantorId: 'B',
      timeInterval: CURRENT,
    });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toBe('Basic realm="rights", charset="UTF-8"');
    expect((await createRight({ grantorId: 'B' }, admin())).grantorId).toBe('B');
  });

  it('when a right belongs to another grantor, then it is 404 to a grantor who cannot see it', async () => {
    const right = await createRight({ grantorId: 'A' });
    expect((await call('GET', `/id/users/alice/rights/${right.rightId}`, B)).status).toBe(404);
    expect((await call('GET', `/id/users/bob/rights/${right.rightId}`, A)).status).toBe(404);
    expect((await call('GET', '/id/users/alice/rights/not-alnum!', A)).status).toBe(400);
  });
});

describe('state changes (docs/api.md "Rights")', () => {
  it('when a right is activated and suspended, then each change bumps the generation and emits its event; repeats are 204 no-ops', async () => {
    const right = await createRight({});
    const path = `/id/users/alice/rights/${right.rightId}`;
    expect((await call('POST', `${path}/activate`, A)).status).toBe(204);
    expect((await call('POST', `${path}/activate`, A)).status).toBe(204);
    expect((await call('POST', `${path}/suspend`, A)).status).toBe(204);
    expect((await call('POST', `${path}/suspend`, A)).status).toBe(204);
    const read = (await (await call('GET', path, A)).json()) as RightView;
    expect(read).toMatchObject({ state: 'SUSPENDED', generation: '3', active: false });
    expect(await eventTypesOf(right.rightId, 3)).toEqual(['right.created', 'right.activated', 'right.suspended']);
    expect(eventsOf(right.rightId).map((e) => e.body.data?.sequence)).toEqual([1, 2, 3]);
  });

  it('when the service provider or another grantor tries to change a right, then 401 whether or not it can read it', async () => {
    const right = await createRight({ serviceProviderId: 'SP' });
    const path = `/id/users/alice/rights/${right.rightId}`;
    expect((await call('POST', `${path}/activate`, SP)).status).toBe(401);
    expect((await call('DELETE', path, SP)).status).toBe(401);
    const foreign = await call('POST', `${path}/suspend`, B);
    expect(foreign.status).toBe(401);
    expect(foreign.headers.get('content-type')).toMatch(/^text\/html/);
    expect((await call('DELETE', path, B)).status).toBe(401);
    expect((await call('GET', path, SP)).status).toBe(200);
    expect((await call('GET', path, B)).status).toBe(404);
    expect((await call('POST', `${path}/usage`, B)).status).toBe(404);
  });

  it('when If-Match names another generation, then 412 and nothing changes', async () => {
    const right = await createRight({});
    const path = `/id/users/alice/rights/${right.rightId}`;
    const refused = await call('POST', `${path}/activate`, A, undefined, { 'if-match': '"9"' });
    expect(refused.status).toBe(412);
    expect(refused.headers.get('content-type')).toMatch(/^text\/plain/);
    expect((await call('POST', `${path}/activate`, A, undefined, { 'if-match': '"1"' })).status).toBe(204);
  });
});

describe('usage of a metered right (docs/api.md "Usage")', () => {
  it('when a provider consumes units, then each consumption takes them, publishes right.consumed and is in the history; too many are refused and nothing is taken', async () => {
    // A user of its own: the balance below is of this right alone.
    const right = await createRight({ serviceProviderId: 'SP', state: 'ACTIVE', quantity: 10 }, A, 'meg');
    const path = `/id/users/meg/rights/${right.rightId}`;
    expect((await call('POST', `${path}/usage`, SP, { amount: 3 })).status).toBe(204);
    expect((await call('POST', `${path}/usage`, SP)).status).toBe(204); // one unit without a body
    expect(await (await call('GET', path, A)).json()).toMatchObject({ quantity: 10, remaining: 6, used: true });

    const refused = await call('POST', `${path}/usage`, SP, { amount: 7 });
    expect(refused.status).toBe(409);
    expect(refused.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await refused.text()).toMatch(/6 units, 7 asked/);
    for (const amount of [0, -1, 2.5, 'many'])
      expect((await call('POST', `${path}/usage`, SP, { amount })).status, String(amount)).toBe(400);
    expect(await (await call('GET', path, A)).json()).toMatchObject({ remaining: 6, generation: '3' });
    // The provider's check sees the balance at once (this gateway answered the consumptions).
    const check = async (query = '') =>
      (await (await call('GET', `/id/users/meg/entitlements/news${query}`, SP)).json()) as {
        entitled: boolean;
        balance: number | null;
        rights: Array<{ rightId: string; remaining: number | null }>;
      };
    expect(await check()).toMatchObject({ entitled: true, balance: 6 });
    expect((await check()).rights).toContainEqual(
      expect.objectContaining({ rightId: right.rightId, quantity: 10, remaining: 6 }),
    );
    expect(await check('?amount=6')).toMatchObject({ entitled: true });
    expect(await check('?amount=7')).toMatchObject({ entitled: false, balance: 6 });
    expect((await call('GET', '/id/users/meg/entitlements/news?amount=0', SP)).status).toBe(400);

    expect((await eventTypesOf(right.rightId, 5)).sort()).toEqual(
      ['right.created', 'right.used', 'service.announce', 'right.consumed', 'right.consumed'].sort(),
    );
    const consumed = eventsOf(right.rightId).filter((m) => m.routingKey === 'right.consumed');
    expect(consumed.map((m) => m.body.data as { amount: number; remaining: number })).toEqual([
      expect.objectContaining({ amount: 3, remaining: 7 }),
      expect.objectContaining({ amount: 1, remaining: 6 }),
    ]);
    await expect
      .poll(async () => ((await (await call('GET', `${path}/history`, A)).json()) as { history: unknown[] }).history)
      .toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            type: 'right.consumed',
            generation: '2',
            changes: expect.objectContaining({ remaining: [10, 7] }),
          }),
          expect.objectContaining({ type: 'right.consumed', generation: '3', changes: { remaining: [7, 6] } }),
        ]),
      );
  });

  it('when a consumption is sent again with its Idempotency-Key, then its units are taken once', async () => {
    const right = await createRight({ serviceProviderId: 'SP', state: 'ACTIVE', quantity: 5 });
    const path = `/id/users/alice/rights/${right.rightId}`;
    for (let i = 0; i < 3; i++)
      expect(
        (await call('POST', `${path}/usage`, SP, { amount: 2 }, { 'idempotency-key': `use-${right.rightId}` })).status,
      ).toBe(204);
    expect(await (await call('GET', path, A)).json()).toMatchObject({ remaining: 3 });
  });

  it('when a plain right is given an amount, then usage is as the contract says: used once, no units', async () => {
    const right = await createRight({ serviceProviderId: 'SP', state: 'ACTIVE' });
    const path = `/id/users/alice/rights/${right.rightId}`;
    expect((await call('POST', `${path}/usage`, SP, { amount: 4 })).status).toBe(204);
    expect(await (await call('GET', path, A)).json()).toMatchObject({ used: true, quantity: null, remaining: null });
  });
});

describe('usage (docs/api.md "Usage")', () => {
  it('when a right is not active, then usage is 409; once active, the first use emits right.used and service.announce, a repeat nothing', async () => {
    const right = await createRight({ serviceProviderId: 'SP' });
    const path = `/id/users/alice/rights/${right.rightId}`;
    expect(await answerOf(await call('POST', `${path}/usage`, SP))).toMatchObject({
      status: 409,
      type: 'text/plain',
      text: expect.stringMatching(/not active/),
    });
    expect((await call('POST', `${path}/activate`, A)).status).toBe(204);
    expect((await call('POST', `${path}/usage`, SP)).status).toBe(204);
    expect((await call('POST', `${path}/usage`, A)).status).toBe(204);
    expect(await (await call('GET', path, A)).json()).toMatchObject({ used: true, active: true, generation: '3' });
    expect(await eventTypesOf(right.rightId, 4)).toEqual([
      'right.created',
      'right.activated',
      'right.used',
      'service.announce',
    ]);
  });

  it("when a Bearer token with id.user.right.use uses its user's right, then 204 and no announcement for a quiet SKU", async () => {
    const right = await createRight({ sku: 'video', state: 'ACTIVE' });
    const token = await fx.issuer.token('app-a', 'alice', { scope: 'id.user.right.use' });
    expect((await call('POST', `/id/users/alice/rights/${right.rightId}/usage`, `Bearer ${token}`)).status).toBe(204);
    expect(await eventTypesOf(right.rightId, 2)).toEqual(['right.created', 'right.used']);
  });

  it('when the interval has passed, then the right is not active and usage is 409', async () => {
    const right = await createRight({ state: 'ACTIVE', timeInterval: `${iso(-7_200_000)}/${iso(-3_600_000)}` });
    expect(right).toMatchObject({ state: 'ACTIVE', active: false });
    expect((await call('POST', `/id/users/alice/rights/${right.rightId}/usage`, A)).status).toBe(409);
  });

  it('when usage and suspend race, then no update is lost: one generation per change', async () => {
    const right = await createRight({ state: 'ACTIVE', sku: 'video' });
    const path = `/id/users/alice/rights/${right.rightId}`;
    const statuses = await Promise.all([
      call('POST', `${path}/usage`, A),
      call('POST', `${path}/suspend`, A),
      call('POST', `${path}/usage`, A),
    ]).then((responses) => responses.map((r) => r.status));
    expect(statuses.every((status) => status === 204 || status === 409)).toBe(true);
    const final = (await (await call('GET', path, A)).json()) as RightView;
    expect(final.state).toBe('SUSPENDED');
    const types = await eventTypesOf(right.rightId, Number(final.generation));
    expect(types.length).toBe(Number(final.generation));
    expect(types.filter((t) => t === 'right.suspended')).toHaveLength(1);
    expect(types.filter((t) => t === 'right.used').length).toBe(final.used ? 1 : 0);
  });
});

describe('list and remove', () => {
  it('when rights are listed, then the grantor filter, visibility, active filter, order and pagination hold', async () => {
    const older = await createRight({ sku: 'video' }, A, 'bob');
    const newer = await createRight({ sku: 'video', state: 'ACTIVE' }, A, 'bob');
    const other = await createRight({ grantorId: 'B', serviceProviderId: 'SP' }, B, 'bob');
    const ids = async (path: string, authorization: string) =>
      ((await (await call('GET', path, authorization)).json()) as { right: RightView[] }).right.map((r) => r.rightId);
    expect(await ids('/id/users/bob/rights?grantorId=A', A)).toEqual([newer.rightId, older.rightId]);
    expect(await ids('/id/users/bob/rights?grantorId=B', B)).toEqual([other.rightId]);
    expect(await ids('/id/users/bob/rights?grantorid=A&active=true', A)).toEqual([newer.rightId]);
    expect(
      await ids(`/id/users/bob/rights?grantorId=A&active=${encodeURIComponent(iso(-86_400_000 * 400))}`, A),
    ).toEqual([]);
    expect(await ids('/id/users/bob/rights', admin())).toEqual([other.rightId, newer.rightId, older.rightId]);
    // The service provider sees the right it provides, through a token naming its grantor.
    const spToken = await fx.issuer.token('app-a', 'bob', { scope: 'id.user.right.read' });
    expect(await ids('/id/users/bob/rights?grantorId=B', `Bearer ${spToken}`)).toEqual([]);
    const page = await call('GET', '/id/users/bob/rights?grantorId=A&limit=1', A);
    expect(((await page.json()) as { right: RightView[] }).right.map((r) => r.rightId)).toEqual([newer.rightId]);
    const next = /^<([^>]+)>; rel="next"$/.exec(page.headers.get('link') ?? '')?.[1];
    expect(next).toBeDefined();
    expect(
      ((await (await fetch(next!, { headers: { authorization: A } })).json()) as { right: RightView[] }).right.map(
        (r) => r.rightId,
      ),
    ).toEqual([older.rightId]);
    const bad = await call('GET', '/id/users/bob/rights?grantorId=A&active=soon', A);
    expect(bad.status).toBe(400);
    expect(await bad.text()).toMatch(/^active: /);
  });

  it('when the grantor removes a right, then 204, right.removed, and it is gone', async () => {
    const right = await createRight({});
    const path = `/id/users/alice/rights/${right.rightId}`;
    expect((await call('DELETE', path, A)).status).toBe(204);
    expect((await call('GET', path, A)).status).toBe(404);
    expect((await call('DELETE', path, A)).status).toBe(404);
    expect(await eventTypesOf(right.rightId, 2)).toEqual(['right.created', 'right.removed']);
  });
});

describe('when the catalog is unreachable', () => {
  it('then creating a right with a SKU not known locally is 503 with Retry-After, not 400', async () => {
    expect((await call('PUT', '/catalog/skus/fresh-sku', admin(), {})).status).toBe(201);
    // The catalog publishes sku.upserted after it answers; stopped before that, the event would
    // wait in its outbox until it comes back, and the rights service would never hear of fresh-sku.
    await fx.events('catalog.events').waitFor((m) => m.some((e) => e.body.subject === 'fresh-sku'));
    await fx.system.service('catalog').stop();
    try {
      // The SKU directory heard of fresh-sku from its event, so it is known without the catalog.
      await expect
        .poll(
          async () =>
            (
              await call('POST', '/id/users/alice/rights', A, {
                sku: 'fresh-sku',
                grantorId: 'A',
                timeInterval: CURRENT,
              })
            ).status,
        )
        .toBe(201);
      const response = await call('POST', '/id/users/alice/rights', A, {
        sku: 'never-heard-of',
        grantorId: 'A',
        timeInterval: CURRENT,
      });
      expect(response.status).toBe(503);
      expect(response.headers.get('retry-after')).toMatch(/^\d+$/);
    } finally {
      await fx.system.service('catalog').start();
    }
  });
});
