import type { Entitlement, Right } from '@rs/contracts';
import { clientsOf, systemFixture, TestSystem } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

// docs/api.md "Adjustments" and "Entitlements of a user": what a support agent does beyond the
// rest of the API, through the gateway.
const fx = systemFixture({
  name: 'support_actions',
  backends: ['catalog', 'rights', 'subscriptions'],
  bearer: true,
  // The race below serializes 60 changes of one right: on a loaded machine the last waits longer
  // than the gateway's 10 s default, and a 504 (outcome unknown) is not what the test is about.
  env: { UPSTREAM_TIMEOUT_MS: '60000' },
  collect: { 'rights.events': 'right.adjusted' },
  seed: {
    clients: clientsOf({ 'grantor-a': 'A', 'grantor-b': 'B', 'provider-p': 'P' }),
    users: ['alice', 'bob'],
    skus: { calls: { serviceProviderId: 'P', grantorIds: ['A', 'B'] }, news: {}, video: {} },
  },
});
beforeAll(fx.start);
afterAll(fx.stop);

const A = TestSystem.clientAuthorization('grantor-a');
const B = TestSystem.clientAuthorization('grantor-b');
const admin = () => fx.system.adminHeaders().authorization!;
const because = { 'x-audit-reason': 'goodwill after an outage' };
const now = () => new Date(Date.now() - 60_000).toISOString().replace(/\.\d{3}Z$/, 'Z');

async function grant(user: string, body: object, authorization = A): Promise<Right> {
  const response = await fx.call('POST', `/id/users/${user}/rights`, authorization, {
    sku: 'calls',
    grantorId: 'A',
    timeInterval: `${now()}/P30D`,
    state: 'ACTIVE',
    ...body,
  });
  expect(response.status, await response.clone().text()).toBe(201);
  return (await response.json()) as Right;
}
const adjust = (right: Right, amount: unknown, authorization = A, headers: Record<string, string> = {}) =>
  fx.call('POST', `/id/users/${right.userId}/rights/${right.rightId}/adjustments`, authorization, { amount }, headers);
const check = async (user: string, sku: string, authorization = A) =>
  (await (await fx.call('GET', `/id/users/${user}/entitlements/${sku}`, authorization)).json()) as Entitlement;

describe('adjustments (docs/api.md "Adjustments")', () => {
  it('when units are added and taken away, then remaining follows, quantity rises above it, what is held stays, and each is right.adjusted with the units and a history entry', async () => {
    const right = await grant('alice', { quantity: 100 });
    const topUp = await adjust(right, 30);
    expect(topUp.status, await topUp.clone().text()).toBe(200);
    expect(topUp.headers.get('etag')).toBe('"2"');
    expect(await topUp.json()).toMatchObject({ rightId: right.rightId, quantity: 130, remaining: 130 });
    expect((await check('alice', 'calls')).balance).toBe(130);

    // 10 units held by a reservation are promised: taking everything away leaves them.
    const reserved = await fx.call('POST', '/id/users/alice/entitlements/calls/reservations', A, { amount: 10 });
    expect(reserved.status).toBe(201);
    const taken = await adjust(right, -1000, admin());
    expect(await taken.json()).toMatchObject({ quantity: 130, remaining: 10 });
    // Nothing left to take: unchanged, no event.
    expect(await (await adjust(right, -5)).json()).toMatchObject({ remaining: 10, generation: '4' });

    const events = await fx
      .events('rights.events')
      .waitFor((messages) => messages.filter((message) => message.body.subject === right.rightId).length >= 2);
    expect(
      events.filter((message) => message.body.subject === right.rightId).map((message) => message.body.data?.amount),
    ).toEqual([30, -120]);
    const history = (await (await fx.call('GET', `/id/users/alice/rights/${right.rightId}/history`, A)).json()) as {
      history: Array<{ type: string; changes: Record<string, unknown> }>;
    };
    expect(history.history.filter((entry) => entry.type === 'right.adjusted').map((entry) => entry.changes)).toEqual([
      { quantity: [100, 130], remaining: [100, 130] },
      { remaining: [130, 10] },
    ]);
  });

  it('when adjustments race with consumptions, then every unit is counted once', async () => {
    // Half the units used first, so that no adjustment below takes the balance above the quantity.
    const right = await grant('bob', { quantity: 200 });
    expect((await fx.call('POST', '/id/users/bob/entitlements/calls/consumption', A, { amount: 100 })).status).toBe(
      200,
    );
    // A client told the right is busy (503, Retry-After) sends the same change again.
    const untilDone = async (send: () => Promise<Response>) => {
      for (;;) {
        const response = await send();
        if (response.status !== 503) return response.status;
        await response.body?.cancel();
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    };
    const statuses = await Promise.all([
      ...Array.from({ length: 40 }, () =>
        untilDone(() => fx.call('POST', '/id/users/bob/entitlements/calls/consumption', A, { amount: 2 })),
      ),
      ...Array.from({ length: 20 }, () => untilDone(() => adjust(right, 3))),
    ]);
    expect(new Set(statuses)).toEqual(new Set([200]));
    const after = (await (await fx.call('GET', `/id/users/bob/rights/${right.rightId}`, A)).json()) as Right;
    expect([after.remaining, after.quantity]).toEqual([100 - 40 * 2 + 20 * 3, 200]);
  });

  it('when who may not adjust tries, or the amount or the right is wrong, then the answer says so and nothing changes', async () => {
    const right = await grant('alice', { quantity: 5 });
    const plain = await grant('alice', {});
    const user = `Bearer ${await fx.issuer.token('grantor-a', 'alice', { scope: 'id.user.right.use id.user.right.read' })}`;
    const reader = `Bearer ${await fx.issuer.staffToken('rita', 'read', ['A'])}`;
    const otherStaff = `Bearer ${await fx.issuer.staffToken('otto', 'write', ['B'])}`;
    expect((await adjust(right, 1, B)).status).toBe(401);
    expect((await adjust(right, 1, TestSystem.clientAuthorization('provider-p'))).status).toBe(401);
    expect((await adjust(right, 1, user)).status).toBe(401);
    expect((await adjust(right, 1, reader, because)).status).toBe(401);
    // Another grantor's right is not there for a staff member, as an unknown id is not.
    expect((await adjust(right, 1, otherStaff, because)).status).toBe(404);
    for (const amount of [0, 1.5, '3', null, 1_000_000_001])
      expect((await adjust(right, amount)).status, String(amount)).toBe(400);
    expect((await adjust(plain, 1)).status).toBe(409);
    expect((await adjust({ ...right, rightId: '0'.repeat(26) }, 1)).status).toBe(404);
    const staffWrite = await adjust(right, 2, `Bearer ${await fx.issuer.staffToken('sam', 'write', ['A'])}`, because);
    expect(await staffWrite.json()).toMatchObject({ remaining: 7, quantity: 7 });
  });
});

describe('the entitlements of a user (docs/api.md "Entitlements of a user")', () => {
  it('when a user holds rights of several SKUs and grantors, then the list answers the check of each SKU the caller can see, in SKU order', async () => {
    expect((await fx.call('GET', '/id/users/nobody/entitlements', A)).status).toBe(404);
    expect((await fx.call('PUT', '/id/users/dana', admin())).status).toBe(201);
    await grant('dana', { sku: 'video' });
    await grant('dana', { sku: 'calls', quantity: 40 });
    await grant('dana', { sku: 'news', grantorId: 'B' }, B);
    await grant('dana', { sku: 'calls', grantorId: 'B', quantity: 7 }, B);
    const list = async (authorization: string) => {
      const response = await fx.call('GET', '/id/users/dana/entitlements', authorization);
      expect(response.status).toBe(200);
      expect(response.headers.get('cache-control')).toBe('no-store');
      return ((await response.json()) as { entitlements: Entitlement[] }).entitlements;
    };
    const ofA = await list(A);
    expect(ofA.map((entry) => [entry.sku, entry.entitled, entry.balance])).toEqual([
      ['calls', true, 40],
      ['video', true, null],
    ]);
    // The check and the list read one projection, which the rights' events may still be settling.
    await vi.waitFor(async () => {
      for (const entry of await list(A)) expect(entry).toEqual(await check('dana', entry.sku));
    });
    expect((await list(admin())).map((entry) => [entry.sku, entry.balance])).toEqual([
      ['calls', 47],
      ['news', null],
      ['video', null],
    ]);
    // The provider sees what it serves; the user's own app of B what B granted.
    expect((await list(TestSystem.clientAuthorization('provider-p'))).map((entry) => entry.sku)).toEqual(['calls']);
    const app = `Bearer ${await fx.issuer.token('grantor-b', 'dana', { scope: 'id.user.right.read' })}`;
    expect((await list(app)).map((entry) => [entry.sku, entry.balance])).toEqual([
      ['calls', 7],
      ['news', null],
    ]);
    const elsewhere = `Bearer ${await fx.issuer.token('grantor-b', 'alice', { scope: 'id.user.right.read' })}`;
    expect((await fx.call('GET', '/id/users/dana/entitlements', elsewhere)).status).toBe(401);
  });
});

describe('find by id (docs/api.md "Find by id")', () => {
  it('when a right or subscription is asked for by its id alone, then whoever may see it gets it as its own URL answers, and to anyone else it does not exist', async () => {
    const right = await grant('bob', { sku: 'news' });
    const created = await fx.call('POST', '/id/users/bob/subs', A, {
      grantorId: 'A',
      timeSpec: 'R/2030-01-01T00:00:00Z/P1M',
      rightsSpec: [{ sku: 'video' }],
    });
    const { subscriptionId, href: subscriptionHref } = (await created.json()) as {
      subscriptionId: string;
      href: string;
    };
    const staffOfA = `Bearer ${await fx.issuer.staffToken('sue', 'read', ['A'])}`;
    const staffOfB = `Bearer ${await fx.issuer.staffToken('bea', 'read', ['B'])}`;
    const app = `Bearer ${await fx.issuer.token('grantor-a', 'bob', { scope: 'id.user.right.read id.user.sub.read' })}`;

    for (const [path, own] of [
      [`/id/rights/${right.rightId}`, right.href],
      [`/id/subs/${subscriptionId}`, subscriptionHref],
    ] as const) {
      const canonical = await fx.call('GET', new URL(own).pathname, A);
      for (const caller of [A, staffOfA, admin()]) {
        const found = await fx.call('GET', path, caller);
        expect(found.status, path).toBe(200);
        expect(found.headers.get('content-location')).toBe(own);
        expect(found.headers.get('etag')).toBe(canonical.headers.get('etag'));
        expect(await found.json()).toMatchObject({ userId: 'bob', href: own });
      }
      // Another grantor's client and staff: the same 404 as an id nobody holds.
      const id = path.split('/').at(-1)!;
      const nobody = path.replace(id, 'nobodyholdsthis');
      expect((await fx.call('GET', nobody, B)).status).toBe(404);
      for (const caller of [B, staffOfB]) {
        const hidden = await fx.call('GET', path, caller);
        expect(hidden.status).toBe(404);
        expect(await hidden.text()).toBe(
          (await (await fx.call('GET', nobody, caller)).text()).replaceAll('nobodyholdsthis', id),
        );
      }
      // A user's app knows its user's paths: this route is not for it.
      expect((await fx.call('GET', path, app)).status).toBe(401);
      expect((await fx.call('GET', `${path.replace(/[^/]+$/, '')}not-an-id!`, A)).status).toBe(400);
    }

    // Found by id, a subscription is as its own URL shows it after a change; deleted, it is not found.
    const subscriptionPath = new URL(subscriptionHref).pathname;
    expect((await fx.call('POST', `${subscriptionPath}/suspend`, A)).status).toBe(204);
    const own = await fx.call('GET', subscriptionPath, A);
    const found = await fx.call('GET', `/id/subs/${subscriptionId}`, A);
    expect([found.headers.get('etag'), await found.text()]).toEqual([own.headers.get('etag'), await own.text()]);
    expect((await fx.call('DELETE', subscriptionPath, A)).status).toBe(204);
    expect((await fx.call('GET', `/id/subs/${subscriptionId}`, A)).status).toBe(404);
    // A removed right is found no more.
    expect((await fx.call('DELETE', new URL(right.href).pathname, A)).status).toBe(204);
    expect((await fx.call('GET', `/id/rights/${right.rightId}`, A)).status).toBe(404);
  });
});
