import type { CloudEvent, RightEventData } from '@rs/contracts';
import { clientsOf, systemFixture, TestSystem, WebhookReceiver, type CollectedMessage } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

// docs/decisions/0053 and 0054: simulated time never delays real time. Grantor R fills the most
// test clocks it may with the most subscriptions each may hold and advances them five years;
// meanwhile grantor G's real subscriptions fall due. G's renewals and webhook deliveries are as
// late (p99) as without the rehearsal, within 2× or a second more, the one bound this file
// asserts on time (it is the point under test; this file runs alone, after every other, so that
// no other test's load decides it). The baseline is the later of two runs without clocks, one
// before the rehearsal and one after it, so that the machine's own pace in one phase and not the
// other does not decide the outcome.
const CLOCKS = 2;
const PER_CLOCK = 15;
const YEARS = 5;
const REAL = 30;
/** How long the rehearsal and its deliveries may take on a loaded machine. */
const LONG = { timeout: 300_000, interval: 1_000 };
const users = Array.from({ length: 10 }, (_, i) => `isolated-${i}`);

const fx = systemFixture({
  processes: true,
  name: 'clock_isolation',
  backends: ['catalog', 'rights', 'subscriptions', 'scheduler', 'webhooks'],
  env: {
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_SECOND: '0',
    SCHEDULER_TICK_MS: '200',
    TEST_CLOCKS_MAX: String(CLOCKS),
    TEST_CLOCK_MAX_OBJECTS: String(PER_CLOCK),
  },
  seed: { clients: clientsOf({ 'real-grantor': 'G', 'rehearsing-grantor': 'R' }), users, skus: { monthly: {} } },
  collect: { 'rights.events': 'right.created' },
});
beforeAll(fx.start);
afterAll(fx.stop);

const G = TestSystem.clientAuthorization('real-grantor');
const R = TestSystem.clientAuthorization('rehearsing-grantor');
const iso = (at: number) => new Date(at).toISOString().replace(/\.\d{3}Z$/, 'Z');
const p99 = (values: number[]) => [...values].sort((a, b) => a - b)[Math.ceil(0.99 * values.length) - 1]!;

/** A monthly subscription of `authorization`'s grantor (G or R) from `start`, on `clockId` if given: its id. */
async function subscribe(authorization: string, user: string, start: number, clockId?: string): Promise<string> {
  const { subscriptionId } = await fx.json<{ subscriptionId: string }>(
    'POST',
    `/id/users/${user}/subs`,
    authorization,
    {
      grantorId: authorization === G ? 'G' : 'R',
      timeSpec: `R/${iso(start)}/P1M`,
      rightsSpec: [{ sku: 'monthly' }],
      ...(clockId ? { clockId } : {}),
    },
  );
  return subscriptionId;
}

const created = (): Array<CollectedMessage & { body: CloudEvent<RightEventData> }> =>
  fx.events('rights.events').messages as never;
/** The subscription a right was issued for (its `subscription` link ends with its id). */
const subscriptionOf = (right: RightEventData) =>
  right.link
    .find((link) => link.rel === 'subscription')
    ?.href.split('/')
    .pop() ?? '';

/**
 * G's `REAL` subscriptions, their first period starting at a second a little ahead; `meanwhile`
 * runs once they exist, before that second. The p99 lateness, from that second, of their rights
 * on `rights.events` and of the deliveries to G's endpoint.
 */
async function realDue(receiver: WebhookReceiver, meanwhile: () => Promise<void> = async () => {}) {
  const due = Math.ceil((Date.now() + 10_000) / 1000) * 1000;
  const ids = new Set<string>();
  await Promise.all(
    Array.from({ length: REAL }, async (_, i) => {
      const subscriptionId = await subscribe(G, users[i % users.length]!, due);
      ids.add(subscriptionId);
    }),
  );
  await meanwhile();
  expect(Date.now(), 'the real subscriptions were created and the rehearsal started before their second').toBeLessThan(
    due,
  );
  const ours = (data: RightEventData) => ids.has(subscriptionOf(data));
  const rights = () => created().filter((m) => ours(m.body.data));
  const deliveries = () => receiver.received.filter((request) => ours(JSON.parse(request.body).data));
  await vi.waitFor(() => expect([rights().length, deliveries().length]).toEqual([REAL, REAL]), LONG);
  return {
    rights: p99(rights().map((m) => m.receivedAt - due)),
    deliveries: p99(deliveries().map((request) => request.at - due)),
  };
}

describe('a rehearsal beside real time (docs/decisions/0054)', () => {
  it('when one grantor\'s clocks, full, advance five years while another grantor\'s real subscriptions fall due, then the real renewals and deliveries are no later (p99) than without them, within 2× or 1 s, every renewal happens once, and an endpoint without "clocks" gets no clock event', async () => {
    const receivers = { G: new WebhookReceiver(), R: new WebhookReceiver(), Rclocks: new WebhookReceiver() };
    for (const receiver of Object.values(receivers)) await receiver.start();
    try {
      await fx.json('POST', '/webhooks/endpoints', G, { url: receivers.G.url, events: ['right.created'] });
      await fx.json('POST', '/webhooks/endpoints', R, { url: receivers.R.url, events: ['right.created'] });
      await fx.json('POST', '/webhooks/endpoints', R, {
        url: receivers.Rclocks.url,
        events: ['right.created'],
        clocks: true,
      });

      const before = await realDue(receivers.G);

      // The rehearsal: the most clocks R may have, each holding the most subscriptions it may.
      const start = Date.UTC(2026, 0, 1);
      const clocks: string[] = [];
      const subscriptions = new Set<string>();
      for (let c = 0; c < CLOCKS; c++) {
        const { clockId } = await fx.json<{ clockId: string }>('POST', '/clocks', R, {
          grantorId: 'R',
          time: iso(start),
        });
        clocks.push(clockId);
        for (let i = 0; i < PER_CLOCK; i++) {
          const subscriptionId = await subscribe(R, users[i % users.length]!, start, clockId);
          subscriptions.add(subscriptionId);
        }
        const full = await subscribe(R, users[0]!, start, clockId).catch((error: Error) => error.message);
        expect(full, 'the clock is full').toMatch(/^POST .*: 409 /);
      }
      const over = await fx.call('POST', '/clocks', R, { grantorId: 'R', time: iso(start) });
      expect(over.status, 'R has the most clocks it may').toBe(409);

      const target = iso(Date.UTC(2026 + YEARS, 0, 1));
      const beside = await realDue(receivers.G, async () => {
        for (const clockId of clocks) await fx.json('POST', `/clocks/${clockId}/advance`, R, { to: target });
      });
      const rehearsing = await Promise.all(
        clocks.map((clockId) => fx.json<{ status: string }>('GET', `/clocks/${clockId}`, R)),
      );
      expect(
        rehearsing.map((clock) => clock.status),
        'the rehearsal was still under way when every real renewal was delivered',
      ).toContain('advancing');
      await vi.waitFor(async () => {
        const states = await Promise.all(
          clocks.map((clockId) => fx.json<{ status: string; time: string }>('GET', `/clocks/${clockId}`, R)),
        );
        expect(states).toEqual(clocks.map(() => expect.objectContaining({ status: 'ready', time: target })));
      }, LONG);
      const after = await realDue(receivers.G);

      const without = {
        rights: Math.max(before.rights, after.rights),
        deliveries: Math.max(before.deliveries, after.deliveries),
      };
      for (const key of ['rights', 'deliveries'] as const)
        expect(
          beside[key],
          `p99 lateness of the real ${key} (ms) beside the rehearsal, against ${without[key]} ms without`,
        ).toBeLessThanOrEqual(Math.max(2 * without[key], without[key] + 1_000));

      // Every month of every subscription on the clocks has exactly one right (the first month's,
      // issued at creation, and the 60 the advance renewed), and every real period one.
      const months = YEARS * 12 + 1;
      const perPeriod = new Map<string, number>();
      for (const { body } of created()) {
        const key = `${subscriptionOf(body.data)} ${body.data.timeInterval.split('/')[0]}`;
        perPeriod.set(key, (perPeriod.get(key) ?? 0) + 1);
      }
      const onClocks = [...perPeriod].filter(([key]) => subscriptions.has(key.split(' ')[0]!));
      expect(onClocks.length).toBe(CLOCKS * PER_CLOCK * months);
      expect([...perPeriod.values()].filter((count) => count !== 1)).toEqual([]);

      // The endpoint that asked for clock events got every rehearsed right; the other none.
      await vi.waitFor(() => expect(receivers.Rclocks.ids().size).toBe(CLOCKS * PER_CLOCK * months), LONG);
      expect(receivers.R.received.map((request) => JSON.parse(request.body).data.clockId)).toEqual([]);
    } finally {
      for (const receiver of Object.values(receivers)) await receiver.stop();
    }
  }, 900_000);
});
