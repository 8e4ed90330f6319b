import { INTERNAL_TOKEN_HEADER, InternalTokenSigner, servicePrincipal } from '@rs/http';
import { clientsOf, systemFixture, TEST_INTERNAL_SECRET, TestSystem, type CollectedMessage } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// docs/decisions/0048: test clocks, owned by the scheduler, through the gateway: a grantor's
// own, forward only, at most TEST_CLOCKS_MAX of them, each holding at most TEST_CLOCK_MAX_OBJECTS
// and going at most TEST_CLOCK_MAX_ADVANCE past real time; nobody else's to see or touch.
const fx = systemFixture({
  name: 'clocks',
  backends: ['catalog', 'rights', 'subscriptions', 'scheduler'],
  env: { TEST_CLOCKS_MAX: '2', TEST_CLOCK_MAX_OBJECTS: '3', TEST_CLOCK_MAX_ADVANCE: 'P5Y' },
  collect: { 'clocks.events': '#' },
  bearer: true,
  seed: { clients: clientsOf({ 'grantor-a': 'A', 'grantor-b': 'B' }), users: ['alice'], skus: { news: {} } },
});
beforeAll(fx.start);
afterAll(fx.stop);

const A = TestSystem.clientAuthorization('grantor-a');
const B = TestSystem.clientAuthorization('grantor-b');
const ADMIN = () => fx.system.adminHeaders().authorization!;

interface ClockView {
  clockId: string;
  href: string;
  generation: string;
  grantorId: string;
  time: string;
  advancingTo: string;
  status: string;
}

async function createClock(authorization: string, body: unknown): Promise<ClockView> {
  const created = await fx.call('POST', '/clocks', authorization, body);
  expect(created.status, await created.clone().text()).toBe(201);
  const clock = (await created.json()) as ClockView;
  expect(created.headers.get('location')).toBe(clock.href);
  expect(created.headers.get('etag')).toBe(`"${clock.generation}"`);
  return clock;
}

describe('test clocks (docs/decisions/0048)', () => {
  it("when a grantor creates and advances a clock, then it is at the time asked, forward only, and another grantor's clocks are not there for it", async () => {
    const clock = await createClock(A, { grantorId: 'A', time: '2027-01-31T00:00:00+01:00' });
    expect(clock).toMatchObject({
      grantorId: 'A',
      generation: '1',
      time: '2027-01-30T23:00:00Z',
      advancingTo: '2027-01-30T23:00:00Z',
      status: 'ready',
    });
    const path = `/clocks/${clock.clockId}`;

    const advanced = await fx.call('POST', `${path}/advance`, A, { to: '2027-04-30T23:00:00Z' });
    expect(advanced.status, await advanced.clone().text()).toBe(202);
    expect(await advanced.json()).toMatchObject({
      time: '2027-01-30T23:00:00Z',
      advancingTo: '2027-04-30T23:00:00Z',
      generation: '2',
      status: 'advancing',
    });
    // Nothing lives on it: its driver moves it to the target, then it is ready.
    await expect.poll(async () => ((await (await fx.call('GET', path, A)).json()) as ClockView).status).toBe('ready');
    expect(await (await fx.call('GET', path, A)).json()).toMatchObject({
      time: '2027-04-30T23:00:00Z',
      generation: '4',
    });
    // Never back; to where it is, nothing changes.
    const back = await fx.call('POST', `${path}/advance`, A, { to: '2027-03-01T00:00:00Z' });
    expect([back.status, back.headers.get('content-type')]).toEqual([409, expect.stringMatching(/^text\/plain/)]);
    expect(await (await fx.call('POST', `${path}/advance`, A, { to: '2027-04-30T23:00:00Z' })).json()).toMatchObject({
      generation: '4',
    });
    expect(await (await fx.call('GET', '/clocks', A)).json()).toEqual({
      clocks: [expect.objectContaining({ clockId: clock.clockId })],
    });

    // Another grantor: not there (404), its list without it; a user's token: not for clocks.
    for (const [method, suffix, body] of [
      ['GET', '', undefined],
      ['POST', '/advance', { to: '2028-01-01T00:00:00Z' }],
      ['DELETE', '', undefined],
    ] as const)
      expect((await fx.call(method, `${path}${suffix}`, B, body)).status, `${method} ${suffix}`).toBe(404);
    expect(await (await fx.call('GET', '/clocks', B)).json()).toEqual({ clocks: [] });
    const bearer = `Bearer ${await fx.issuer.token('grantor-a', 'alice', { scope: 'id.user.sub.read' })}`;
    expect((await fx.call('GET', path, bearer)).status).toBe(401);
    expect(await (await fx.call('GET', path, A)).json()).toMatchObject({ generation: '4' });

    // Every change is on clocks.events, once, as the API shows the clock (docs/decisions/0048).
    expect((await fx.call('DELETE', path, A)).status).toBe(204);
    // Delivery is at least once (a relay may publish an event again): consumers apply each id once.
    const ofClock = (messages: CollectedMessage[]) =>
      messages.filter(
        (m, index) =>
          m.body.subject === clock.clockId && messages.findIndex((other) => other.body.id === m.body.id) === index,
      );
    const events = ofClock(await fx.events('clocks.events').waitFor((messages) => ofClock(messages).length >= 5));
    expect(events.map((m) => [m.routingKey, (m.body.data as { sequence: number; time: string }).sequence])).toEqual([
      ['clock.created', 1],
      ['clock.advanced', 2],
      ['clock.advanced', 3],
      ['clock.ready', 4],
      ['clock.deleted', 5],
    ]);
    expect(events[2]!.body.data).toMatchObject({ time: '2027-04-30T23:00:00Z', status: 'advancing', grantorId: 'A' });
    expect(events[3]!.body.data).toMatchObject({ time: '2027-04-30T23:00:00Z', status: 'ready' });
    expect((await fx.call('GET', path, A)).status).toBe(404);
  });

  it('when a creation on a ready clock is announced and the clock advanced before the object is recorded, then the advance waits for it (docs/decisions/0050)', async () => {
    const clock = await createClock(A, { grantorId: 'A', time: '2027-01-01T00:00:00Z' });
    const path = `/clocks/${clock.clockId}`;
    // As the subscriptions service announces a subscription it is about to make on the clock.
    const signer = new InternalTokenSigner(TEST_INTERNAL_SECRET, 'subscriptions');
    const announce = async (grantorId: string) =>
      fetch(`${fx.system.service('scheduler').url}/internal/clocks/${clock.clockId}/creations`, {
        method: 'POST',
        headers: {
          [INTERNAL_TOKEN_HEADER]: await signer.tokenFor(servicePrincipal('subscriptions'), 'scheduler'),
          'content-type': 'application/json',
        },
        body: JSON.stringify({ grantorId, kind: 'subscription', id: 'announced', connectId: 'alice' }),
      });
    expect((await announce('B')).status).toBe(404); // another grantor's clock is not there for it
    const announced = await announce('A');
    expect(announced.status).toBe(200);
    expect(await announced.json()).toMatchObject({ status: 'ready', time: '2027-01-01T00:00:00Z' });

    // A clock beside it with nothing on it, advanced at the same moment, is ready at its driver's
    // next steps (the test above); the subscription announced, whose event never comes, holds
    // the first where it was.
    const beside = await createClock(A, { grantorId: 'A', time: '2027-01-01T00:00:00Z' });
    const besidePath = `/clocks/${beside.clockId}`;
    expect((await fx.call('POST', `${path}/advance`, A, { to: '2027-06-01T00:00:00Z' })).status).toBe(202);
    expect((await fx.call('POST', `${besidePath}/advance`, A, { to: '2027-06-01T00:00:00Z' })).status).toBe(202);
    await expect
      .poll(async () => ((await (await fx.call('GET', besidePath, A)).json()) as ClockView).status)
      .toBe('ready');
    expect(await (await fx.call('GET', path, A)).json()).toMatchObject({
      status: 'advancing',
      time: '2027-01-01T00:00:00Z',
    });
    expect((await fx.call('DELETE', path, A)).status).toBe(204);
    expect((await fx.call('DELETE', besidePath, A)).status).toBe(204);
  });

  it('when a grantor has TEST_CLOCKS_MAX clocks, then one more is 409 until one is deleted; an admin creates one for any grantor', async () => {
    const first = await createClock(B, { grantorId: 'B', time: '2027-01-01T00:00:00Z' });
    await createClock(ADMIN(), { time: '2027-01-01T00:00:00Z', grantorId: 'B' });
    const over = await fx.call('POST', '/clocks', B, { grantorId: 'B', time: '2027-01-01T00:00:00Z' });
    expect(over.status).toBe(409);
    expect(await over.text()).toContain('2 test clocks');
    expect((await fx.call('DELETE', `/clocks/${first.clockId}`, B)).status).toBe(204);
    expect((await fx.call('GET', `/clocks/${first.clockId}`, B)).status).toBe(404);
    expect((await fx.call('DELETE', `/clocks/${first.clockId}`, B)).status).toBe(404);
    await createClock(B, { grantorId: 'B', time: '2030-06-01T00:00:00Z' });
    expect((await (await fx.call('GET', '/clocks', ADMIN())).json()) as { clocks: ClockView[] }).toMatchObject({
      clocks: expect.arrayContaining([expect.objectContaining({ grantorId: 'B' })]),
    });
  });

  it('when the input is bad, then 400 naming what, and no clock is made', async () => {
    const before = ((await (await fx.call('GET', '/clocks', ADMIN())).json()) as { clocks: unknown[] }).clocks.length;
    for (const [authorization, body, status] of [
      [A, { grantorId: 'A', time: '2027-01-01T00:00:00' }, 400],
      [A, { grantorId: 'A', time: 'tomorrow' }, 400],
      [A, { grantorId: 'A' }, 400],
      [A, { grantorId: 'A', time: '2027-01-01T00:00:00Z', speed: 2 }, 400],
      [A, { grantorId: 'A', time: '0000-12-31T00:00:00Z' }, 400],
      [ADMIN(), { time: '2027-01-01T00:00:00Z' }, 400],
      [A, { grantorId: 'B', time: '2027-01-01T00:00:00Z' }, 401],
    ] as const) {
      const answer = await fx.call('POST', '/clocks', authorization, body);
      expect(answer.status, JSON.stringify(body)).toBe(status);
    }
    expect(((await (await fx.call('GET', '/clocks', ADMIN())).json()) as { clocks: unknown[] }).clocks).toHaveLength(
      before,
    );
    expect((await fx.call('GET', '/clocks/not-an-id!', A)).status).toBe(400);
  });

  it('when 12 creations race on a clock that holds TEST_CLOCK_MAX_OBJECTS (3), then exactly 3 take a place and 9 are 409', async () => {
    const clock = await createClock(A, { grantorId: 'A', time: '2027-01-01T00:00:00Z' });
    const signer = new InternalTokenSigner(TEST_INTERNAL_SECRET, 'rights');
    const answers = await Promise.all(
      Array.from({ length: 12 }, async (_, index) => {
        const answer = await fetch(`${fx.system.service('scheduler').url}/internal/clocks/${clock.clockId}/creations`, {
          method: 'POST',
          headers: {
            [INTERNAL_TOKEN_HEADER]: await signer.tokenFor(servicePrincipal('rights'), 'scheduler'),
            'content-type': 'application/json',
          },
          body: JSON.stringify({ grantorId: 'A', kind: 'right', id: `raced-${index}`, connectId: 'alice' }),
        });
        return answer.status;
      }),
    );
    expect(answers.filter((status) => status === 200)).toHaveLength(3);
    expect(answers.filter((status) => status === 409)).toHaveLength(9);
    expect((await fx.call('DELETE', `/clocks/${clock.clockId}`, A)).status).toBe(204);
  });

  it('when a clock would go past TEST_CLOCK_MAX_ADVANCE ahead of real time, or hold more than TEST_CLOCK_MAX_OBJECTS, then 400 or 409 naming the limit, and nothing changes', async () => {
    const latest = new Date(Date.now() + 5 * 365 * 86_400_000); // P5Y, give or take a leap day
    const beyond = new Date(latest.getTime() + 3 * 86_400_000).toISOString().replace(/\.\d{3}Z$/, 'Z');
    for (const time of [beyond, '9999-12-31T23:59:59Z']) {
      const refused = await fx.call('POST', '/clocks', A, { grantorId: 'A', time });
      expect([refused.status, await refused.text()]).toEqual([400, expect.stringContaining('TEST_CLOCK_MAX_ADVANCE')]);
    }
    const clock = await createClock(A, { grantorId: 'A', time: '2027-01-01T00:00:00Z' });
    const path = `/clocks/${clock.clockId}`;
    for (const to of [beyond, '9999-12-31T23:59:59Z']) {
      const refused = await fx.call('POST', `${path}/advance`, A, { to });
      expect([refused.status, await refused.text()]).toEqual([400, expect.stringContaining('TEST_CLOCK_MAX_ADVANCE')]);
    }
    expect(await (await fx.call('GET', path, A)).json()).toMatchObject({ generation: '1', status: 'ready' });

    const right = (clockId?: string) =>
      fx.call('POST', '/id/users/alice/rights', A, {
        sku: 'news',
        grantorId: 'A',
        timeInterval: '2027-01-01T00:00:00Z/P1M',
        ...(clockId ? { clockId } : {}),
      });
    expect((await right(clock.clockId)).status).toBe(201);
    expect((await right(clock.clockId)).status).toBe(201);
    const subscription = await fx.call('POST', '/id/users/alice/subs', A, {
      grantorId: 'A',
      timeSpec: 'R/2027-01-01T00:00:00Z/P1M',
      rightsSpec: [{ sku: 'news' }],
      clockId: clock.clockId,
    });
    expect(subscription.status).toBe(201);
    for (const over of [
      await right(clock.clockId),
      await fx.call('POST', '/id/users/alice/subs', A, {
        grantorId: 'A',
        timeSpec: 'R/2027-01-01T00:00:00Z/P1M',
        rightsSpec: [{ sku: 'news' }],
        clockId: clock.clockId,
      }),
    ])
      expect([over.status, await over.text()]).toEqual([409, expect.stringContaining('TEST_CLOCK_MAX_OBJECTS')]);
    const listed = await fx.call('GET', `/id/users/alice/rights?clockId=${clock.clockId}&limit=100`, A);
    // Two of its own and the subscription's first period's.
    await expect
      .poll(
        async () =>
          (
            (await (await fx.call('GET', `/id/users/alice/rights?clockId=${clock.clockId}`, A)).json()) as {
              right: unknown[];
            }
          ).right.length,
      )
      .toBe(3);
    expect(listed.status).toBe(200);
    // Real time is not bounded by it.
    expect((await right()).status).toBe(201);
    expect((await fx.call('DELETE', path, A)).status).toBe(204);
  });
});
