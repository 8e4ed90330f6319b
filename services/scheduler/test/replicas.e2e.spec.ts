import { idsBySubject, passExpiryMarker, TestSystem, systemFixture } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const A = TestSystem.clientAuthorization('grantor-a');
const SUBSCRIPTIONS = 12;
const PERIODS = 3;

const fx = systemFixture({
  processes: true,
  name: 'replicas',
  backends: ['catalog', 'rights', 'subscriptions', 'scheduler'],
  replicas: { rights: 2, subscriptions: 2, scheduler: 2 },
  env: { SCHEDULER_TICK_MS: '200', TEST_CLOCKS_MAX: '1' },
  collect: { 'rights.events': '#' },
  seed: {
    clients: [{ clientId: 'grantor-a', grantorId: 'A' }],
    users: ['gina', 'marker', 'clara'],
    skus: { news: {} },
  },
});
beforeAll(fx.start);
afterAll(fx.stop);

/** The right.created events of the rights a subscription issued. */
const ofSubscription = (id: string) =>
  fx
    .events('rights.events')
    .messages.filter(
      (m) =>
        m.routingKey === 'right.created' &&
        (m.body.data as { link: Array<{ href: string }> }).link.some((l) => l.href.endsWith(`/subs/${id}`)),
    );

/** Every command sent before now has been handled (a marker right's expiry has come through after them). */
const passed = () =>
  passExpiryMarker(fx.system, {
    authorization: A,
    user: 'marker',
    grantorId: 'A',
    sku: 'news',
    events: fx.events('rights.events'),
  });

/** SUBSCRIPTIONS subscriptions of gina, their first period starting 2 s from now; their ids. */
async function subscribe(timeSpecFrom: (start: string) => string): Promise<string[]> {
  const start = new Date(Math.floor(Date.now() / 1000) * 1000 + 2000).toISOString().replace(/\.000Z$/, 'Z');
  const ids: string[] = [];
  for (let i = 0; i < SUBSCRIPTIONS; i++) {
    const response = await fetch(`${fx.system.gatewayUrl}/id/users/gina/subs`, {
      method: 'POST',
      headers: { authorization: A, 'content-type': 'application/json' },
      body: JSON.stringify({ grantorId: 'A', timeSpec: timeSpecFrom(start), rightsSpec: [{ sku: 'news' }] }),
    });
    expect(response.status).toBe(201);
    ids.push(((await response.json()) as { subscriptionId: string }).subscriptionId);
  }
  return ids;
}

describe('several replicas of every service', () => {
  it('when two schedulers and two replicas of each service renew subscriptions, then every period yields its right exactly once', async () => {
    // Periods of 5 s: a renewal that comes after its period has ended issues no right for it
    // (docs/api.md), and under the suite's load renewal has lagged more than 2 s.
    const ids = await subscribe((start) => `R${PERIODS}/${start}/PT5S`);
    await fx
      .events('rights.events')
      .waitFor(() => ids.every((id) => new Set(ofSubscription(id).map((m) => m.body.subject)).size >= PERIODS), 45_000);
    await passed(); // every command sent before it has been handled: a duplicate would be in
    for (const id of ids) {
      const rights = new Set(ofSubscription(id).map((m) => m.body.subject));
      expect(rights.size).toBe(PERIODS);
      const starts = new Set(
        ofSubscription(id).map((m) => String((m.body.data as { timeInterval: string }).timeInterval).split('/')[0]),
      );
      expect(starts.size).toBe(PERIODS);
    }
    const listed = (await (
      await fetch(`${fx.system.gatewayUrl}/id/users/gina/rights?limit=1000`, { headers: fx.system.adminHeaders() })
    ).json()) as {
      right: unknown[];
    };
    expect(listed.right).toHaveLength(SUBSCRIPTIONS * PERIODS);
    // The last period ends a tick or so after its right was issued; then each subscription expires.
    const stateOf = async (id: string) =>
      (
        (await (
          await fetch(`${fx.system.gatewayUrl}/id/users/gina/subs/${id}`, { headers: { authorization: A } })
        ).json()) as { state: string }
      ).state;
    await expect.poll(async () => Promise.all(ids.map(stateOf))).toEqual(ids.map(() => 'EXPIRED'));
  });

  it('when two schedulers share the recording of a test clock’s advance, then it is ready at its target with every month’s right of every subscription once', async () => {
    // docs/decisions/0048: the driver learns of the other replica's recordings from the store.
    const post = (path: string, body: object) =>
      fetch(`${fx.system.gatewayUrl}${path}`, {
        method: 'POST',
        headers: { authorization: A, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const created = await post('/clocks', { grantorId: 'A', time: '2026-01-01T00:00:00Z' });
    expect(created.status).toBe(201);
    const { clockId } = (await created.json()) as { clockId: string };
    const ids: string[] = [];
    for (let i = 0; i < SUBSCRIPTIONS; i++) {
      const response = await post('/id/users/clara/subs', {
        grantorId: 'A',
        timeSpec: 'R/2026-01-01T00:00:00Z/P1M',
        rightsSpec: [{ sku: 'news' }],
        clockId,
      });
      expect(response.status).toBe(201);
      ids.push(((await response.json()) as { subscriptionId: string }).subscriptionId);
    }
    const months = 6;
    expect((await post(`/clocks/${clockId}/advance`, { to: '2026-07-01T00:00:00Z' })).status).toBe(202);
    const clock = async () =>
      (await (await fetch(`${fx.system.gatewayUrl}/clocks/${clockId}`, { headers: { authorization: A } })).json()) as {
        status: string;
        time: string;
      };
    await expect.poll(async () => (await clock()).status, { timeout: 60_000 }).toBe('ready');
    expect((await clock()).time).toBe('2026-07-01T00:00:00Z');

    const listed = await fetch(`${fx.system.gatewayUrl}/id/users/clara/rights?limit=1000`, {
      headers: { authorization: A },
    });
    const rights = ((await listed.json()) as { right: Array<{ rightId: string; timeInterval: string; state: string }> })
      .right;
    expect(rights).toHaveLength(SUBSCRIPTIONS * (months + 1));
    // Every month, one right of each subscription; all but the last expired.
    const perMonth = new Map<string, number>();
    for (const right of rights) {
      const month = right.timeInterval.slice(0, 7);
      perMonth.set(month, (perMonth.get(month) ?? 0) + 1);
    }
    expect(Object.fromEntries(perMonth)).toEqual(
      Object.fromEntries(['01', '02', '03', '04', '05', '06', '07'].map((m) => [`2026-${m}`, SUBSCRIPTIONS])),
    );
    expect(rights.filter((right) => right.state === 'ACTIVE').map((right) => right.timeInterval.slice(0, 7))).toEqual(
      ids.map(() => '2026-07'),
    );
    const events = fx.events('rights.events');
    await events.waitFor((messages) => {
      const seen = idsBySubject(messages, 'right.created');
      return rights.every((right) => seen.has(right.rightId));
    });
    const createdEvents = idsBySubject(events.messages, 'right.created');
    for (const right of rights) expect(createdEvents.get(right.rightId)?.size, right.rightId).toBe(1);
  });

  it('when one of two schedulers is killed, then the other takes over its partitions within seconds and renews what falls due', async () => {
    const owned = async (name: string) =>
      Number(
        /^scheduler_owned_partitions(?:\{[^}]*\})? (\d+)/m.exec(
          await (await fetch(`${fx.system.service(name).url}/metrics`)).text(),
        )?.[1],
      );
    // Shared while both run.
    await expect.poll(async () => [await owned('scheduler'), await owned('scheduler#2')]).toEqual([4, 4]);
    await fx.system.service('scheduler#2').kill();
    const killedAt = Date.now();
    await expect.poll(() => owned('scheduler'), { interval: 200 }).toBe(8);
    expect(Date.now() - killedAt).toBeLessThan(8_000);

    const ids = await subscribe((start) => `R1/${start}/PT1H`);
    await fx.events('rights.events').waitFor(() => ids.every((id) => ofSubscription(id).length >= 1), 15_000);
    await passed();
    for (const id of ids) expect(new Set(ofSubscription(id).map((m) => m.body.id)).size).toBe(1);
  });
});
