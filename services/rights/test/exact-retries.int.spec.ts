import { InternalTokenSigner, NowFor, RESOURCE_ID_HEADER } from '@rs/http';
import { clientsOf, EVENTUALLY, fixedCatalog, systemFixture, TEST_INTERNAL_SECRET, TestSystem } from '@rs/testing';
import mongoose from 'mongoose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ConsumptionUseCases, meteringParts } from '../src/app/consumptions';
import { ReservationUseCases } from '../src/app/reservations';
import { RightMessages } from '../src/messages/events';
import { ConsumptionStore } from '../src/store/consumption-store';
import { RightStore } from '../src/store/right-store';

// docs/api.md "Consumption by SKU", "Usage" and "Reservations"; docs/decisions/0051: a
// consumption's id alone decides whether it was applied; who settles a reservation; the most
// holds one right takes.

const basic = TestSystem.clientAuthorization;
const A = basic('grantor-a');
const SP = basic('provider-sp');
const SP2 = basic('provider-sp-2');
const MAX_HOLDS = 3;

const fx = systemFixture({
  // Processes: a test below runs the rights service's use cases in this process, on its database.
  processes: true,
  name: 'exact_retries',
  backends: ['catalog', 'rights', 'scheduler'],
  bearer: true,
  env: { RIGHT_MAX_HOLDS: String(MAX_HOLDS) },
  collect: { 'rights.events': 'right.consumed' },
  seed: {
    clients: clientsOf({ 'grantor-a': 'A', 'provider-sp': 'SP', 'provider-sp-2': 'SP', 'app-a': 'A' }),
    users: ['ann', 'ben', 'cat', 'dan', 'eve', 'fay', 'gus'],
    skus: { articles: { serviceProviderId: 'SP', grantorIds: ['A'] } },
  },
});
beforeAll(fx.start);
afterAll(fx.stop);

const call = fx.call;
const at = (offsetMs: number) => new Date(Date.now() + offsetMs).toISOString().replace(/\.\d{3}Z$/, 'Z');

async function meteredRight(user: string, quantity: number): Promise<string> {
  const response = await call('POST', `/id/users/${user}/rights`, A, {
    sku: 'articles',
    grantorId: 'A',
    state: 'ACTIVE',
    timeInterval: `${at(-3_600_000)}/${at(86_400_000)}`,
    quantity,
  });
  expect(response.status, await response.clone().text()).toBe(201);
  return ((await response.json()) as { rightId: string }).rightId;
}

const remainingOf = async (user: string, rightId: string) =>
  ((await (await call('GET', `/id/users/${user}/rights/${rightId}`, A)).json()) as { remaining: number }).remaining;

const consumption = (user: string) => `/id/users/${user}/entitlements/articles/consumption`;
const usage = (user: string, rightId: string) => `/id/users/${user}/rights/${rightId}/usage`;
const reservations = (user: string) => `/id/users/${user}/entitlements/articles/reservations`;

/**
 * `count` consumptions of one unit each without a key, eight at a time (one process's
 * consumptions of one right take turns: docs/decisions/0074), each answered 2xx.
 */
async function consumeMany(path: string, count: number): Promise<void> {
  for (let sent = 0; sent < count; sent += AT_ONCE) {
    const answers = await Promise.all(
      Array.from({ length: Math.min(AT_ONCE, count - sent) }, () => call('POST', path, SP, { amount: 1 })),
    );
    for (const answer of answers) expect(answer.status, await answer.clone().text()).toBeLessThan(300);
  }
}
const AT_ONCE = 8;

const provider = { clientId: 'provider-sp', grantorId: 'SP', admin: false, scheme: 'basic' as const };
const principal = { ...provider, scopes: [], subject: null };
const signer = new InternalTokenSigner(TEST_INTERNAL_SECRET, 'gateway');
/** 5 units sent to the rights service under `id`, as the gateway sends a request with an Idempotency-Key. */
const direct = async (path: string, id: string) =>
  fetch(`${fx.system.service('rights').url}${path}`, {
    method: 'POST',
    headers: {
      'x-internal-token': await signer.tokenFor(principal, 'rights'),
      [RESOURCE_ID_HEADER]: id,
      'content-type': 'application/json',
    },
    body: JSON.stringify({ amount: 5 }),
  });

/**
 * `act`, by the rights service's own use cases in this process on its database, whose writes of
 * rights fail (the database went away): to the service, it stops at its first write of a right.
 */
async function cutAtFirstRightWrite(act: (parts: ReturnType<typeof meteringParts>) => Promise<unknown>) {
  class FailingRights extends RightStore {
    override update(): Promise<boolean> {
      return Promise.reject(new Error('the database went away'));
    }
  }
  const db = await mongoose.createConnection(fx.system.mongoUrlFor('rights')).asPromise();
  try {
    const parts = meteringParts({
      rights: new FailingRights(db),
      records: new ConsumptionStore(db),
      skus: fixedCatalog({ articles: { serviceProviderId: 'SP', grantorIds: ['A'] } }),
      messages: new RightMessages(fx.system.gatewayUrl),
      time: new NowFor(() => new Date()),
    });
    await expect(act(parts)).rejects.toThrow(/went away/);
  } finally {
    await db.close();
  }
}

describe('a consumption retried with its Idempotency-Key, however many came between (docs/decisions/0051)', () => {
  it('when the rights service gets a consumption again under its id after 100 others, then its id alone decides: applied once, by SKU and by right', async () => {
    // As the gateway sends it when it has lost the key (a crash): the same id, derived from the key.
    const rightId = await meteredRight('ann', 100_000);
    for (const [path, id, status] of [
      [consumption('ann'), 'consumption0123456789abcdef', 200],
      [usage('ann', rightId), 'usage0123456789abcdef0123', 204],
    ] as const) {
      const first = await direct(path, id);
      expect(first.status, await first.clone().text()).toBe(status);
      await consumeMany(path, 100);
      const retried = await direct(path, id);
      expect(retried.status, await retried.clone().text()).toBe(status);
    }
    expect(await remainingOf('ann', rightId)).toBe(100_000 - 2 * (5 + 100));
  });

  it('when the client leaves a keyed consumption mid-way and retries after 100 others, then it is answered as the first attempt, applied once', async () => {
    const rightId = await meteredRight('ben', 100_000);
    let expected = 100_000;
    for (const [index, delayMs] of [2, 5, 9].entries()) {
      for (const path of [consumption('ben'), usage('ben', rightId)]) {
        const key = `leave-${index}-${path.endsWith('usage') ? 'usage' : 'sku'}`;
        const send = (signal?: AbortSignal) =>
          fetch(`${fx.system.gatewayUrl}${path}`, {
            method: 'POST',
            headers: { authorization: SP, 'content-type': 'application/json', 'idempotency-key': key },
            body: JSON.stringify({ amount: 5 }),
            ...(signal ? { signal } : {}),
          });
        await send(AbortSignal.timeout(delayMs)).catch(() => undefined);
        await consumeMany(path, 100);
        expected -= 105;
        // A retry while the first attempt is still under way is 409; then it is answered.
        await vi.waitFor(async () => {
          const retried = await send();
          expect(retried.status, await retried.clone().text()).toBeLessThan(300);
        }, EVENTUALLY);
      }
    }
    expect(await remainingOf('ben', rightId)).toBe(expected);
  }, 180_000);

  it('when a retry finds its first attempt under way, then it is asked back in a second (not when the holds lapse), and nothing is consumed twice', async () => {
    const rightId = await meteredRight('gus', 10);
    const id = 'underway0123456789abcdef0';
    // The first attempt stops once its record is stored, before its first hold: to the
    // service, it is still under way.
    await cutAtFirstRightWrite((parts) =>
      new ConsumptionUseCases(parts).consume(
        principal,
        { userId: 'gus', sku: 'articles', clockId: null },
        { amount: 5, consumptionId: id },
      ),
    );
    const retried = await direct(consumption('gus'), id);
    expect(retried.status).toBe(503);
    expect(retried.headers.get('retry-after')).toBe('1');
    expect(await retried.text()).toMatch(
      /^consumption underway0123456789abcdef0 is under way \(settled within \d+ s\)/,
    );
    expect(await remainingOf('gus', rightId)).toBe(10);
  });
});

describe('settling a reservation (docs/api.md "Reservations")', () => {
  const reserve = async (user: string, authorization: string, amount = 2) => {
    const answer = await call('POST', reservations(user), authorization, { amount, ttl: 'PT5M' });
    expect(answer.status, await answer.clone().text()).toBe(201);
    return ((await answer.json()) as { reservationId: string }).reservationId;
  };

  it("when a user's app or another client of the provider settles the provider's reservation, then it does not exist for them; its maker and the grantor settle it", async () => {
    const rightId = await meteredRight('cat', 10);
    const app = `Bearer ${await fx.issuer.token('app-a', 'cat', { scope: 'id.user.right.use' })}`;
    const made = await reserve('cat', SP);
    for (const caller of [app, SP2]) {
      expect((await call('POST', `${reservations('cat')}/${made}/commit`, caller, { amount: 0 })).status).toBe(404);
      expect((await call('DELETE', `${reservations('cat')}/${made}`, caller)).status).toBe(404);
    }
    const committed = await call('POST', `${reservations('cat')}/${made}/commit`, SP, { amount: 2 });
    expect(await committed.json()).toMatchObject({ amount: 2 });
    expect(await remainingOf('cat', rightId)).toBe(8);

    // The app's own reservation: the app and the grantor settle it, the provider does not.
    const byApp = await reserve('cat', app);
    expect((await call('DELETE', `${reservations('cat')}/${byApp}`, SP)).status).toBe(404);
    expect((await call('DELETE', `${reservations('cat')}/${byApp}`, A)).status).toBe(204);
    const again = await reserve('cat', app);
    expect(await (await call('POST', `${reservations('cat')}/${again}/commit`, app)).json()).toMatchObject({
      amount: 2,
    });
    expect(await remainingOf('cat', rightId)).toBe(6);
  });

  it('when a reservation is committed with 0, then it is released and said to be; a later commit is refused, nothing consumed', async () => {
    const rightId = await meteredRight('dan', 10);
    const made = await reserve('dan', SP, 4);
    const zero = await call('POST', `${reservations('dan')}/${made}/commit`, SP, { amount: 0 });
    expect(zero.status).toBe(204);
    const later = await call('POST', `${reservations('dan')}/${made}/commit`, SP, { amount: 4 });
    expect(later.status).toBe(409);
    expect(await later.text()).toMatch(/released/);
    expect(await remainingOf('dan', rightId)).toBe(10);
    const balance = await call('GET', '/id/users/dan/entitlements/articles', SP);
    expect(await balance.json()).toMatchObject({ balance: 10 });
  });
});

describe('a commit that fails after it was decided (docs/decisions/0051)', () => {
  it("when a commit's request fails once its reservation is committed, then its units are consumed within seconds (not at the reservation's end) and its retry answers what it took", async () => {
    const rightId = await meteredRight('fay', 10);
    const reserved = await call('POST', reservations('fay'), SP, { amount: 4, ttl: 'PT10M' });
    const { reservationId } = (await reserved.json()) as { reservationId: string };
    // The record is committed, and the request fails before applying it to the right.
    await cutAtFirstRightWrite((parts) =>
      new ReservationUseCases(parts).commit(principal, { userId: 'fay', sku: 'articles', reservationId }, 3),
    );
    await vi.waitFor(async () => expect(await remainingOf('fay', rightId)).toBe(7), EVENTUALLY);
    // Every check counts it once its events are out (docs/api.md "Entitlement checks").
    await vi.waitFor(async () => {
      const balance = await call('GET', '/id/users/fay/entitlements/articles', SP);
      expect(await balance.json()).toMatchObject({ balance: 7 });
    }, EVENTUALLY);
    const retried = await call('POST', `${reservations('fay')}/${reservationId}/commit`, SP, { amount: 3 });
    expect(retried.status).toBe(200);
    expect(await retried.json()).toMatchObject({ amount: 3, consumed: [{ rightId, amount: 3, remaining: 7 }] });
    expect(await remainingOf('fay', rightId)).toBe(7);
  });
});

describe('holds on one right are bounded (RIGHT_MAX_HOLDS)', () => {
  it('when a right holds its most reservations, then one more is 409 naming the limit; settling one makes room', async () => {
    const rightId = await meteredRight('eve', 100);
    const made: string[] = [];
    for (let i = 0; i < MAX_HOLDS; i++) {
      const answer = await call('POST', reservations('eve'), SP, { amount: 1 });
      expect(answer.status, await answer.clone().text()).toBe(201);
      made.push(((await answer.json()) as { reservationId: string }).reservationId);
    }
    const refused = await call('POST', reservations('eve'), SP, { amount: 1 });
    expect(refused.status).toBe(409);
    expect(refused.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await refused.text()).toMatch(/RIGHT_MAX_HOLDS/);
    // A consumption without a key holds nothing: it is served.
    expect((await call('POST', consumption('eve'), SP, { amount: 1 })).status).toBe(200);
    expect((await call('DELETE', `${reservations('eve')}/${made[0]}`, SP)).status).toBe(204);
    expect((await call('POST', reservations('eve'), SP, { amount: 1 })).status).toBe(201);
    expect(await remainingOf('eve', rightId)).toBe(99);
  });
});
