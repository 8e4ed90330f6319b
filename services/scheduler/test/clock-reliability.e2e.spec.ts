import { setTimeout as sleep } from 'node:timers/promises';
import type { Right } from '@rs/contracts';
import { clientsOf, idsBySubject, systemFixture, TestSystem } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// docs/decisions/0048: an advance through crashes. Monthly subscriptions on a test clock, a
// quarter of them with a plan change waiting for February, are advanced a year while the
// subscriptions, rights and scheduler processes are killed in turn; afterwards every month of
// every subscription has exactly one right of the plan of that month, every right one
// `right.created`, and the clock is ready at its target.
const SUBSCRIPTIONS = 40;
const MONTHS = 12;
const month = (index: number) => Date.UTC(2026, index, 1);

const fx = systemFixture({
  processes: true,
  name: 'clock_reliability',
  backends: ['catalog', 'rights', 'subscriptions', 'scheduler'],
  env: { LOG_LEVEL: 'warn', RATE_LIMIT_PER_SECOND: '0', SCHEDULER_TICK_MS: '200', TEST_CLOCKS_MAX: '1' },
  seed: { clients: clientsOf({ 'grantor-a': 'A' }), users: ['rehearser'], skus: { basic: {}, premium: {} } },
  collect: { 'rights.events': 'right.created', 'subscriptions.events': 'subscription.renewed' },
});
beforeAll(fx.start);
afterAll(fx.stop);
const A = TestSystem.clientAuthorization('grantor-a');

/** A call that a crashing service may leave unanswered (null). */
const call = (method: string, path: string, body?: unknown) =>
  fetch(`${fx.system.gatewayUrl}${path}`, {
    method,
    headers: { authorization: A, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  }).catch(() => null);

type RightView = Pick<Right, 'rightId' | 'sku' | 'state' | 'timeInterval' | 'link'>;

describe('an advance through crashes (docs/decisions/0048)', () => {
  it('when 40 monthly subscriptions on a clock are advanced 12 months while the subscriptions, rights and scheduler processes are killed, then every month has exactly one right of its plan and every right one right.created', async () => {
    const created = await call('POST', '/clocks', { grantorId: 'A', time: '2026-01-01T00:00:00Z' });
    expect(created?.status).toBe(201);
    const { clockId } = (await created!.json()) as { clockId: string };
    const ids: string[] = [];
    const body = { grantorId: 'A', timeSpec: 'R/2026-01-01T00:00:00Z/P1M', rightsSpec: [{ sku: 'basic' }], clockId };
    for (let i = 0; i < SUBSCRIPTIONS; i++) {
      // A 503 (the clock's time not read in time, on a loaded machine) created nothing: sent
      // again after its Retry-After, as a client would.
      let subscription = await call('POST', '/id/users/rehearser/subs', body);
      for (let retry = 0; subscription?.status === 503 && retry < 5; retry++) {
        await sleep(Number(subscription.headers.get('retry-after') ?? 1) * 1000);
        subscription = await call('POST', '/id/users/rehearser/subs', body);
      }
      expect(subscription?.status).toBe(201);
      ids.push(((await subscription!.json()) as { subscriptionId: string }).subscriptionId);
    }
    const changed = ids.slice(0, SUBSCRIPTIONS / 4);
    for (const id of changed) {
      const change = await call('POST', `/id/users/rehearser/subs/${id}/change`, {
        rightsSpec: [{ sku: 'premium' }],
        at: 'next-period',
      });
      expect(change?.status).toBe(200);
    }
    const listed = async () => {
      const answer = await call('GET', '/id/users/rehearser/rights?limit=1000');
      return answer?.status === 200 ? ((await answer.json()) as { right: RightView[] }).right : [];
    };
    await expect.poll(async () => (await listed()).length).toBe(SUBSCRIPTIONS);

    const clock = async () => {
      const answer = await call('GET', `/clocks/${clockId}`);
      return answer?.status === 200 ? ((await answer.json()) as { time: string; status: string }) : null;
    };
    // The advance's progress: the renewals done so far (each object goes at its own pace, and
    // the clock's time follows the slowest, so it is no measure of how far the work is).
    const renewals = fx.events('subscriptions.events');
    const renewedSoFar = () =>
      [...idsBySubject(renewals.messages, 'subscription.renewed').values()].reduce((sum, ids) => sum + ids.size, 0);
    const advanced = await call('POST', `/clocks/${clockId}/advance`, { to: new Date(month(MONTHS)).toISOString() });
    expect(advanced?.status).toBe(202);
    // Each process killed in the middle of the advance, in turn, and started again: the first two
    // hold the renewals back while they are down, so the next kill still finds the advance under way.
    for (const [name, months] of [
      ['subscriptions', 3],
      ['scheduler', 6],
      ['rights', 9],
    ] as const) {
      await expect.poll(renewedSoFar, { timeout: 60_000, interval: 20 }).toBeGreaterThanOrEqual(SUBSCRIPTIONS * months);
      expect((await clock())?.status, 'the advance is under way').toBe('advancing');
      await fx.system.service(name).kill();
      await sleep(300); // the wait is the test's subject: the advance goes on without it for a moment
      await fx.system.service(name).start();
    }
    await expect.poll(async () => (await clock())?.status, { timeout: 120_000 }).toBe('ready');
    expect((await clock())?.time).toBe(new Date(month(MONTHS)).toISOString().replace('.000Z', 'Z'));

    // Every month of every subscription: exactly one right, of the plan of that month.
    const expectedRights = SUBSCRIPTIONS * (MONTHS + 1);
    await expect.poll(async () => (await listed()).length, { timeout: 60_000 }).toBe(expectedRights);
    const rights = await listed();
    for (const id of ids) {
      const own = rights
        .filter((right) => right.link.some((link) => link.rel === 'subscription' && link.href.endsWith(`/${id}`)))
        .map((right) => ({ ...right, start: Date.parse(right.timeInterval.split('/')[0]!) }))
        .sort((x, y) => x.start - y.start);
      const shown = `${id} ${JSON.stringify(own.map((right) => [right.sku, right.timeInterval, right.state]))}`;
      expect(
        own.map((right) => right.start),
        shown,
      ).toEqual(Array.from({ length: MONTHS + 1 }, (_, i) => month(i)));
      expect(
        own.map((right) => right.sku),
        shown,
      ).toEqual(own.map((_, i) => (changed.includes(id) && i > 0 ? 'premium' : 'basic')));
      expect(
        own.map((right) => right.state),
        shown,
      ).toEqual(own.map((_, i) => (i < MONTHS ? 'EXPIRED' : 'ACTIVE')));
    }

    // One right.created per right, however often delivered.
    const rightEvents = fx.events('rights.events');
    await rightEvents.waitFor((messages) => idsBySubject(messages, 'right.created').size >= expectedRights, 30_000);
    const createdEvents = idsBySubject(rightEvents.messages, 'right.created');
    expect(new Set(createdEvents.keys())).toEqual(new Set(rights.map((right) => right.rightId)));
    for (const [rightId, eventIds] of createdEvents) expect(eventIds.size, rightId).toBe(1);
  }, 300_000);
});
