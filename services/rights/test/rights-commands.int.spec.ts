import { randomBytes } from 'node:crypto';
import { createCloudEvent, type RightsCascadeData, type RightsIssueData } from '@rs/contracts';
import { passExpiryMarker, rightsIssue, systemFixture } from '@rs/testing';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const admin = () => fx.system.adminHeaders();
const NOW = Date.now();
const iso = (offsetMs: number) => new Date(NOW + offsetMs).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** Publishes a command exactly as the subscriptions service or the scheduler does. */
async function send(type: string, subject: string, data: unknown, raw?: string) {
  const event = createCloudEvent({ source: '/test', type, subject, data });
  fx.commands.publish('commands', type, Buffer.from(raw ?? JSON.stringify(event)), {
    persistent: true,
    messageId: event.id,
  });
  await fx.commands.waitForConfirms();
}

type RightView = { rightId: string; state: string; generation: string; link: Array<{ rel: string; href: string }> };
async function rightsOf(user: string): Promise<RightView[]> {
  const response = await fetch(`${fx.system.gatewayUrl}/id/users/${user}/rights`, { headers: admin() });
  return ((await response.json()) as { right: RightView[] }).right;
}

function issue(
  subscriptionId: string,
  periodStart: string,
  state: 'ACTIVE' | 'SUSPENDED',
  interval = `${iso(-60_000)}/${iso(3_600_000)}`,
): RightsIssueData {
  return rightsIssue({
    subscriptionId,
    connectId: 'carol',
    periodStart,
    timeInterval: interval,
    state,
    grantorContext: 'sub-ctx',
    more: [{ serviceProviderId: 'SP' }],
  });
}

const fx = systemFixture({
  name: 'rights_cmd',
  commands: true,
  backends: ['catalog', 'rights', 'scheduler'],
  env: { SCHEDULER_TICK_MS: '200' },
  collect: { 'rights.events': '#' },
  seed: { users: ['carol'], skus: { news: { serviceProviderId: 'SP', grantorIds: ['A'] } } },
});
beforeAll(fx.start);
afterAll(fx.stop);

describe('rights.issue', () => {
  it('when the same command is delivered 10 times at once, then each right exists once, with its subscription link', async () => {
    const subscriptionId = `S${randomBytes(4).toString('hex')}`;
    const command = issue(subscriptionId, '2026-03-01T00:00:00+01:00', 'ACTIVE');
    await Promise.all(Array.from({ length: 10 }, () => send('rights.issue', subscriptionId, command)));
    // The same period written with another offset is the same period.
    await send('rights.issue', subscriptionId, { ...command, periodStart: '2026-02-28T23:00:00Z' });
    await expect
      .poll(
        async () =>
          (await rightsOf('carol')).filter((r) => r.link.some((l) => l.href.endsWith(`/subs/${subscriptionId}`)))
            .length,
      )
      .toBe(2);
    await fx
      .events('rights.events')
      .waitFor(
        (m) =>
          m.filter(
            (e) =>
              e.routingKey === 'right.created' &&
              (e.body.data as { link?: Array<{ href: string }> })?.link?.some((l) => l.href.endsWith(subscriptionId)),
          ).length >= 2,
      );
    const created = fx
      .events('rights.events')
      .messages.filter((e) => e.routingKey === 'right.created' && JSON.stringify(e.body.data).includes(subscriptionId));
    expect(new Set(created.map((e) => e.body.subject)).size).toBe(2);
    expect(new Set(created.map((e) => e.body.id)).size).toBe(2);
  });

  it('when a command is malformed, then it is dead-lettered and the queue goes on', async () => {
    await send('rights.issue', 'x', { nonsense: true });
    await send('rights.issue', 'x', null, 'not json at all');
    await send('rights.issue', 'x', issue('Sbad', '2026-03-01T00:00:00Z', 'ACTIVE', 'garbage-interval'));
    await expect.poll(() => fx.system.rabbit.queueMessageCount(fx.system.vhost, 'rights.commands.dlq')).toBe(3);
    const subscriptionId = `S${randomBytes(4).toString('hex')}`;
    await send('rights.issue', subscriptionId, issue(subscriptionId, '2026-04-01T00:00:00Z', 'SUSPENDED'));
    await expect
      .poll(async () =>
        (await rightsOf('carol'))
          .filter((r) => r.link.some((l) => l.href.endsWith(subscriptionId)))
          .map((r) => r.state),
      )
      .toEqual(['SUSPENDED', 'SUSPENDED']);
  });
});

describe('rights.issue in batches (docs/decisions/0020)', () => {
  it('when a batch of periods holds one whose interval does not parse, then the others are issued and that one alone is dead-lettered', async () => {
    const dead = () => fx.system.rabbit.queueMessageCount(fx.system.vhost, 'rights.commands.dlq');
    const before = await dead();
    const [first, broken, last] = ['a', 'b', 'c'].map((tag) => `S${tag}${randomBytes(4).toString('hex')}`);
    await send('rights.issue', first!, {
      items: [
        issue(first!, '2026-06-01T00:00:00Z', 'ACTIVE'),
        issue(broken!, '2026-06-01T00:00:00Z', 'ACTIVE', 'garbage-interval'),
        issue(last!, '2026-06-01T00:00:00Z', 'SUSPENDED'),
      ],
    });
    const statesOf = async (subscriptionId: string) =>
      (await rightsOf('carol')).filter((r) => r.link.some((l) => l.href.endsWith(subscriptionId))).map((r) => r.state);
    await expect.poll(() => statesOf(first!)).toEqual(['ACTIVE', 'ACTIVE']);
    await expect.poll(() => statesOf(last!)).toEqual(['SUSPENDED', 'SUSPENDED']);
    await expect.poll(dead).toBe(before + 1);
    expect(await statesOf(broken!)).toEqual([]);
  });
});

describe('rights.cascade', () => {
  it('when a subscription is suspended and reactivated, then its ACTIVE rights follow, and ended ones stay suspended', async () => {
    const subscriptionId = `S${randomBytes(4).toString('hex')}`;
    await send('rights.issue', subscriptionId, issue(subscriptionId, '2026-05-01T00:00:00Z', 'ACTIVE'));
    const ended = issue(subscriptionId, '2026-04-01T00:00:00Z', 'ACTIVE', `${iso(-7_200_000)}/${iso(-3_600_000)}`);
    await send('rights.issue', subscriptionId, ended);
    const ofSubscription = async () =>
      (await rightsOf('carol'))
        .filter((r) => r.link.some((l) => l.href.endsWith(`/subs/${subscriptionId}`)))
        .map((r) => r.state)
        .sort();
    await expect.poll(ofSubscription).toHaveLength(4);
    await send('rights.cascade', subscriptionId, {
      subscriptionId,
      connectId: 'carol',
      action: 'suspend',
    } satisfies RightsCascadeData);
    // The ended rights are expired by the scheduler meanwhile, or suspended first: never ACTIVE.
    await expect.poll(ofSubscription).not.toContain('ACTIVE');
    await send('rights.cascade', subscriptionId, {
      subscriptionId,
      connectId: 'carol',
      action: 'activate',
    } satisfies RightsCascadeData);
    await expect.poll(async () => (await ofSubscription()).filter((s) => s === 'ACTIVE').length).toBe(2);
    expect((await ofSubscription()).filter((s) => s === 'ACTIVE')).toHaveLength(2);
  });
});

describe('expiry (docs/api.md "Rights")', () => {
  it('when the interval of an ACTIVE or SUSPENDED right ends, then within seconds it is EXPIRED with one right.expired', async () => {
    const headers = { ...admin(), 'content-type': 'application/json' };
    const make = async (state: string) => {
      const response = await fetch(`${fx.system.gatewayUrl}/id/users/carol/rights`, {
        method: 'POST',
        headers,
        body: JSON.stringify({
          sku: 'news',
          grantorId: 'A',
          state,
          timeInterval: `${new Date(Date.now() - 1000).toISOString()}/PT2S`,
        }),
      });
      expect(response.status).toBe(201);
      return ((await response.json()) as RightView).rightId;
    };
    const ids = [await make('ACTIVE'), await make('SUSPENDED'), await make('CREATED')];
    const stateOf = async (id: string) =>
      (
        (await (
          await fetch(`${fx.system.gatewayUrl}/id/users/carol/rights/${id}`, { headers: admin() })
        ).json()) as RightView
      ).state;
    await expect.poll(() => stateOf(ids[0]!)).toBe('EXPIRED');
    await expect.poll(() => stateOf(ids[1]!)).toBe('EXPIRED');
    expect(await stateOf(ids[2]!)).toBe('CREATED');
    // Later ticks must not expire them again: a marker ending after them has come through.
    await passExpiryMarker(fx.system, {
      authorization: admin().authorization!,
      user: 'carol',
      grantorId: 'A',
      sku: 'news',
      events: fx.events('rights.events'),
    });
    for (const id of ids.slice(0, 2)) {
      const expired = fx
        .events('rights.events')
        .messages.filter((e) => e.body.subject === id && e.routingKey === 'right.expired');
      expect(new Set(expired.map((e) => e.body.id)).size).toBe(1);
    }
    const refused = await fetch(`${fx.system.gatewayUrl}/id/users/carol/rights/${ids[0]}/activate`, {
      method: 'POST',
      headers: admin(),
    });
    expect(refused.status).toBe(409);
  });
});
