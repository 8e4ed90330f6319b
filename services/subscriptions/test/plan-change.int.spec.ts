import { clientsOf, EVENTUALLY, systemFixture, TestSystem } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

// docs/api.md "Plan changes", through the gateway, with the rights service and the scheduler:
// `now` ends the current period's old rights and issues the new templates for its rest;
// `next-period` waits (withdrawable) and is taken up at the next period's start.
const A = TestSystem.clientAuthorization('grantor-a');
/** Users of the race of two changes, one subscription each. */
const RACERS = Array.from({ length: 48 }, (_, index) => `racer-${index}`);
const B = TestSystem.clientAuthorization('grantor-b');
const fx = systemFixture({
  name: 'plan_change',
  backends: ['catalog', 'rights', 'subscriptions', 'scheduler'],
  collect: { 'rights.events': '#', 'subscriptions.events': '#' },
  bearer: true,
  seed: {
    clients: clientsOf({ 'grantor-a': 'A', 'grantor-b': 'B' }),
    users: ['paula', 'quentin', 'rosa', ...RACERS],
    skus: { basic: {}, premium: {}, 'sp-only': { serviceProviderId: 'SP', grantorIds: ['B'] } },
  },
});
beforeAll(fx.start);
afterAll(fx.stop);

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

interface RightView {
  rightId: string;
  sku: string;
  state: string;
  quantity: number | null;
  timeInterval: string;
  link: Array<{ rel: string; href: string }>;
}
interface SubscriptionView {
  subscriptionId: string;
  generation: string;
  rightsSpec: Array<{ sku: string; quantity: number | null }>;
  pendingChange: { rightsSpec: Array<{ sku: string }>; effectiveAt: string } | null;
}

async function subscribe(user: string, start: number, period: string): Promise<SubscriptionView> {
  const created = await fx.call('POST', `/id/users/${user}/subs`, A, {
    grantorId: 'A',
    timeSpec: `R/${iso(start)}/${period}`,
    rightsSpec: [{ sku: 'basic' }],
  });
  expect(created.status, await created.clone().text()).toBe(201);
  return (await created.json()) as SubscriptionView;
}

/** The rights the subscription issued, oldest first. */
async function rightsOf(user: string, subscriptionId: string): Promise<RightView[]> {
  const list = (await (await fx.call('GET', `/id/users/${user}/rights?grantorId=A&limit=100`, A)).json()) as {
    right: RightView[];
  };
  return list.right
    .filter((r) => r.link.some((l) => l.rel === 'subscription' && l.href.endsWith(subscriptionId)))
    .sort((a, b) => a.timeInterval.localeCompare(b.timeInterval) || a.sku.localeCompare(b.sku));
}

async function generationOf(user: string, subscriptionId: string): Promise<number> {
  const read = (await (await fx.call('GET', `/id/users/${user}/subs/${subscriptionId}`, A)).json()) as SubscriptionView;
  return Number(read.generation);
}

const change = (user: string, subscriptionId: string, body: unknown, authorization = A, headers = {}) =>
  fx.call('POST', `/id/users/${user}/subs/${subscriptionId}/change`, authorization, body, headers);

/** Each right's `right.created` events, once published: exactly one event id per right. */
async function createdOnce(rightIds: readonly string[]) {
  const idsOf = (rightId: string) =>
    new Set(
      fx
        .events('rights.events')
        .messages.filter((m) => m.body.type === 'right.created' && m.body.subject === rightId)
        .map((m) => m.body.id),
    );
  await vi.waitFor(() => {
    for (const rightId of rightIds) expect(idsOf(rightId).size, rightId).toBe(1);
  }, EVENTUALLY);
}

describe('plan changes (docs/api.md "Plan changes")', () => {
  it("when a plan changes now, then the current period's old right ends at that second, the new template's right runs for the rest of the period, and the next period issues the new template only", async () => {
    // Periods longer than renewal's lag under the suite's load: a period whose right would
    // have ended when renewed is never issued (docs/api.md "Renewal"), which is not this test's subject.
    const periodMs = 12_000;
    const start = Math.floor(Date.now() / 1000) * 1000 - 1_000;
    const { subscriptionId } = await subscribe('paula', start, 'PT12S');
    await vi.waitFor(async () => expect(await rightsOf('paula', subscriptionId)).toHaveLength(1), { timeout: 10_000 });
    const before = await generationOf('paula', subscriptionId);

    const changed = await change('paula', subscriptionId, { rightsSpec: [{ sku: 'premium', quantity: 5 }], at: 'now' });
    expect(changed.status, await changed.clone().text()).toBe(200);
    expect(changed.headers.get('content-type')).toMatch(/^application\/json/);
    const view = (await changed.json()) as SubscriptionView;
    expect(view).toMatchObject({
      generation: String(before + 1),
      rightsSpec: [{ sku: 'premium', quantity: 5 }],
      pendingChange: null,
    });
    expect(changed.headers.get('etag')).toBe(`"${before + 1}"`);

    const periodEnd = iso(start + periodMs);
    await vi.waitFor(
      async () => {
        const [old, rest] = await rightsOf('paula', subscriptionId);
        expect(old).toMatchObject({ sku: 'basic', state: 'EXPIRED' });
        expect(rest).toMatchObject({ sku: 'premium', state: 'ACTIVE' });
        // The old right ends where the new one starts: the change's second.
        const cut = old!.timeInterval.split('/')[1]!;
        expect(rest!.timeInterval).toBe(`${cut}/${periodEnd}`);
        expect(Date.parse(cut)).toBeGreaterThan(start);
      },
      { timeout: 10_000 },
    );
    // The next period: the new template only.
    await vi.waitFor(async () => expect(await rightsOf('paula', subscriptionId)).toHaveLength(3), { timeout: 30_000 });
    const rights = await rightsOf('paula', subscriptionId);
    expect(rights[2]).toMatchObject({ sku: 'premium', timeInterval: `${periodEnd}/${iso(start + 2 * periodMs)}` });
    await createdOnce(rights.map((r) => r.rightId));
    const expired = fx.events('rights.events').messages.filter((m) => m.body.type === 'right.expired');
    expect(expired.some((m) => m.body.subject === rights[0]!.rightId)).toBe(true);

    // The change is an event and a history entry.
    const events = fx.events('subscriptions.events').messages.filter((m) => m.body.subject === subscriptionId);
    expect(events.map((m) => m.body.type)).toContain('subscription.changed');
    const history = (await (await fx.call('GET', `/id/users/paula/subs/${subscriptionId}/history`, A)).json()) as {
      history: Array<{ type: string }>;
    };
    expect(history.history.map((entry) => entry.type)).toContain('subscription.changed');
  });

  it("when a plan changes at the next period, then it is pending (withdrawable) and the next period's start issues the new template, the current right untouched", async () => {
    const periodMs = 10_000;
    const start = Math.floor(Date.now() / 1000) * 1000 - 1_000;
    const { subscriptionId } = await subscribe('quentin', start, 'PT10S');
    await vi.waitFor(async () => expect(await rightsOf('quentin', subscriptionId)).toHaveLength(1), {
      timeout: 10_000,
    });
    const nextStart = iso(start + periodMs);
    const before = await generationOf('quentin', subscriptionId);
    const pending = (await (
      await change('quentin', subscriptionId, { rightsSpec: [{ sku: 'premium' }], at: 'next-period' })
    ).json()) as SubscriptionView;
    expect(pending).toMatchObject({
      generation: String(before + 1),
      rightsSpec: [{ sku: 'basic' }],
      pendingChange: { rightsSpec: [{ sku: 'premium' }], effectiveAt: nextStart },
    });
    const path = `/id/users/quentin/subs/${subscriptionId}`;
    expect((await fx.call('DELETE', `${path}/change`, A)).status).toBe(204);
    expect(await (await fx.call('GET', path, A)).json()).toMatchObject({
      generation: String(before + 2),
      pendingChange: null,
    });
    // Withdrawing with nothing pending changes nothing.
    expect((await fx.call('DELETE', `${path}/change`, A)).status).toBe(204);
    expect(await generationOf('quentin', subscriptionId)).toBe(before + 2);
    expect(
      (await change('quentin', subscriptionId, { rightsSpec: [{ sku: 'premium' }], at: 'next-period' })).status,
    ).toBe(200);

    await vi.waitFor(async () => expect(await rightsOf('quentin', subscriptionId)).toHaveLength(2), {
      timeout: 30_000,
    });
    const [current, next] = await rightsOf('quentin', subscriptionId);
    expect(current).toMatchObject({ sku: 'basic', timeInterval: `${iso(start)}/${nextStart}` });
    expect(next).toMatchObject({ sku: 'premium', timeInterval: `${nextStart}/${iso(start + 2 * periodMs)}` });
    expect(await (await fx.call('GET', path, A)).json()).toMatchObject({
      rightsSpec: [{ sku: 'premium' }],
      pendingChange: null,
    });
    await createdOnce([current!.rightId, next!.rightId]);
    // Booked, withdrawn, booked again, taken effect: four changes, each an event.
    await fx
      .events('subscriptions.events')
      .waitFor(
        (messages) =>
          messages.filter((m) => m.body.subject === subscriptionId && m.body.type === 'subscription.changed').length ===
          4,
      );
  });

  it('when a change is not one a creation would accept, or not the caller’s to make, then it is refused and nothing changes', async () => {
    const { subscriptionId } = await subscribe('rosa', Date.now() + 3_600_000, 'P1M');
    const path = `/id/users/rosa/subs/${subscriptionId}`;
    const refused: Array<[unknown, number]> = [
      [{ rightsSpec: [{ sku: 'nope' }], at: 'now' }, 400],
      [{ rightsSpec: [], at: 'now' }, 400],
      [{ rightsSpec: [{ sku: 'premium' }], at: 'tomorrow' }, 400],
      [{ rightsSpec: [{ sku: 'premium' }] }, 400],
      [{ rightsSpec: [{ sku: 'premium', timeSpec: 'P100Y' }], at: 'now' }, 400],
      // Provider consent: A may not grant sp-only (docs/security.md "Who may grant what"), as at creation.
      [{ rightsSpec: [{ sku: 'sp-only' }], at: 'now' }, 401],
    ];
    const creation = await fx.call('POST', '/id/users/rosa/subs', A, {
      grantorId: 'A',
      timeSpec: 'R/2030-01-01T00:00:00Z/P1M',
      rightsSpec: [{ sku: 'sp-only' }],
    });
    expect(creation.status).toBe(401);
    for (const [body, status] of refused) {
      const answer = await change('rosa', subscriptionId, body);
      expect(answer.status, JSON.stringify(body)).toBe(status);
      expect(answer.headers.get('content-type')).toMatch(status === 400 ? /^text\/plain/ : /^text\/html/);
    }
    const ok = { rightsSpec: [{ sku: 'premium' }], at: 'next-period' };
    expect((await change('rosa', subscriptionId, ok, B)).status).toBe(401);
    expect((await change('rosa', 'Unknown1', ok)).status).toBe(404);
    expect((await change('rosa', subscriptionId, ok, A, { 'if-match': '"7"' })).status).toBe(412);
    const bearer = `Bearer ${await fx.issuer.token('grantor-a', 'rosa', { scope: 'id.user.sub.read' })}`;
    expect((await change('rosa', subscriptionId, ok, bearer)).status).toBe(401);
    expect(await (await fx.call('GET', path, A)).json()).toMatchObject({ generation: '1', pendingChange: null });
    // Before its start, the next period is its first.
    expect(await (await change('rosa', subscriptionId, ok, A, { 'if-match': '"1"' })).json()).toMatchObject({
      pendingChange: { effectiveAt: expect.any(String) },
    });
  });

  it('when two changes now follow each other within 150 ms on many subscriptions, then the later supersedes the earlier: one right holds each instant, of the plan that took effect last', async () => {
    const start = Date.now() - 3_600_000;
    const subscriptions = await Promise.all(
      RACERS.map(async (user) => ({ user, subscriptionId: (await subscribe(user, start, 'P1M')).subscriptionId })),
    );
    // Their first period's right is issued before the changes (the usual case).
    await vi.waitFor(async () => {
      for (const { user, subscriptionId } of subscriptions)
        expect(await rightsOf(user, subscriptionId)).toHaveLength(1);
    }, EVENTUALLY);
    // Twelve subscriptions at a time: the client's requests under way stay within its fair share.
    for (let from = 0; from < subscriptions.length; from += 12)
      await Promise.all(
        subscriptions.slice(from, from + 12).map(async ({ user, subscriptionId }, index) => {
          const first = change(user, subscriptionId, { rightsSpec: [{ sku: 'basic', quantity: 100 }], at: 'now' });
          await new Promise((resolve) => setTimeout(resolve, ((from + index) * 7) % 150));
          const second = change(user, subscriptionId, { rightsSpec: [{ sku: 'basic', quantity: 1000 }], at: 'now' });
          const answers = [await first, await second];
          expect(
            answers.map((answer) => answer.status),
            await answers[1]!.clone().text(),
          ).toEqual([200, 200]);
        }),
      );
    const instant = (text: string) => Date.parse(text);
    await vi.waitFor(
      async () => {
        const wrong: string[] = [];
        for (const { user, subscriptionId } of subscriptions) {
          const rights = await rightsOf(user, subscriptionId);
          const now = Date.now();
          const holding = rights.filter((right) => {
            const [from, to] = right.timeInterval.split('/') as [string, string];
            return instant(from) <= now && now < instant(to);
          });
          const overlapping = rights.some((a, i) =>
            rights.slice(i + 1).some((b) => {
              const [aFrom, aTo] = a.timeInterval.split('/').map(instant) as [number, number];
              const [bFrom, bTo] = b.timeInterval.split('/').map(instant) as [number, number];
              return aFrom < bTo && bFrom < aTo;
            }),
          );
          // The change that took effect last (sent 0 ms apart, the second may overtake the first).
          const read = await fx.call('GET', `/id/users/${user}/subs/${subscriptionId}`, A);
          const plan = ((await read.json()) as SubscriptionView).rightsSpec[0]!.quantity;
          if (overlapping || holding.length !== 1 || holding[0]!.quantity !== plan || holding[0]!.state !== 'ACTIVE')
            wrong.push(`${user}: ${rights.map((r) => `${r.state} ${r.quantity} ${r.timeInterval}`).join(', ')}`);
        }
        expect(wrong).toEqual([]);
        // Ninety-six reads a look: once a second, within the client's rate limit; for up to 90 s, as a
        // command that met a busy store on a loaded machine is retried with back-off (30 s at most).
      },
      { timeout: 90_000, interval: 1_000 },
    );
  }, 180_000);
});
