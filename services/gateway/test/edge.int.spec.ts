import http from 'node:http';
import { connect, createServer, type Server } from 'node:net';
import { networkInterfaces } from 'node:os';
import { gzipSync } from 'node:zlib';
import { Exchanges } from '@rs/contracts';
import { InternalTokenSigner } from '@rs/http';
import { freePort, systemFixture, TEST_INTERNAL_SECRET, TestSystem, type CollectedMessage } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * The edge holds (docs/api.md), each finding of a hostile client's review tried again
 * through the gateway of a running system.
 */
const fx = systemFixture({
  name: 'gateway_edge',
  backends: ['catalog', 'rights', 'subscriptions', 'webhooks'],
  env: { WEBHOOK_MAX_ENDPOINTS: '3' },
  seed: {
    clients: [
      { clientId: 'acme', grantorId: 'A' },
      { clientId: 'globex', grantorId: 'B' },
    ],
    users: ['alice', 'u'],
    skus: { news: { name: 'News' } },
  },
  collect: { [Exchanges.rightsEvents]: 'right.created' },
});
beforeAll(fx.start);
afterAll(fx.stop);

const acme = TestSystem.clientAuthorization('acme');
const globex = TestSystem.clientAuthorization('globex');
const admin = () => fx.system.adminHeaders().authorization!;
const inAMinute = () => new Date(Math.ceil(Date.now() / 1000) * 1000 + 60_000).toISOString().replace('.000Z', 'Z');

describe('exact routes: another letter case, a trailing slash or an encoded letter reaches nothing', () => {
  it('when a non-admin client calls admin operations by paths in other letter cases, then 404 and nothing changes', async () => {
    const attempts: Array<[string, string, unknown?]> = [
      ['PUT', '/Admin/clients/pwn', { secret: 'pwned-secret-0123', grantorId: 'X', admin: true }],
      ['PUT', '/admin/clients/pwn/', { secret: 'pwned-secret-0123', grantorId: 'X', admin: true }],
      ['PUT', '/%61dmin/clients/pwn', { secret: 'pwned-secret-0123', grantorId: 'X', admin: true }],
      ['GET', '/ADMIN/clients'],
      ['GET', '/admin/Clients'],
      ['DELETE', '/Admin/clients/globex'],
      ['PUT', '/Id/users/x'],
      ['DELETE', '/ID/users/alice'],
      ['DELETE', '/id/users//alice'],
      ['GET', '/Catalog/skus'],
      ['POST', '/Admin/right-token-keys'],
    ];
    for (const [method, path, body] of attempts) {
      const response = await fx.call(method, path, acme, body);
      expect(response.status, `${method} ${path}`).toBe(404);
      expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    }
    const clients = (await (await fx.call('GET', '/admin/clients', admin())).json()) as {
      clients: Array<{ clientId: string; admin: boolean }>;
    };
    expect(clients.clients.map((client) => client.clientId).sort()).toEqual(['acme', 'globex', 'test-admin']);
    expect((await fx.call('GET', '/id/users/alice', admin())).status).toBe(200);
    expect((await fx.call('GET', '/id/users/x', admin())).status).toBe(404);
  });

  it('when a path is unknown, then 404 before any credential is asked; a known path with another method is 405', async () => {
    const anonymous = await fetch(`${fx.system.gatewayUrl}/Admin/clients`);
    expect(anonymous.status).toBe(404);
    expect(anonymous.headers.get('www-authenticate')).toBeNull();
    const other = await fetch(`${fx.system.gatewayUrl}/admin/clients`, { method: 'POST' });
    expect(other.status).toBe(405);
    expect(other.headers.get('allow')).toBe('GET, HEAD');
  });

  it('when a path has malformed percent-encoding, then 400 text/plain, with credentials or without', async () => {
    for (const authorization of [acme, '']) {
      const response = await fx.call('GET', '/id/users/u/rights/%ZZ', authorization);
      expect(response.status).toBe(400);
      expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
      expect(await response.text()).toMatch(/percent-encoding/);
    }
  });
});

describe('bounds: one request never makes unbounded work', () => {
  const subscribe = (timeSpec: string, rightsSpec: object[] = [{ sku: 'news' }]) =>
    fx.call('POST', '/id/users/alice/subs', acme, { grantorId: 'A', timeSpec, rightsSpec });

  it('when a time spec leaves the years 0001-9999, has a period under SUBSCRIPTION_MIN_PERIOD or needs over 1,000 rights a renewal, then 400 naming the field, and nothing is stored', async () => {
    const refused: Array<[string, object[] | undefined, RegExp]> = [
      [`R/${inAMinute()}/P300000Y`, undefined, /^timeSpec: .*representable range/],
      [`R/${inAMinute()}/PT0.001S`, undefined, /^timeSpec: the period must be at least PT1S/],
      [`R1000000/${inAMinute()}/P1Y`, undefined, /^timeSpec: its last period .*representable range/],
      ['R/9999-12-31T23:59:00Z/P1D', undefined, /^timeSpec: its first period .*representable range/],
      [
        `R/${inAMinute()}/PT1S`,
        [{ sku: 'news', timeSpec: 'P1D' }],
        /^rightsSpec: one renewal could issue 86400 rights/,
      ],
      [
        `R/${inAMinute()}/P1D`,
        [{ sku: 'news', timeSpec: 'P30000Y' }],
        /^rightsSpec\[0\]\.timeSpec: .*representable range/,
      ],
    ];
    for (const [timeSpec, rightsSpec, message] of refused) {
      const response = await subscribe(timeSpec, rightsSpec);
      expect(response.status, timeSpec).toBe(400);
      expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
      expect(await response.text()).toMatch(message);
    }
    const listed = await fx.call('GET', '/id/users/alice/subs?grantorid=A', acme);
    expect(((await listed.json()) as { subscription: unknown[] }).subscription).toEqual([]);
    // The same bounds hold for a right's interval.
    const right = await fx.call('POST', '/id/users/alice/rights', acme, {
      sku: 'news',
      grantorId: 'A',
      timeInterval: `${inAMinute()}/P300000Y`,
    });
    expect(right.status).toBe(400);
    expect(await right.text()).toMatch(/^timeInterval: its end .*representable range/);
  });

  it('when a subscription keeps within the bounds at their edge, then it is created', async () => {
    expect((await subscribe(`R/${inAMinute()}/PT1S`, [{ sku: 'news', timeSpec: 'PT1000S' }])).status).toBe(201);
    expect((await subscribe(`R7000/${inAMinute()}/P1Y`)).status).toBe(201);
  });
});

describe('payloads round-trip any JSON (docs/api.md)', () => {
  it('when a payload has keys a database treats specially, then it is stored and returned exactly, in the answer, on reads and in its event', async () => {
    const payloads: unknown[] = [
      { $gt: 1 },
      { 'a.b': 1 },
      { _bsontype: 'Code', code: 'x' },
      { 'a\u0000b': 'nul in a key', text: 'nul \u0000 in a value' },
      [1, { $in: [] }],
      JSON.parse('{"__proto__": {"admin": true}, "nested": {"$set": {"x.y": null}}}') as unknown,
      'a plain string',
      42,
    ];
    for (const payload of payloads) {
      const created = await fx.call('POST', '/id/users/alice/rights', acme, {
        sku: 'news',
        grantorId: 'A',
        timeInterval: `${inAMinute()}/P1D`,
        payload,
      });
      expect(created.status, JSON.stringify(payload)).toBe(201);
      const right = (await created.json()) as { rightId: string; payload: unknown };
      expect(right.payload).toStrictEqual(payload);
      const read = await fx.call('GET', `/id/users/alice/rights/${right.rightId}`, acme);
      expect(((await read.json()) as { payload: unknown }).payload).toStrictEqual(payload);
      const ofRight = (messages: CollectedMessage[]) => messages.find((one) => one.body.subject === right.rightId);
      const event = ofRight(await fx.events(Exchanges.rightsEvents).waitFor((messages) => !!ofRight(messages)));
      expect(event!.body.data!.payload).toStrictEqual(payload);
    }
  });

  it('when free text holds a NUL character, which the database cannot store, then 400 naming the field', async () => {
    const response = await fx.call('POST', '/id/users/alice/rights', acme, {
      sku: 'news',
      grantorId: 'A',
      timeInterval: `${inAMinute()}/P1D`,
      grantorContext: 'ctx\u0000',
    });
    expect(response.status).toBe(400);
    expect(await response.text()).toMatch(/^grantorContext: must not contain the NUL character/);
  });

  it('when a payload holds a number or text that could not come back as sent, then 400 naming the field, and nothing is created; numbers written otherwise come back as JavaScript writes them', async () => {
    const create = (payload: string) =>
      fetch(`${fx.system.gatewayUrl}/id/users/alice/rights`, {
        method: 'POST',
        headers: { authorization: acme, 'content-type': 'application/json' },
        body: `{"sku":"news","grantorId":"A","timeInterval":"${inAMinute()}/P1D","payload":${payload}}`,
      });
    const before = await fx.call('GET', '/id/users/alice/rights?grantorId=A&limit=1000', acme);
    const count = ((await before.json()) as { right: unknown[] }).right.length;
    const refused: Array<[string, RegExp]> = [
      ['{"big":1e999999}', /^payload\.big: 1e999999 is beyond what a number can hold/],
      [`{"long":${'9'.repeat(5_001)}}`, /^payload\.long: 9{20}…\(5001 characters\) is beyond/],
      [
        '{"id":12345678901234567890}',
        /^payload\.id: 12345678901234567890 has more significant digits .*12345678901234567000/,
      ],
      ['[1, -0]', /^payload\.1: -0 cannot be kept apart from 0/],
      ['{"text":"\\ud800 alone"}', /^payload\.text: holds a lone surrogate/],
    ];
    for (const [payload, message] of refused) {
      const response = await create(payload);
      expect(response.status, payload.slice(0, 40)).toBe(400);
      expect(await response.text()).toMatch(message);
    }
    const after = await fx.call('GET', '/id/users/alice/rights?grantorId=A&limit=1000', acme);
    expect(((await after.json()) as { right: unknown[] }).right).toHaveLength(count);
    // The same numbers, written otherwise: kept.
    const kept = await create('{"a":1.0,"b":1e2,"c":0.1,"d":-2.50,"e":9007199254740991,"f":"\\ud83d\\ude00"}');
    expect(kept.status).toBe(201);
    expect(((await kept.json()) as { payload: unknown }).payload).toStrictEqual({
      a: 1,
      b: 100,
      c: 0.1,
      d: -2.5,
      e: 9007199254740991,
      f: '😀',
    });
  });
});

describe('per-grantor limits (docs/api.md)', () => {
  it('when a grantor has WEBHOOK_MAX_ENDPOINTS endpoints, then another is 409, and other grantors are not affected', async () => {
    const register = (authorization: string) =>
      fx.call('POST', '/webhooks/endpoints', authorization, { url: 'http://127.0.0.1:9/hook' });
    for (let i = 0; i < 3; i++) expect((await register(acme)).status).toBe(201);
    const over = await register(acme);
    expect(over.status).toBe(409);
    expect(over.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await over.text()).toMatch(/at most 3 webhook endpoints/);
    expect((await register(globex)).status).toBe(201);
  });
});

describe('nothing internal in error bodies', () => {
  let blackhole: Server;
  let blackholePort: number;
  let closedPort: number;

  beforeAll(async () => {
    // A "service" that accepts connections and never answers, and a port nothing listens on.
    blackhole = createServer(() => undefined);
    blackholePort = await freePort();
    await new Promise<void>((resolve) => blackhole.listen(blackholePort, '127.0.0.1', resolve));
    closedPort = await freePort();
  });
  afterAll(() => {
    blackhole?.close();
  });

  it('when a service does not answer in time or at all, then 504 or 503 without its host or port', async () => {
    const system = await TestSystem.start({
      name: 'gateway_edge_upstreams',
      backends: [],
      env: {
        RIGHTS_URL: `http://127.0.0.1:${blackholePort}`,
        CATALOG_URL: `http://127.0.0.1:${closedPort}`,
        UPSTREAM_TIMEOUT_MS: '300',
      },
    });
    try {
      const slow = await fetch(`${system.gatewayUrl}/.well-known/jwks.json`);
      expect(slow.status).toBe(504);
      const down = await fetch(`${system.gatewayUrl}/catalog/skus`, { headers: system.adminHeaders() });
      expect(down.status).toBe(503);
      expect(down.headers.get('retry-after')).toBe('5');
      for (const body of [await slow.text(), await down.text()]) {
        expect(body).not.toMatch(/127\.0\.0\.1|localhost/);
        expect(body).not.toContain(String(blackholePort));
        expect(body).not.toContain(String(closedPort));
        expect(body).not.toMatch(/ECONN|at .*\.js/);
      }
    } finally {
      await system.stop();
    }
  });
});

/** One request exactly as written, over a socket of its own: the request line and headers as given. */
function raw(target: string, headers: Record<string, string>, body: Buffer | string = ''): Promise<RawAnswer> {
  const gateway = new URL(fx.system.gatewayUrl);
  return new Promise((resolve, reject) => {
    const request = http.request(
      { host: gateway.hostname, port: gateway.port, method: body.length ? 'POST' : 'GET', path: target, headers },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({
            status: response.statusCode!,
            headers: response.headers,
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}
interface RawAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

describe('a request target never chooses a host', () => {
  it('when a list is asked for in absolute form naming another host, then its Link names PUBLIC_BASE_URL', async () => {
    for (let i = 0; i < 2; i += 1)
      await fx.call('POST', '/id/users/u/rights', acme, {
        sku: 'news',
        grantorId: 'A',
        timeInterval: `${inAMinute()}/P1D`,
      });
    const answer = await raw('http://evil.example/id/users/u/rights?limit=1&grantorId=A', {
      authorization: acme,
      host: 'evil.example',
    });
    expect(answer.status).toBe(200);
    expect(answer.headers.link).toMatch(
      new RegExp(`^<${fx.system.gatewayUrl}/id/users/u/rights\\?limit=1&grantorId=A&cursor=[^>]+>; rel="next"$`),
    );
    expect(answer.headers.link).not.toMatch(/evil/);
  });
});

describe('bad bodies are the client’s: never a 500 (docs/security.md)', () => {
  const rightBody = (payload: unknown) =>
    JSON.stringify({ sku: 'news', grantorId: 'A', timeInterval: `${inAMinute()}/P1D`, payload });
  const rightsOfAlice = async () =>
    ((await (await fx.call('GET', '/id/users/alice/rights?grantorId=A&limit=1000', acme)).json()) as { right: [] })
      .right.length;

  it('when a payload nests 7,000 levels within 16 KiB, then 400 naming the field; 64 levels are stored', async () => {
    const before = await rightsOfAlice();
    const deep = `${'['.repeat(7000)}${']'.repeat(7000)}`;
    const refused = await raw(
      '/id/users/alice/rights',
      { authorization: acme, 'content-type': 'application/json' },
      `{"sku":"news","grantorId":"A","timeInterval":"${inAMinute()}/P1D","payload":${deep}}`,
    );
    expect(refused.status).toBe(400);
    expect(refused.headers['content-type']).toMatch(/^text\/plain/);
    expect(refused.body.trim()).toBe('payload: nests deeper than 64 levels');
    const justOver = await raw(
      '/id/users/alice/rights',
      { authorization: acme, 'content-type': 'application/json' },
      rightBody(JSON.parse(`${'['.repeat(65)}${']'.repeat(65)}`)),
    );
    expect(justOver.status).toBe(400);
    expect(await rightsOfAlice()).toBe(before);
    const atTheBound = JSON.parse(`${'['.repeat(64)}${']'.repeat(64)}`) as unknown;
    const stored = await raw(
      '/id/users/alice/rights',
      { authorization: acme, 'content-type': 'application/json' },
      rightBody(atTheBound),
    );
    expect(stored.status).toBe(201);
    expect((JSON.parse(stored.body) as { payload: unknown }).payload).toEqual(atTheBound);
  });

  it('when a body comes in a Content-Encoding, real or not, then 415 text/plain and nothing is stored', async () => {
    const before = await rightsOfAlice();
    const body = rightBody(null);
    for (const [encoding, sent] of [
      ['gzip', Buffer.from(body)],
      ['deflate', Buffer.from(body)],
      ['br', Buffer.from(body)],
      ['gzip', gzipSync(body)],
      ['x-unknown', Buffer.from(body)],
    ] as const) {
      const answer = await raw(
        '/id/users/alice/rights',
        { authorization: acme, 'content-type': 'application/json', 'content-encoding': encoding },
        sent,
      );
      expect(answer.status, encoding).toBe(415);
      expect(answer.headers['content-type']).toMatch(/^text\/plain/);
    }
    expect(await rightsOfAlice()).toBe(before);
  });
});

describe('exposure: what is not the public API is not on the public port, nor beyond this machine', () => {
  it("when /metrics is asked of the gateway's public port, then 404; its own METRICS_PORT serves it", async () => {
    const publicPort = await fetch(`${fx.system.gatewayUrl}/metrics`);
    expect(publicPort.status).toBe(404);
    expect(await publicPort.text()).not.toMatch(/entitlements_/);
    const own = await fetch(fx.system.service('gateway').metricsUrl);
    expect(own.status).toBe(200);
    expect(await own.text()).toMatch(/^# HELP /m);
  });

  it('when a service is called with an internal token addressed to another service, then it refuses it', async () => {
    const signer = new InternalTokenSigner(TEST_INTERNAL_SECRET, 'attacker');
    const admin = { clientId: 'x', grantorId: null, admin: true, scheme: 'basic' as const, scopes: [], subject: null };
    const read = async (audience: string) =>
      (
        await fetch(`${fx.system.service('rights').url}/id/users/alice/rights?grantorId=A`, {
          headers: { 'x-internal-token': await signer.tokenFor(admin, audience) },
        })
      ).status;
    expect(await read('catalog')).toBe(401);
    expect(await read('webhooks')).toBe(401);
    expect(await read('rights')).toBe(200);
  });

  it('when a service is reached at an address of this machine other than loopback, then nothing listens there', async () => {
    const outward = Object.values(networkInterfaces())
      .flat()
      .find((one) => one && one.family === 'IPv4' && !one.internal);
    // A machine with only loopback has nothing to test here; this one has an outward address.
    expect(outward, 'an outward IPv4 address of this machine').toBeDefined();
    const connects = (host: string, port: number) =>
      new Promise<boolean>((resolve) => {
        const socket = connect({ host, port });
        const settle = (connected: boolean) => {
          socket.destroy();
          resolve(connected);
        };
        socket.once('connect', () => settle(true)).once('error', () => settle(false));
        socket.setTimeout(2_000, () => settle(false)); // a bound, not a wait: no answer by then is the finding
      });
    const rights = fx.system.service('rights');
    expect(await connects('127.0.0.1', rights.port)).toBe(true);
    expect(await connects(outward!.address, rights.port)).toBe(false);
  });
});
