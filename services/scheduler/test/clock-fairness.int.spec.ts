import { Exchanges, type CloudEvent, type RightEventData } from '@rs/contracts';
import { clientsOf, systemFixture, TestSystem, type CollectedMessage } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

// docs/decisions/0065: grantors share the clock lane. A replica keeps at most
// TEST_CLOCK_LANE_ITEMS items on clocks commanded at once, each grantor with some in hand an
// equal part: a grantor's large rehearsal never puts more than that ahead of another grantor's
// small one, which then runs at its own pace instead of at the large one's.
const LANE_ITEMS = 20;
const LARGE = 60;
const fx = systemFixture({
  name: 'clock_fairness',
  backends: ['catalog', 'rights', 'subscriptions', 'scheduler'],
  env: { TEST_CLOCK_LANE_ITEMS: String(LANE_ITEMS), SCHEDULER_TICK_MS: '200' },
  collect: { [Exchanges.rightsEvents]: 'right.created' },
  seed: {
    clients: clientsOf({ 'large-grantor': 'L', 'small-grantor': 'S' }),
    users: ['ann', 'ben', 'cid'],
    skus: { monthly: {} },
  },
});
beforeAll(fx.start);
afterAll(fx.stop);

const L = TestSystem.clientAuthorization('large-grantor');
const S = TestSystem.clientAuthorization('small-grantor');
const START = '2026-01-01T00:00:00Z';
const YEAR_LATER = '2027-01-01T00:00:00Z';

/** A clock of the grantor at START with `count` monthly subscriptions on it: its id and theirs. */
async function rehearsal(authorization: string, grantorId: string, count: number) {
  const { clockId } = await fx.json<{ clockId: string }>('POST', '/clocks', authorization, { grantorId, time: START });
  // Ten at a time: well within a client's share of the gateway's connections on a loaded machine.
  const subscriptions: string[] = [];
  for (let first = 0; first < count; first += 10) {
    const made = await Promise.all(
      Array.from({ length: Math.min(10, count - first) }, async (_, i) => {
        const created = await fx.json<{ subscriptionId: string }>(
          'POST',
          `/id/users/${['ann', 'ben', 'cid'][(first + i) % 3]}/subs`,
          authorization,
          { grantorId, timeSpec: `R/${START}/P1M`, rightsSpec: [{ sku: 'monthly' }], clockId },
        );
        return created.subscriptionId;
      }),
    );
    subscriptions.push(...made);
  }
  return { clockId, subscriptions };
}

const clockOf = (authorization: string, clockId: string) =>
  fx.json<{ time: string; status: string }>('GET', `/clocks/${clockId}`, authorization);

/** The rights issued on `rights.events` for each of these subscriptions, by subscription. */
function issuedFor(subscriptions: readonly string[]): Map<string, string[]> {
  const issued = new Map(subscriptions.map((id) => [id, [] as string[]]));
  for (const { body } of fx.events('rights.events').messages as Array<
    CollectedMessage & { body: CloudEvent<RightEventData> }
  >) {
    const subscriptionId = body.data.link
      .find((link) => link.rel === 'subscription')
      ?.href.split('/')
      .pop();
    if (subscriptionId) issued.get(subscriptionId)?.push(body.data.timeInterval.split('/')[0]!);
  }
  return issued;
}

describe('grantors share the clock lane (docs/decisions/0065)', () => {
  it("when a grantor's two clocks of 60 subscriptions each advance a year and another grantor's clock of two then does too, then the small rehearsal is ready while the large one has done less than half of its year, and every renewal of both happens once", async () => {
    const large = [await rehearsal(L, 'L', LARGE), await rehearsal(L, 'L', LARGE)];
    const small = await rehearsal(S, 'S', 2);

    for (const { clockId } of large) await fx.json('POST', `/clocks/${clockId}/advance`, L, { to: YEAR_LATER });
    // The large rehearsal fills its part of the lane before the small one asks for any.
    await vi.waitFor(async () => expect((await clockOf(L, large[0]!.clockId)).time > START).toBe(true), {
      timeout: 30_000,
      interval: 100,
    });
    await fx.json('POST', `/clocks/${small.clockId}/advance`, S, { to: YEAR_LATER });
    await vi.waitFor(async () => expect((await clockOf(S, small.clockId)).status).toBe('ready'), {
      timeout: 120_000,
      interval: 100,
    });

    // Where the large rehearsal is when the small one is done: without shares, the small one's
    // every month waited behind a whole month of the large one's 120 renewals, and both were
    // done together.
    const largeAt = await Promise.all(large.map(({ clockId }) => clockOf(L, clockId)));
    for (const clock of largeAt) {
      expect(clock.status).toBe('advancing');
      expect(clock.time < '2026-07-01T00:00:00Z', `the large rehearsal at ${clock.time}`).toBe(true);
    }
    // Each month of the small rehearsal once: the first period and twelve renewals.
    for (const [, periods] of issuedFor(small.subscriptions)) {
      expect(periods).toHaveLength(13);
      expect(new Set(periods).size).toBe(13);
    }

    // The large rehearsal is slowed by nobody now: it goes on to its end, each month once.
    await vi.waitFor(
      async () => {
        for (const { clockId } of large) expect((await clockOf(L, clockId)).status).toBe('ready');
      },
      { timeout: 240_000, interval: 500 },
    );
    const periods = [...issuedFor(large.flatMap(({ subscriptions }) => subscriptions)).values()];
    expect(periods.map((issued) => [issued.length, new Set(issued).size])).toEqual(periods.map(() => [13, 13]));
  }, 420_000);
});
