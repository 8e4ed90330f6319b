import { InternalTokenSigner, type Principal } from '@rs/http';
import { TEST_INTERNAL_SECRET, systemFixture } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const fx = systemFixture({ name: 'catalog_api', backends: ['catalog'], collect: { 'catalog.events': '#' } });
beforeAll(fx.start);
afterAll(fx.stop);

const put = (sku: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${fx.system.gatewayUrl}/catalog/skus/${sku}`, {
    method: 'PUT',
    headers: fx.system.adminHeaders({ 'content-type': 'application/json', ...headers }),
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
const get = (path: string, headers: Record<string, string> = {}) =>
  fetch(`${fx.system.gatewayUrl}${path}`, { headers: fx.system.adminHeaders(headers) });

describe('catalog admin API through the gateway', () => {
  it('when a SKU is put, read, changed and deleted, then each step answers as docs/operations.md says and emits its event', async () => {
    const created = await put('news-daily', { name: 'Daily news', announceOnUsage: true });
    expect(created.status).toBe(201);
    expect(created.headers.get('content-type')).toMatch(/^application\/json/);
    expect(created.headers.get('etag')).toBe('"1"');
    expect(created.headers.get('location')).toBe(`${fx.system.gatewayUrl}/catalog/skus/news-daily`);
    const body = (await created.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      sku: 'news-daily',
      name: 'Daily news',
      serviceProviderId: null,
      announceOnUsage: true,
      grantorIds: null,
      generation: '1',
    });

    const read = await get('/catalog/skus/news-daily');
    expect(read.status).toBe(200);
    expect(await read.json()).toEqual(body);

    const [upserted] = await fx.events('catalog.events').waitFor((m) => m.some((e) => e.body.subject === 'news-daily'));
    expect(upserted!.routingKey).toBe('sku.upserted');
    expect(upserted!.body).toMatchObject({
      specversion: '1.0',
      type: 'sku.upserted',
      source: '/catalog',
      subject: 'news-daily',
      datacontenttype: 'application/json',
      data: { ...body, sequence: 1 },
    });
    expect(upserted!.body.time).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(upserted!.properties.messageId).toBe(upserted!.body.id);
    expect(upserted!.properties.type).toBe('sku.upserted');
    expect(upserted!.properties.contentType).toMatch(/^application\/cloudevents\+json/);
    expect(upserted!.properties.deliveryMode).toBe(2);
    expect(upserted!.properties.timestamp).toBeGreaterThan(0);

    // The same PUT again changes nothing and emits nothing.
    expect((await put('news-daily', { name: 'Daily news', announceOnUsage: true })).status).toBe(204);
    const changed = await put('news-daily', { name: 'Daily news', serviceProviderId: 'newsroom' });
    expect(changed.status).toBe(204);
    expect(changed.headers.get('etag')).toBe('"2"');
    expect(await (await get('/catalog/skus/news-daily')).json()).toMatchObject({
      serviceProviderId: 'newsroom',
      announceOnUsage: false,
      grantorIds: null,
      generation: '2',
    });
    // Who may grant it besides its provider: kept sorted, once each; the same list again changes nothing.
    expect((await put('news-daily', { serviceProviderId: 'newsroom', grantorIds: ['b', 'a', 'b'] })).status).toBe(204);
    expect(await (await get('/catalog/skus/news-daily')).json()).toMatchObject({
      grantorIds: ['a', 'b'],
      generation: '3',
    });
    expect((await put('news-daily', { serviceProviderId: 'newsroom', grantorIds: ['a', 'b'] })).status).toBe(204);
    expect(await (await get('/catalog/skus/news-daily')).json()).toMatchObject({ generation: '3' });

    const removed = await fetch(`${fx.system.gatewayUrl}/catalog/skus/news-daily`, {
      method: 'DELETE',
      headers: fx.system.adminHeaders(),
    });
    expect(removed.status).toBe(204);
    const gone = await get('/catalog/skus/news-daily');
    expect(gone.status).toBe(404);
    expect(gone.headers.get('content-type')).toMatch(/^text\/html/);

    const all = await fx
      .events('catalog.events')
      .waitFor((m) => m.filter((e) => e.body.subject === 'news-daily').length >= 4);
    const ofSku = all.filter((e) => e.body.subject === 'news-daily');
    expect(ofSku.map((e) => [e.routingKey, e.body.data?.sequence])).toEqual([
      ['sku.upserted', 1],
      ['sku.upserted', 2],
      ['sku.upserted', 3],
      ['sku.deleted', 4],
    ]);

    // Put again after delete: created anew, and its generation keeps growing.
    const revived = await put('news-daily', {});
    expect(revived.status).toBe(201);
    expect(((await revived.json()) as { generation: string }).generation).toBe('5');
  });

  it('when SKUs are listed with a limit, then a Link header leads to the next page', async () => {
    for (const sku of ['list-a', 'list-b', 'list-c']) expect((await put(sku, {})).status).toBe(201);
    const first = await get('/catalog/skus?limit=2');
    expect(first.status).toBe(200);
    const page1 = (await first.json()) as { skus: Array<{ sku: string }> };
    expect(page1.skus).toHaveLength(2);
    const link = first.headers.get('link');
    expect(link).toMatch(/^<http:\/\/127\.0\.0\.1:\d+\/catalog\/skus\?limit=2&cursor=[A-Za-z0-9_-]+>; rel="next"$/);
    const next = /^<([^>]+)>/.exec(link!)![1]!;
    const page2 = (await (await fetch(next, { headers: fx.system.adminHeaders() })).json()) as {
      skus: Array<{ sku: string }>;
    };
    const names = [...page1.skus, ...page2.skus].map((s) => s.sku);
    expect(new Set(names).size).toBe(names.length);
    expect(names).toEqual(expect.arrayContaining(['list-a', 'list-b', 'list-c']));
    expect((await get('/catalog/skus?limit=0')).status).toBe(400);
    expect((await get('/catalog/skus?cursor=%%%')).status).toBe(400);
  });

  it('when If-Match names another generation, then the change is refused with 412 and nothing changes', async () => {
    expect((await put('guarded', { name: 'one' })).status).toBe(201);
    const refused = await put('guarded', { name: 'two' }, { 'if-match': '"7"' });
    expect(refused.status).toBe(412);
    expect(refused.headers.get('content-type')).toMatch(/^text\/plain/);
    expect((await put('guarded', { name: 'two' }, { 'if-match': '"1"' })).status).toBe(204);
    expect(await (await get('/catalog/skus/guarded')).json()).toMatchObject({ name: 'two', generation: '2' });
  });
});

describe('bad input to the catalog', () => {
  const cases: Array<[string, () => Promise<Response>, number, RegExp]> = [
    ['malformed JSON', () => put('bad-1', '{"name":'), 400, /not valid JSON/],
    [
      'a body that is not JSON',
      () =>
        fetch(`${fx.system.gatewayUrl}/catalog/skus/bad-2`, {
          method: 'PUT',
          headers: fx.system.adminHeaders({ 'content-type': 'text/plain' }),
          body: 'name=x',
        }),
      415,
      /application\/json/,
    ],
    ['an unknown field', () => put('bad-3', { name: 'x', price: 3 }), 400, /unknown field\(s\): price/],
    ['a field of the wrong type', () => put('bad-4', { announceOnUsage: 'yes' }), 400, /announceOnUsage:/],
    ['a JSON array', () => put('bad-5', [1, 2]), 400, /expected object/],
    ['an oversized body', () => put('bad-6', { name: 'x'.repeat(20_000) }), 413, /too large/],
    ['a SKU name that is not a simple token', () => put('bad%20name', {}), 400, /^sku: must be/],
    ['a SKU name that is too long', () => put('a'.repeat(65), {}), 400, /^sku: must be/],
    [
      'a method the resource does not have',
      () => fetch(`${fx.system.gatewayUrl}/catalog/skus/bad-7`, { method: 'POST', headers: fx.system.adminHeaders() }),
      405,
      /allowed: GET, PUT, DELETE/,
    ],
  ];

  for (const [what, send, status, message] of cases) {
    it(`when the request has ${what}, then it is ${status} text/plain and nothing is written`, async () => {
      const response = await send();
      expect(response.status).toBe(status);
      expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
      expect(await response.text()).toMatch(message);
      const list = (await (await get('/catalog/skus?limit=1000')).json()) as { skus: Array<{ sku: string }> };
      expect(list.skus.map((s) => s.sku).filter((s) => s.startsWith('bad'))).toEqual([]);
    });
  }

  it('when the client asks for problem+json, then errors come as RFC 9457 documents', async () => {
    const response = await put('bad-8', { nope: 1 }, { accept: 'application/problem+json' });
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(await response.json()).toEqual({
      type: 'about:blank',
      title: 'Bad Request',
      status: 400,
      detail: 'unknown field(s): nope',
      code: 'invalid',
    });
  });
});

describe('who may call', () => {
  it('when there are no or wrong credentials, then the gateway answers 401 with the Basic challenge', async () => {
    for (const authorization of [
      undefined,
      'Basic Zm9vOmJhcg==',
      'Basic !!!',
      `Basic ${Buffer.from('test-admin:wrong').toString('base64')}`,
    ]) {
      const response = await fetch(`${fx.system.gatewayUrl}/catalog/skus`, {
        headers: authorization ? { authorization } : {},
      });
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe('Basic realm="rights", charset="UTF-8"');
      expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    }
  });

  it('when a request reaches the catalog without the internal token, or with a forged one, then it is refused', async () => {
    const catalog = fx.system.service('catalog').url;
    const bare = await fetch(`${catalog}/catalog/skus`);
    expect(bare.status).toBe(401);
    const forged = await fetch(`${catalog}/catalog/skus`, {
      headers: { 'x-internal-token': 'eyJhbGciOiJIUzI1NiJ9.eyJhZG0iOnRydWV9.c2lnbmF0dXJl' },
    });
    expect(forged.status).toBe(401);
    const putDirect = await fetch(`${catalog}/catalog/skus/direct`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(putDirect.status).toBe(401);
    expect((await get('/catalog/skus/direct')).status).toBe(404);
  });

  it('when a valid internal token carries a non-admin principal, then the catalog refuses writes, and reads unless it is a service', async () => {
    const catalog = fx.system.service('catalog').url;
    const signer = new InternalTokenSigner(TEST_INTERNAL_SECRET, 'test');
    const tokenFor = (principal: Partial<Principal>) =>
      signer.tokenFor(
        {
          clientId: 'c',
          grantorId: 'g',
          admin: false,
          scheme: 'basic',
          scopes: [],
          subject: null,
          ...principal,
        },
        'catalog',
      );
    const call = async (method: string, principal: Partial<Principal>) =>
      fetch(`${catalog}/catalog/skus/internal-check`, {
        method,
        headers: { 'x-internal-token': await tokenFor(principal), 'content-type': 'application/json' },
        body: method === 'PUT' ? '{}' : undefined,
      });
    const grantorPut = await call('PUT', {});
    expect(grantorPut.status).toBe(401);
    expect(grantorPut.headers.get('www-authenticate')).toBe('Basic realm="rights", charset="UTF-8"');
    expect((await call('GET', {})).status).toBe(401);
    expect((await call('PUT', { scheme: 'service', admin: true })).status).toBe(401);
    expect((await call('PUT', { admin: true })).status).toBe(201);
    expect((await call('GET', { scheme: 'service' })).status).toBe(200);
  });

  it('when the service that owns a path is not running, then the gateway answers 503 with Retry-After', async () => {
    expect(
      (await fetch(`${fx.system.gatewayUrl}/id/users/alice`, { method: 'PUT', headers: fx.system.adminHeaders() }))
        .status,
    ).toBe(201);
    const response = await fetch(`${fx.system.gatewayUrl}/id/users/alice/rights?grantorId=g`, {
      headers: fx.system.adminHeaders(),
    });
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
  });

  it('when a path belongs to no service, then the gateway answers 404 text/html', async () => {
    const response = await fetch(`${fx.system.gatewayUrl}/nothing/here`, { headers: fx.system.adminHeaders() });
    expect(response.status).toBe(404);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
  });

  it('when the OpenAPI document is asked of the gateway, then it is served without credentials', async () => {
    const response = await fetch(`${fx.system.gatewayUrl}/openapi.json`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    const document = (await response.json()) as { openapi: string; paths: Record<string, unknown> };
    expect(document.openapi).toBe('3.1.0');
    expect(Object.keys(document.paths)).toContain('/catalog/skus/{sku}');
  });

  it('when health, readiness and metrics are asked, then every service answers without a token', async () => {
    const catalog = fx.system.service('catalog').url;
    expect(await (await fetch(`${catalog}/readyz`)).json()).toEqual({
      status: 'ready',
      checks: { mongodb: true, rabbitmq: true },
    });
    const metrics = await (await fetch(`${catalog}/metrics`)).text();
    expect(metrics).toMatch(/http_request_duration_seconds_count\{[^}]*route="\/catalog\/skus\/:sku"/);
    expect(metrics).toMatch(/amqp_messages_published_total\{exchange="catalog.events"/);
    // The gauge is sampled as the relay goes: once the earlier tests' writes are out, it reads 0.
    await expect
      .poll(async () => (await fetch(`${catalog}/metrics`)).text())
      .toMatch(/outbox_pending_documents\{collection="skus"[^}]*\} 0/);
  });
});
