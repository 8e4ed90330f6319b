import { clientsOf, EVENTUALLY, systemFixture, TestSystem } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

const basic = TestSystem.clientAuthorization;
const A = basic('grantor-a');
const B = basic('grantor-b');
const SP = basic('provider-sp');

const fx = systemFixture({
  name: 'consumption',
  backends: ['catalog', 'rights', 'scheduler'],
  bearer: true,
  collect: { 'rights.events': 'right.consumed' },
  seed: {
    clients: clientsOf({ 'grantor-a': 'A', 'grantor-b': 'B', 'provider-sp': 'SP', 'app-a': 'A' }),
    users: ['ann', 'ben', 'cat', 'dan', 'eve', 'fay', 'gus', 'hal', 'ian'],
    skus: { articles: { serviceProviderId: 'SP', grantorIds: ['A', 'B'] } },
  },
});
beforeAll(fx.start);
afterAll(fx.stop);

const call = fx.call;

const DAY = 86_400_000;
const at = (offsetMs: number) => new Date(Date.now() + offsetMs).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** An ACTIVE right of `articles` for `user`, from an hour ago to `endsInDays` days on. */
async function meteredRight(user: string, quantity: number | undefined, endsInDays: number, by = A, grantorId = 'A') {
  const response = await call('POST', `/id/users/${user}/rights`, by, {
    sku: 'articles',
    grantorId,
    state: 'ACTIVE',
    timeInterval: `${at(-3_600_000)}/${at(endsInDays * DAY)}`,
    ...(quantity === undefined ? {} : { quantity }),
  });
  expect(response.status, await response.clone().text()).toBe(201);
  return ((await response.json()) as { rightId: string }).rightId;
}

const remainingOf = async (user: string, rightId: string) =>
  ((await (await call('GET', `/id/users/${user}/rights/${rightId}`, A)).json()) as { remaining: number }).remaining;

const balanceOf = async (user: string, authorization = SP) =>
  ((await (await call('GET', `/id/users/${user}/entitlements/articles`, authorization)).json()) as { balance: number })
    .balance;

const consumedEvents = (rightId: string) => {
  const seen = new Set<unknown>();
  return fx
    .events('rights.events')
    .messages.filter((m) => m.body.subject === rightId && !seen.has(m.body.id) && seen.add(m.body.id))
    .map((m) => (m.body.data as { amount: number; remaining: number }).amount);
};

describe('consumption by SKU (docs/api.md "Consumption by SKU")', () => {
  it('when units are consumed by SKU, then the rights ending first give first, each gets right.consumed and a history entry; too many are 409 and nothing is taken', async () => {
    const later = await meteredRight('ann', 5, 10);
    const sooner = await meteredRight('ann', 3, 2);
    await meteredRight('ann', undefined, 30); // a plain right: no units to consume
    const consumed = await call('POST', '/id/users/ann/entitlements/articles/consumption', SP, { amount: 4 });
    expect(consumed.status, await consumed.clone().text()).toBe(200);
    expect(await consumed.json()).toEqual({
      connectId: 'ann',
      sku: 'articles',
      amount: 4,
      consumed: [
        { rightId: sooner, amount: 3, remaining: 0 },
        { rightId: later, amount: 1, remaining: 4 },
      ],
      remaining: 4,
    });
    expect([await remainingOf('ann', sooner), await remainingOf('ann', later)]).toEqual([0, 4]);
    await vi.waitFor(() => expect([consumedEvents(sooner), consumedEvents(later)]).toEqual([[3], [1]]), EVENTUALLY);
    await vi.waitFor(async () => {
      const history = (await (await call('GET', `/id/users/ann/rights/${later}/history`, A)).json()) as {
        history: Array<{ type: string; changes: Record<string, unknown> }>;
      };
      expect(history.history.at(-1)).toMatchObject({ type: 'right.consumed', changes: { remaining: [5, 4] } });
    }, EVENTUALLY);
    // The check on this gateway knows at once.
    expect(await balanceOf('ann')).toBe(4);

    const refused = await call('POST', '/id/users/ann/entitlements/articles/consumption', SP, { amount: 5 });
    expect(refused.status).toBe(409);
    expect(refused.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await refused.text()).toMatch(/4 units of articles left, 5 asked/);
    expect([await remainingOf('ann', sooner), await remainingOf('ann', later)]).toEqual([0, 4]);
    // One unit, without a body; then the last three in one.
    expect((await call('POST', '/id/users/ann/entitlements/articles/consumption', SP)).status).toBe(200);
    expect((await call('POST', '/id/users/ann/entitlements/articles/consumption', SP, { amount: 3 })).status).toBe(200);
    expect((await call('POST', '/id/users/ann/entitlements/articles/consumption', SP)).status).toBe(409);
    for (const amount of [0, -2, 1.5, 'x'])
      expect(
        (await call('POST', '/id/users/ann/entitlements/articles/consumption', SP, { amount })).status,
        String(amount),
      ).toBe(400);
  });

  it('when a consumption is sent again with its Idempotency-Key, then it is applied once and answered as the first time', async () => {
    const first = await meteredRight('ben', 2, 1);
    const second = await meteredRight('ben', 4, 5);
    const send = () =>
      call(
        'POST',
        '/id/users/ben/entitlements/articles/consumption',
        SP,
        { amount: 3 },
        { 'idempotency-key': 'ben-3' },
      );
    const answers = [await send(), await send()];
    expect(answers.map((answer) => answer.status)).toEqual([200, 200]);
    expect(answers[1]!.headers.get('idempotent-replayed')).toBe('true');
    expect(await answers[1]!.json()).toMatchObject({ amount: 3, remaining: 3 });
    expect([await remainingOf('ben', first), await remainingOf('ben', second)]).toEqual([0, 3]);
  });

  it('when callers differ, then each consumes only the rights it may use: another grantor its own, a Bearer token of its client its user only', async () => {
    const ofA = await meteredRight('cat', 5, 3);
    const ofB = await meteredRight('cat', 5, 1, B, 'B');
    // Grantor B sees its own right alone, though A's ends later and B's first.
    const byB = await call('POST', '/id/users/cat/entitlements/articles/consumption', B, { amount: 5 });
    expect(await byB.json()).toMatchObject({ consumed: [{ rightId: ofB, amount: 5 }], remaining: 0 });
    expect((await call('POST', '/id/users/cat/entitlements/articles/consumption', B)).status).toBe(409);
    expect(await remainingOf('cat', ofA)).toBe(5);

    const token = await fx.issuer.token('app-a', 'cat', { scope: 'id.user.right.use' });
    const byApp = await call('POST', '/id/users/cat/entitlements/articles/consumption', `Bearer ${token}`, {
      amount: 2,
    });
    expect(await byApp.json()).toMatchObject({ consumed: [{ rightId: ofA, amount: 2 }], remaining: 3 });
    // Another user's SKU, or a token without the scope: refused, nothing taken.
    expect((await call('POST', '/id/users/ann/entitlements/articles/consumption', `Bearer ${token}`)).status).toBe(401);
    const readOnly = await fx.issuer.token('app-a', 'cat', { scope: 'id.user.right.read' });
    expect((await call('POST', '/id/users/cat/entitlements/articles/consumption', `Bearer ${readOnly}`)).status).toBe(
      401,
    );
    expect(await remainingOf('cat', ofA)).toBe(3);
  });

  it('when 24 consumptions of 1 race for 10 units over three rights, then exactly 10 succeed and every unit is consumed once', async () => {
    const rights = [await meteredRight('dan', 3, 1), await meteredRight('dan', 3, 2), await meteredRight('dan', 4, 3)];
    const statuses = await Promise.all(
      Array.from({ length: 24 }, () =>
        call('POST', '/id/users/dan/entitlements/articles/consumption', SP).then((answer) => answer.status),
      ),
    );
    expect(statuses.filter((status) => status === 200)).toHaveLength(10);
    expect(statuses.filter((status) => status === 409)).toHaveLength(14);
    expect(await Promise.all(rights.map((rightId) => remainingOf('dan', rightId)))).toEqual([0, 0, 0]);
    await vi.waitFor(
      () => expect(rights.flatMap(consumedEvents).reduce((sum, amount) => sum + amount, 0)).toBe(10),
      EVENTUALLY,
    );
  });
});

describe('usage of a metered right (docs/api.md "Usage")', () => {
  it('when 16 usages of 1 unit arrive at once for one right, then every one is taken (none told to retry)', async () => {
    const rightId = await meteredRight('hal', 100, 5);
    const statuses = await Promise.all(
      Array.from({ length: 16 }, () =>
        call('POST', `/id/users/hal/rights/${rightId}/usage`, SP, { amount: 1 }).then(async (answer) =>
          answer.status === 204 ? 204 : `${answer.status} ${await answer.text()}`,
        ),
      ),
    );
    expect(statuses).toEqual(Array.from({ length: 16 }, () => 204));
    expect(await remainingOf('hal', rightId)).toBe(84);
    await vi.waitFor(() => expect(consumedEvents(rightId)).toEqual(Array.from({ length: 16 }, () => 1)), EVENTUALLY);
  });
});

describe('reservations (docs/api.md "Reservations")', () => {
  const reservations = (user: string) => `/id/users/${user}/entitlements/articles/reservations`;

  it('when 16 reservations of one right are committed at once, then every commit consumes its unit (none told to retry)', async () => {
    const rightId = await meteredRight('ian', 20, 5);
    const made: string[] = [];
    for (let i = 0; i < 16; i++) {
      const answer = await call('POST', reservations('ian'), SP, { amount: 1 });
      made.push(((await answer.json()) as { reservationId: string }).reservationId);
    }
    const statuses = await Promise.all(
      made.map((id) =>
        call('POST', `${reservations('ian')}/${id}/commit`, SP).then(async (answer) =>
          answer.status === 200 ? 200 : `${answer.status} ${await answer.text()}`,
        ),
      ),
    );
    expect(statuses).toEqual(Array.from({ length: 16 }, () => 200));
    expect(await remainingOf('ian', rightId)).toBe(4);
  });

  it('when units are reserved, then everyone else counts them as consumed; a commit of fewer consumes those and frees the rest, once', async () => {
    const sooner = await meteredRight('eve', 2, 1);
    const later = await meteredRight('eve', 4, 4);
    const reserved = await call('POST', reservations('eve'), SP, { amount: 3, ttl: 'PT5M' });
    expect(reserved.status, await reserved.clone().text()).toBe(201);
    const reservation = (await reserved.json()) as { reservationId: string; amount: number; expiresAt: string };
    expect(reservation).toMatchObject({ amount: 3, remaining: 3 });
    expect(Date.parse(reservation.expiresAt) - Date.now()).toBeGreaterThan(4 * 60_000);
    expect(await balanceOf('eve')).toBe(3);
    // The held units are not there for another consumption.
    expect((await call('POST', '/id/users/eve/entitlements/articles/consumption', SP, { amount: 4 })).status).toBe(409);
    // Nothing is consumed yet: the rights' own balance is whole.
    expect([await remainingOf('eve', sooner), await remainingOf('eve', later)]).toEqual([2, 4]);

    const commit = `${reservations('eve')}/${reservation.reservationId}/commit`;
    const committed = await call('POST', commit, SP, { amount: 2 });
    expect(committed.status, await committed.clone().text()).toBe(200);
    expect(await committed.json()).toMatchObject({
      amount: 2,
      consumed: [{ rightId: sooner, amount: 2, remaining: 0 }],
      remaining: 4,
    });
    expect([await remainingOf('eve', sooner), await remainingOf('eve', later)]).toEqual([0, 4]);
    expect(await balanceOf('eve')).toBe(4);
    // Again: the same answer, nothing more; a release of a committed reservation is 409; another grantor does not see it.
    expect(await (await call('POST', commit, SP, { amount: 2 })).json()).toMatchObject({ amount: 2, remaining: 4 });
    expect((await call('DELETE', `${reservations('eve')}/${reservation.reservationId}`, SP)).status).toBe(409);
    expect((await call('POST', `${reservations('eve')}/${reservation.reservationId}/commit`, B)).status).toBe(404);
    expect((await call('POST', reservations('eve'), SP, { amount: 1, ttl: 'PT25H' })).status).toBe(400);
    expect((await call('POST', reservations('eve'), SP, { amount: 5 })).status).toBe(409);
    await vi.waitFor(() => expect(consumedEvents(sooner)).toEqual([2]), EVENTUALLY);
  });

  it('when a reservation is released, then its units are free at once; one not settled lapses by itself within seconds', async () => {
    const rightId = await meteredRight('fay', 5, 2);
    const reserve = async (ttl: string) => {
      const answer = await call('POST', reservations('fay'), SP, { amount: 4, ttl });
      expect(answer.status, await answer.clone().text()).toBe(201);
      return ((await answer.json()) as { reservationId: string }).reservationId;
    };
    const released = await reserve('PT5M');
    expect(await balanceOf('fay')).toBe(1);
    expect((await call('DELETE', `${reservations('fay')}/${released}`, SP)).status).toBe(204);
    expect((await call('DELETE', `${reservations('fay')}/${released}`, SP)).status).toBe(204);
    expect(await balanceOf('fay')).toBe(5);

    const lapsing = await reserve('PT2S');
    expect((await call('POST', '/id/users/fay/entitlements/articles/consumption', SP, { amount: 2 })).status).toBe(409);
    // The scheduler settles it once its time is up: the units are there again, nothing consumed.
    await vi.waitFor(
      async () => {
        const consumed = await call('POST', '/id/users/fay/entitlements/articles/consumption', SP, { amount: 2 });
        expect(consumed.status).toBe(200);
      },
      { timeout: 20_000, interval: 500 },
    );
    expect(await remainingOf('fay', rightId)).toBe(3);
    const late = await call('POST', `${reservations('fay')}/${lapsing}/commit`, SP);
    expect(late.status).toBe(409);
    expect(await late.text()).toMatch(/released or has lapsed/);
  });
});
