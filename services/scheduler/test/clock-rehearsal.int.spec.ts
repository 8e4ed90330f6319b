import { Exchanges } from '@rs/contracts';
import { clientsOf, systemFixture, TestSystem, WebhookReceiver, type CollectedMessage } from '@rs/testing';
import { setTimeout as sleep } from 'node:timers/promises';
import mongoose from 'mongoose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// docs/decisions/0048: a subscription on a test clock lives on the clock's time: an advance of
// three months issues and expires exactly the rights of those months, one step per due instant,
// while a real-time subscription of the same user is untouched; nobody else uses the clock. A
// rehearsal stays a rehearsal (docs/api.md "Test clocks"): its rights count for a check, a
// consumption by SKU and an active list only where the caller names its clock.
const fx = systemFixture({
  name: 'clock_rehearsal',
  backends: ['catalog', 'rights', 'subscriptions', 'scheduler', 'webhooks'],
  // Room above the thousand rights of the deletion test: a creation answered 503 on a loaded
  // machine may have taken its place on the clock before its time read timed out, and the
  // place stays taken (the test's retry then takes another).
  env: { TEST_CLOCKS_MAX: '5', TEST_CLOCK_MAX_OBJECTS: '1100', SCHEDULER_TICK_MS: '200' },
  collect: { [Exchanges.rightsEvents]: 'right.*', [Exchanges.clocksEvents]: '#' },
  seed: {
    clients: clientsOf({ 'grantor-a': 'A', 'grantor-b': 'B' }),
    users: ['alice', 'bob', 'carol'],
    skus: { news: {}, calls: {} },
  },
});
beforeAll(fx.start);
afterAll(fx.stop);

const A = TestSystem.clientAuthorization('grantor-a');
const B = TestSystem.clientAuthorization('grantor-b');

interface RightView {
  rightId: string;
  state: string;
  active: boolean;
  timeInterval: string;
  clockId: string | null;
  link: Array<{ rel: string; href: string }>;
}

const rightsOf = async (subscriptionId: string): Promise<RightView[]> => {
  const listed = await fx.call('GET', '/id/users/alice/rights?limit=100', A);
  expect(listed.status).toBe(200);
  return ((await listed.json()) as { right: RightView[] }).right
    .filter((right) => right.link.some((link) => link.rel === 'subscription' && link.href.endsWith(subscriptionId)))
    .sort((a, b) => a.timeInterval.localeCompare(b.timeInterval));
};

async function subscribe(body: object, user = 'alice'): Promise<string> {
  const created = await fx.call('POST', `/id/users/${user}/subs`, A, {
    grantorId: 'A',
    rightsSpec: [{ sku: 'news' }],
    ...body,
  });
  expect(created.status, await created.clone().text()).toBe(201);
  return ((await created.json()) as { subscriptionId: string }).subscriptionId;
}

/** A clock of grantor A at `time`: its id. */
async function clockAt(time: string): Promise<string> {
  const created = await fx.call('POST', '/clocks', A, { grantorId: 'A', time });
  expect(created.status).toBe(201);
  return ((await created.json()) as { clockId: string }).clockId;
}

/**
 * An ACTIVE right of grantor A for `user` (on `clockId` when given): 201, and its id. A 503
 * (the clock's time could not be read in time, on a loaded machine) is sent again after its
 * Retry-After, as a client would: nothing was created.
 */
async function grant(user: string, sku: string, timeInterval: string, more: object = {}): Promise<string> {
  const body = { sku, grantorId: 'A', state: 'ACTIVE', timeInterval, ...more };
  let created = await fx.call('POST', `/id/users/${user}/rights`, A, body);
  for (let retry = 0; created.status === 503 && retry < 5; retry++) {
    await sleep(Number(created.headers.get('retry-after') ?? 1) * 1000);
    created = await fx.call('POST', `/id/users/${user}/rights`, A, body);
  }
  expect(created.status, await created.clone().text()).toBe(201);
  return ((await created.json()) as { rightId: string }).rightId;
}

/** Advances a clock of grantor A and waits until it is ready. */
async function advanceTo(clockId: string, to: string): Promise<void> {
  expect((await fx.call('POST', `/clocks/${clockId}/advance`, A, { to })).status).toBe(202);
  await expect
    .poll(async () => ((await (await fx.call('GET', `/clocks/${clockId}`, A)).json()) as { status: string }).status)
    .toBe('ready');
}

const clockOf = async (path: string) =>
  (await (await fx.call('GET', path, A)).json()) as { time: string; status: string; generation: string };

describe('a rehearsal on a test clock (docs/decisions/0048)', () => {
  it('when a clock with a monthly subscription is advanced by three months, then exactly those months’ rights are issued and expired, at the clock’s time, and a real-time subscription of the same user is untouched', async () => {
    const clockId = await clockAt('2026-01-01T00:00:00Z');
    const path = `/clocks/${clockId}`;
    const real = await subscribe({ timeSpec: `R/${new Date().toISOString().slice(0, 10)}T00:00:00Z/P1M` });
    const onClock = await subscribe({ timeSpec: 'R/2026-01-01T00:00:00Z/P1M', clockId });
    const shown = await fx.call('GET', `/id/users/alice/subs/${onClock}`, A);
    expect(await shown.json()).toMatchObject({ clockId });

    // Its first period starts at the clock's time: issued without an advance, active on the clock.
    await expect.poll(async () => (await rightsOf(onClock)).length).toBe(1);
    expect(await rightsOf(onClock)).toEqual([
      expect.objectContaining({
        timeInterval: '2026-01-01T00:00:00Z/2026-02-01T00:00:00Z',
        state: 'ACTIVE',
        active: true,
        clockId,
      }),
    ]);

    const advanced = await fx.call('POST', `${path}/advance`, A, { to: '2026-04-01T00:00:00Z' });
    expect(advanced.status).toBe(202);
    expect(await advanced.json()).toMatchObject({ status: 'advancing', time: '2026-01-01T00:00:00Z' });
    await expect.poll(async () => (await clockOf(path)).status, { timeout: 60_000 }).toBe('ready');
    expect(await clockOf(path)).toMatchObject({ time: '2026-04-01T00:00:00Z' });

    const months = ['2026-01-01', '2026-02-01', '2026-03-01', '2026-04-01', '2026-05-01'];
    const issued = await rightsOf(onClock);
    expect(issued.map((right) => [right.timeInterval, right.state, right.active])).toEqual([
      [`${months[0]}T00:00:00Z/${months[1]}T00:00:00Z`, 'EXPIRED', false],
      [`${months[1]}T00:00:00Z/${months[2]}T00:00:00Z`, 'EXPIRED', false],
      [`${months[2]}T00:00:00Z/${months[3]}T00:00:00Z`, 'EXPIRED', false],
      [`${months[3]}T00:00:00Z/${months[4]}T00:00:00Z`, 'ACTIVE', true],
    ]);
    expect(issued.every((right) => right.clockId === clockId)).toBe(true);
    // Active now on its clock: listed by active=now on that clock, never on real time.
    const activeIds = async (query: string) =>
      (
        (await (await fx.call('GET', `/id/users/alice/rights?active=now&limit=100${query}`, A)).json()) as {
          right: RightView[];
        }
      ).right.map((right) => right.rightId);
    expect(await activeIds(`&clockId=${clockId}`)).toEqual([issued[3]!.rightId]);
    expect(await activeIds('')).not.toContain(issued[3]!.rightId);
    expect((await fx.call('GET', '/id/users/alice/rights?active=now&clockId=nosuchclock', A)).status).toBe(404);

    // Each right created once and the three past months expired once.
    const events = fx.events(Exchanges.rightsEvents);
    const ofClock = (type: string) => {
      const seen = new Set<string>();
      return events.messages.filter(
        (m: CollectedMessage) =>
          m.routingKey === type &&
          issued.some((right) => right.rightId === m.body.subject) &&
          !seen.has(m.body.id as string) &&
          seen.add(m.body.id as string),
      );
    };
    await events.waitFor(() => ofClock('right.expired').length >= 3);
    expect(ofClock('right.created').map((m) => m.body.subject)).toHaveLength(4);
    expect(new Set(ofClock('right.created').map((m) => m.body.subject)).size).toBe(4);
    expect(
      ofClock('right.expired')
        .map((m) => m.body.subject as string)
        .sort(),
    ).toEqual(
      issued
        .slice(0, 3)
        .map((r) => r.rightId)
        .sort(),
    );
    const clockEvents = await fx
      .events(Exchanges.clocksEvents)
      .waitFor((messages) => messages.some((m) => m.body.subject === clockId && m.routingKey === 'clock.ready'));
    const steps = clockEvents
      .filter((m) => m.body.subject === clockId && m.routingKey === 'clock.advanced')
      .map((m) => (m.body.data as { time: string }).time);
    // The clock's time went forward only, from the advance asked for to its target.
    expect(steps[0]).toBe('2026-01-01T00:00:00Z');
    expect(steps.at(-1)).toBe('2026-04-01T00:00:00Z');
    expect([...steps].sort()).toEqual(steps);

    // The real-time subscription: its one right (issued by real time's renewal, whenever that came).
    await expect
      .poll(() => rightsOf(real))
      .toEqual([expect.objectContaining({ state: 'ACTIVE', active: true, clockId: null })]);
    const [realRight] = await rightsOf(real);

    // The entitlement check: on real time the real right alone; on the clock, April's, at its time.
    const checked = async (query = '') =>
      (await (await fx.call('GET', `/id/users/alice/entitlements/news${query}`, A)).json()) as {
        clockId: string | null;
        checkedAt: string;
        rights: Array<{ rightId: string; until: string }>;
      };
    await expect.poll(async () => (await checked()).rights.map((right) => right.rightId)).toEqual([realRight!.rightId]);
    await expect
      .poll(async () => (await checked(`?clockId=${clockId}`)).rights.map((right) => right.rightId))
      .toEqual([issued[3]!.rightId]);
    expect(await checked(`?clockId=${clockId}`)).toMatchObject({ clockId, checkedAt: '2026-04-01T00:00:00Z' });
    expect(await checked()).toMatchObject({ clockId: null });
  });

  it('when a clock is advancing, then what lives on it answers reads but refuses changes (409, nothing changed) until it is ready', async () => {
    const clockId = await clockAt('2026-01-01T00:00:00Z');
    const subscriptionId = await subscribe({ timeSpec: 'R/2026-01-01T00:00:00Z/P1M', clockId }, 'carol');
    const rightId = await grant('carol', 'calls', '2026-01-01T00:00:00Z/2040-01-01T00:00:00Z', {
      quantity: 5,
      clockId,
    });

    // Ten years of monthly renewals: a hundred and twenty in turn, far more than the next request's time.
    const advanced = await fx.call('POST', `/clocks/${clockId}/advance`, A, { to: '2036-01-01T00:00:00Z' });
    expect(advanced.status).toBe(202);
    const changes = [
      ['POST', `/id/users/carol/rights/${rightId}/suspend`, undefined],
      ['POST', `/id/users/carol/rights/${rightId}/usage`, { amount: 1 }],
      ['POST', '/id/users/carol/entitlements/calls/consumption', { amount: 1, clockId }],
      ['POST', `/id/users/carol/subs/${subscriptionId}/suspend`, undefined],
      [
        'POST',
        '/id/users/carol/rights',
        { sku: 'news', grantorId: 'A', timeInterval: '2027-01-01T00:00:00Z/P1M', clockId },
      ],
    ] as const;
    for (const [method, path, body] of changes) {
      const refused = await fx.call(method, path, A, body);
      expect([path, refused.status, await refused.text()]).toEqual([
        path,
        409,
        expect.stringContaining(`clock ${clockId} is advancing`),
      ]);
    }
    const read = await fx.call('GET', `/id/users/carol/rights/${rightId}`, A);
    expect(await read.json()).toMatchObject({ state: 'ACTIVE', remaining: 5 });
    expect((await clockOf(`/clocks/${clockId}`)).status).toBe('advancing');

    await expect.poll(async () => (await clockOf(`/clocks/${clockId}`)).status, { timeout: 120_000 }).toBe('ready');
    expect((await fx.call('POST', `/id/users/carol/rights/${rightId}/usage`, A, { amount: 1 })).status).toBe(204);
    expect(await (await fx.call('GET', `/id/users/carol/rights/${rightId}`, A)).json()).toMatchObject({
      remaining: 4,
    });
    expect((await fx.call('DELETE', `/clocks/${clockId}`, A)).status).toBe(204);
  }, 180_000);

  it('when another grantor names the clock, or a clock that does not exist, then 404 and nothing is created', async () => {
    const clockId = await clockAt('2026-01-01T00:00:00Z');
    for (const [authorization, grantorId, id] of [
      [B, 'B', clockId],
      [A, 'A', 'nosuchclock'],
    ] as const) {
      const right = await fx.call('POST', '/id/users/alice/rights', authorization, {
        sku: 'news',
        grantorId,
        timeInterval: '2026-01-01T00:00:00Z/2026-02-01T00:00:00Z',
        clockId: id,
      });
      expect([right.status, await right.text()]).toEqual([404, expect.stringContaining(`no clock ${id}`)]);
      const subscription = await fx.call('POST', '/id/users/alice/subs', authorization, {
        grantorId,
        timeSpec: 'R/2026-01-01T00:00:00Z/P1M',
        rightsSpec: [{ sku: 'news' }],
        clockId: id,
      });
      expect(subscription.status).toBe(404);
    }
    const ofB = await fx.call('GET', '/id/users/alice/rights?grantorId=B', B);
    expect(((await ofB.json()) as { right: unknown[] }).right).toEqual([]);
    expect((await fx.call('POST', `/clocks/${clockId}/advance`, B, { to: '2027-01-01T00:00:00Z' })).status).toBe(404);
  });

  it('when a metered right lives on a clock, then usage, consumption and reservations judge it at the clock’s time, a reservation lapses when an advance passes its end, and an advance ends the right', async () => {
    const clockId = await clockAt('2026-01-10T00:00:00Z');
    const rightId = await grant('bob', 'calls', '2026-01-01T00:00:00Z/2026-02-01T00:00:00Z', { quantity: 5, clockId });
    expect(await (await fx.call('GET', `/id/users/bob/rights/${rightId}`, A)).json()).toMatchObject({ active: true });

    // On real time, the rehearsal's units are not there: not entitled, nothing to consume or hold.
    const check = async (query = '') =>
      (await (await fx.call('GET', `/id/users/bob/entitlements/calls${query}`, A)).json()) as object;
    await expect.poll(() => check()).toMatchObject({ entitled: false, balance: null, rights: [], clockId: null });
    await expect.poll(() => check(`?clockId=${clockId}`)).toMatchObject({ entitled: true, balance: 5, clockId });
    expect((await fx.call('POST', '/id/users/bob/entitlements/calls/consumption', A, { amount: 1 })).status).toBe(409);
    expect((await fx.call('POST', '/id/users/bob/entitlements/calls/reservations', A, { amount: 1 })).status).toBe(409);
    const consumed = await fx.call('POST', '/id/users/bob/entitlements/calls/consumption', A, { amount: 2, clockId });
    expect(consumed.status, await consumed.clone().text()).toBe(200);
    expect(await consumed.json()).toMatchObject({ consumed: [{ rightId, amount: 2, remaining: 3 }], remaining: 3 });
    expect((await fx.call('POST', `/id/users/bob/rights/${rightId}/usage`, A, { amount: 1 })).status).toBe(204);
    // A signed token is checked against real time: none for a right on a clock.
    expect((await fx.call('GET', `/id/users/bob/rights/${rightId}/token`, A)).status).toBe(409);

    // A reservation of its last 2 units for an hour of the clock: held until an advance passes its end.
    const reserved = await fx.call('POST', '/id/users/bob/entitlements/calls/reservations', A, {
      amount: 2,
      ttl: 'PT1H',
      clockId,
    });
    expect(reserved.status, await reserved.clone().text()).toBe(201);
    const { reservationId, expiresAt } = (await reserved.json()) as { reservationId: string; expiresAt: string };
    expect(expiresAt).toBe('2026-01-10T01:00:00.000Z');
    // Its lapse is kept under the clock, for an advance to find, not under a real second.
    const db = await mongoose.createConnection(fx.system.mongoUrlFor('scheduler')).asPromise();
    try {
      const keysOf = async () =>
        (await db.collection('hold_expiries').find({ id: reservationId }).toArray()).map((doc) => doc.due as string);
      await expect.poll(keysOf).toEqual([expect.stringMatching(new RegExp(`^clock:${clockId}:`))]);
    } finally {
      await db.close();
    }
    expect(
      (await fx.call('POST', '/id/users/bob/entitlements/calls/consumption', A, { amount: 1, clockId })).status,
    ).toBe(409);
    await advanceTo(clockId, '2026-01-10T02:00:00Z');
    const commit = await fx.call('POST', `/id/users/bob/entitlements/calls/reservations/${reservationId}/commit`, A, {
      amount: 1,
    });
    expect(commit.status).toBe(409);
    await expect
      .poll(
        async () =>
          (await fx.call('POST', '/id/users/bob/entitlements/calls/consumption', A, { amount: 1, clockId })).status,
      )
      .toBe(200);

    await advanceTo(clockId, '2026-02-01T00:00:00Z');
    const read = (await (await fx.call('GET', `/id/users/bob/rights/${rightId}`, A)).json()) as object;
    expect(read).toMatchObject({ state: 'EXPIRED', active: false, remaining: 1 });
    expect(
      (await fx.call('POST', '/id/users/bob/entitlements/calls/consumption', A, { amount: 1, clockId })).status,
    ).toBe(409);
  });

  it('when a clock is deleted, then everything on it goes: its subscriptions, their rights and its own rights, out of every list, check and schedule, and nothing else', async () => {
    const clockId = await clockAt('2026-01-01T00:00:00Z');
    const realRightId = await grant('carol', 'news', '2026-01-01T00:00:00Z/2099-01-01T00:00:00Z');
    const subscription = await fx.call('POST', '/id/users/carol/subs', A, {
      grantorId: 'A',
      timeSpec: 'R/2026-01-01T00:00:00Z/P1M',
      rightsSpec: [{ sku: 'news' }],
      clockId,
    });
    const { subscriptionId } = (await subscription.json()) as { subscriptionId: string };
    await grant('carol', 'news', '2026-01-01T00:00:00Z/2026-06-01T00:00:00Z', { clockId });
    const listed = async () =>
      ((await (await fx.call('GET', '/id/users/carol/rights?limit=100', A)).json()) as { right: RightView[] }).right;
    const check = async (query = '') =>
      ((await (await fx.call('GET', `/id/users/carol/entitlements/news${query}`, A)).json()) as { rights: RightView[] })
        .rights;
    await expect.poll(async () => (await listed()).length).toBe(3);
    await expect.poll(async () => (await check(`?clockId=${clockId}`)).length).toBe(2);

    expect((await fx.call('DELETE', `/clocks/${clockId}`, A)).status).toBe(204);
    await expect.poll(async () => (await listed()).map((right) => right.rightId)).toEqual([realRightId]);
    expect((await fx.call('GET', `/id/users/carol/subs/${subscriptionId}`, A)).status).toBe(404);
    const subs = (await (await fx.call('GET', '/id/users/carol/subs', A)).json()) as { subscription: unknown[] };
    expect(subs.subscription).toEqual([]);
    await expect.poll(async () => (await check()).map((right) => right.rightId)).toEqual([realRightId]);
    expect((await fx.call('GET', `/id/users/carol/entitlements/news?clockId=${clockId}`, A)).status).toBe(404);
    // Creations naming it are 404; the scheduler keeps nothing of it.
    const again = await fx.call('POST', '/id/users/carol/subs', A, {
      grantorId: 'A',
      timeSpec: 'R/2026-01-01T00:00:00Z/P1M',
      rightsSpec: [{ sku: 'news' }],
      clockId,
    });
    expect(again.status).toBe(404);
    const db = await mongoose.createConnection(fx.system.mongoUrlFor('scheduler')).asPromise();
    try {
      for (const collection of ['subscription_schedules', 'right_expiries', 'hold_expiries'])
        expect(await db.collection(collection).countDocuments({ clockId }), collection).toBe(0);
    } finally {
      await db.close();
    }
  });

  it('when a grantor has an endpoint with "clocks": true and one without, then only the first receives the events of what lives on a clock; both receive real time’s', async () => {
    const receivers = [new WebhookReceiver(), new WebhookReceiver()];
    const endpointIds: string[] = [];
    try {
      const [plain, rehearsals] = await Promise.all(
        receivers.map(async (receiver, index) => {
          await receiver.start();
          const registered = await fx.call('POST', '/webhooks/endpoints', A, {
            url: receiver.url,
            events: ['right.created'],
            ...(index === 1 ? { clocks: true } : {}),
          });
          expect(registered.status, await registered.clone().text()).toBe(201);
          const endpoint = (await registered.json()) as { endpointId: string; clocks: boolean };
          expect(endpoint).toMatchObject({ clocks: index === 1 });
          endpointIds.push(endpoint.endpointId);
          return receiver;
        }),
      );
      const clockId = await clockAt('2026-01-01T00:00:00Z');
      const onClock = await grant('alice', 'news', '2026-01-01T00:00:00Z/2026-02-01T00:00:00Z', { clockId });
      const real = await grant('alice', 'news', '2026-01-01T00:00:00Z/2099-01-01T00:00:00Z');
      const subjects = (receiver: WebhookReceiver) =>
        receiver.received.map((request) => (JSON.parse(request.body) as { subject: string }).subject);
      await expect.poll(() => subjects(rehearsals!)).toEqual(expect.arrayContaining([onClock, real]));
      await expect.poll(() => subjects(plain!)).toContain(real);
      // Both came through the same dispatch: had the rehearsal's gone to the plain one, it would be there by now.
      expect(subjects(plain!)).not.toContain(onClock);
    } finally {
      // Gone with their receivers: the later tests' thousands of rights would be retried to them.
      for (const endpointId of endpointIds) await fx.call('DELETE', `/webhooks/endpoints/${endpointId}`, A);
      for (const receiver of receivers) await receiver.stop();
    }
  });

  it('when a clock holding a thousand rights is deleted, then they are gone from lists and the schedule within a minute', async () => {
    const clockId = await clockAt('2026-01-01T00:00:00Z');
    const users = Array.from({ length: 20 }, (_, index) => `deleted-${index}`);
    for (const user of users)
      expect((await fx.call('PUT', `/id/users/${user}`, fx.system.adminHeaders().authorization!)).status).toBe(201);
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < 1_000) {
          const user = users[next++ % users.length]!;
          await grant(user, 'news', '2026-01-01T00:00:00Z/2027-01-01T00:00:00Z', { clockId });
        }
      }),
    );
    const rights = await mongoose.createConnection(fx.system.mongoUrlFor('rights')).asPromise();
    const scheduler = await mongoose.createConnection(fx.system.mongoUrlFor('scheduler')).asPromise();
    try {
      const live = () => rights.collection('rights').countDocuments({ clockId, removed: { $ne: true } });
      const scheduled = () => scheduler.collection('right_expiries').countDocuments({ clockId });
      await expect.poll(scheduled).toBeGreaterThan(0);
      expect(await live()).toBe(1_000);
      expect((await fx.call('DELETE', `/clocks/${clockId}`, A)).status).toBe(204);
      await expect.poll(live, { timeout: 60_000, interval: 1_000 }).toBe(0);
      expect(await scheduled()).toBe(0);
      for (const user of users.slice(0, 3)) {
        const listed = await fx.call('GET', `/id/users/${user}/rights`, A);
        expect(((await listed.json()) as { right: unknown[] }).right).toEqual([]);
      }
    } finally {
      await rights.close();
      await scheduler.close();
    }
  }, 180_000);
});
