import { createCloudEvent, type RightsIssueData } from '@rs/contracts';
import { answerOf, creationOf, rightsIssue, systemFixture, TestSystem, clientsOf } from '@rs/testing';
import amqp, { type ChannelModel } from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let connection: ChannelModel;

const basic = TestSystem.clientAuthorization;
const A = basic('grantor-a');
const B = basic('grantor-b');

function call(method: string, path: string, authorization: string, body?: unknown) {
  return fetch(`${fx.system.gatewayUrl}${path}`, {
    method,
    headers: { authorization, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    redirect: 'manual',
  });
}

type SubscriptionView = {
  subscriptionId: string;
  href: string;
  state: string;
  generation: string;
  link: Array<{ rel: string; href: string; type: string | null }>;
};
const valid = { grantorId: 'A', timeSpec: 'R/2026-01-31T00:00:00+01:00/P1M', rightsSpec: [{ sku: 'news' }] };

async function create(body: Record<string, unknown> = {}): Promise<SubscriptionView> {
  const response = await call('POST', '/id/users/erin/subs', A, { ...valid, ...body });
  expect(response.status, await response.clone().text()).toBe(201);
  return (await response.json()) as SubscriptionView;
}

const fx = systemFixture({
  name: 'subs_api',
  backends: ['catalog', 'rights', 'subscriptions'],
  collect: { 'subscriptions.events': '#' },
  seed: {
    clients: clientsOf({ 'grantor-a': 'A', 'grantor-b': 'B' }),
    users: ['erin'],
    skus: { news: { serviceProviderId: 'SP', grantorIds: ['A', 'B'] } },
  },
});
beforeAll(async () => {
  await fx.start();
  connection = await amqp.connect(fx.system.amqpUrl);
});
afterAll(async () => {
  await connection?.close();
  await fx.stop();
});

describe('subscriptions (docs/api.md)', () => {
  it('when a grantor creates a subscription, then 201 returns every field of docs/api.md and subscription.created is published', async () => {
    const response = await call('POST', '/id/users/erin/subs', A, {
      ...valid,
      timeSpec: 'R12/2026-01-31T00:00:00+01:00/2027-01-31T00:00:00+01:00/P1M',
      rightsSpec: [{ sku: 'news', timeSpec: 'P7D', grantorContext: 'tmpl', serviceProviderId: 'SP' }],
      paymentAgreement: 'agreement-42',
      grantorContext: 'crm-7',
    });
    const { answer, created: subscription } = await creationOf<SubscriptionView>(response);
    expect(answer).toEqual({ status: 201, type: 'application/json', etag: '"1"', location: subscription.href });
    const href = `${fx.system.gatewayUrl}/id/users/erin/subs/${subscription.subscriptionId}`;
    expect(subscription).toEqual({
      subscriptionId: expect.stringMatching(/^[0-9A-Za-z]+$/),
      href,
      generation: '1',
      state: 'ACTIVE',
      userId: 'erin',
      link: [
        { rel: 'self', href, type: null, idref: null },
        { rel: 'user', href: `${fx.system.gatewayUrl}/id/users/erin`, type: null, idref: null },
        { rel: 'suspend', href: `${href}/suspend`, type: 'action', idref: null },
      ],
      grantorId: 'A',
      grantorContext: 'crm-7',
      rightsSpec: [
        { sku: 'news', serviceProviderId: 'SP', timeSpec: 'P7D', grantorContext: 'tmpl', quantity: null, grace: null },
      ],
      origTimeSpec: 'R12/2026-01-31T00:00:00+01:00/P1M',
      pendingChange: null,
      clockId: null,
    });
    expect(await (await call('GET', `/id/users/erin/subs/${subscription.subscriptionId}`, A)).json()).toEqual(
      subscription,
    );
    const [created] = await fx
      .events('subscriptions.events')
      .waitFor((m) => m.some((e) => e.body.subject === subscription.subscriptionId));
    expect(created!.routingKey).toBe('subscription.created');
    expect(created!.body.data).toMatchObject({ ...subscription, connectId: 'erin', sequence: 1 });
  });

  it('when the body is bad, then 400 text/plain names what is missing or wrong', async () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ timeSpec: valid.timeSpec, rightsSpec: valid.rightsSpec }, /^grantorId: /],
      [{ grantorId: 'A', rightsSpec: valid.rightsSpec }, /^timeSpec: /],
      [{ grantorId: 'A', timeSpec: valid.timeSpec }, /^rightsSpec: /],
      [{ ...valid, rightsSpec: [] }, /^rightsSpec: must hold at least one template/],
      [{ ...valid, timeSpec: 'R0/2026-01-01T00:00:00Z/P1M' }, /^timeSpec: the number of periods/],
      [{ ...valid, timeSpec: 'R/2026-01-01T00:00:00/P1M' }, /^timeSpec: .* has no offset/],
      [{ ...valid, timeSpec: 'R/2026-01-01T00:00:00Z/P' }, /^timeSpec: P is not an ISO 8601 duration/],
      [{ ...valid, rightsSpec: [{ sku: 'nope' }] }, /^rightsSpec\[0\]\.sku: nope is not in the catalog/],
      [
        { ...valid, rightsSpec: [{ sku: 'news', timeSpec: 'PT0S' }] },
        /^rightsSpec\[0\]\.timeSpec: must be a positive duration/,
      ],
      [{ ...valid, state: 'EXPIRED' }, /^state: must be ACTIVE or SUSPENDED/],
      [{ ...valid, extra: true }, /^unknown field\(s\): extra/],
      ['{"grantorId":', /not valid JSON/],
    ];
    const answers = [];
    for (const [body] of cases) answers.push(await answerOf(await call('POST', '/id/users/erin/subs', A, body)));
    const refusal = (message: RegExp) => ({ status: 400, type: 'text/plain', text: expect.stringMatching(message) });
    expect(answers).toEqual(cases.map(([, message]) => refusal(message)));
  });

  it('when subscriptions are activated and suspended, then the state table of docs/api.md holds', async () => {
    const subscription = await create({ state: 'SUSPENDED' });
    const path = `/id/users/erin/subs/${subscription.subscriptionId}`;
    expect(subscription.link.at(-1)).toMatchObject({ rel: 'activate', type: 'action' });
    expect(await answerOf(await call('POST', `${path}/suspend`, A))).toMatchObject({
      status: 409,
      type: 'text/plain',
      text: expect.stringMatching(/is already SUSPENDED/),
    });
    expect((await call('POST', `${path}/activate`, A)).status).toBe(204);
    expect((await call('POST', `${path}/activate`, A)).status).toBe(409);
    expect((await call('POST', `${path}/suspend`, A)).status).toBe(204);
    expect(await (await call('GET', path, A)).json()).toMatchObject({ state: 'SUSPENDED', generation: '3' });
    // Events are published at least once (docs/architecture.md): one per event id, each with its change's
    // sequence, by which consumers order them (the creation's and the later changes' events go
    // out through two relays, so they may arrive in either order: docs/decisions/0026).
    const changes = () =>
      [
        ...new Map(
          fx
            .events('subscriptions.events')
            .messages.filter((e) => e.body.subject === subscription.subscriptionId)
            .map((e) => [e.body.id, { type: e.routingKey, sequence: (e.body.data as { sequence: number }).sequence }]),
        ).values(),
      ].sort((a, b) => a.sequence - b.sequence);
    await fx.events('subscriptions.events').waitFor(() => changes().length >= 3);
    expect(changes()).toEqual([
      { type: 'subscription.created', sequence: 1 },
      { type: 'subscription.activated', sequence: 2 },
      { type: 'subscription.suspended', sequence: 3 },
    ]);
  });

  it('when another grantor reads or changes a subscription, then 404 for reads and 401 for changes (docs/api.md "Principals and authorization")', async () => {
    const subscription = await create();
    const path = `/id/users/erin/subs/${subscription.subscriptionId}`;
    expect((await call('GET', path, B)).status).toBe(404);
    for (const [method, suffix] of [
      ['POST', '/suspend'],
      ['POST', '/activate'],
      ['DELETE', ''],
    ]) {
      const response = await call(method!, `${path}${suffix}`, B);
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe('Basic realm="rights", charset="UTF-8"');
    }
    const list = (await (await call('GET', '/id/users/erin/subs?grantorid=B', B)).json()) as {
      subscription: unknown[];
    };
    expect(list.subscription).toEqual([]);
    expect((await call('POST', '/id/users/erin/subs', A, { ...valid, grantorId: 'B' })).status).toBe(401);
  });

  it('when a subscription is deleted, then 204, also when unknown, and its rights stay', async () => {
    const subscription = await create();
    const path = `/id/users/erin/subs/${subscription.subscriptionId}`;
    expect((await call('DELETE', path, A)).status).toBe(204);
    expect((await call('GET', path, A)).status).toBe(404);
    expect((await call('DELETE', path, A)).status).toBe(204);
    expect((await call('DELETE', '/id/users/erin/subs/NoSuchOne', A)).status).toBe(204);
    await fx
      .events('subscriptions.events')
      .waitFor((m) =>
        m.some((e) => e.body.subject === subscription.subscriptionId && e.routingKey === 'subscription.deleted'),
      );
  });

  it('when a subscription is suspended and activated, then its rights follow (the cascade)', async () => {
    const subscription = await create();
    const channel = await connection.createConfirmChannel();
    const now = Date.now();
    const interval = `${new Date(now - 60_000).toISOString()}/${new Date(now + 3_600_000).toISOString()}`;
    const issue: RightsIssueData = rightsIssue({
      subscriptionId: subscription.subscriptionId,
      connectId: 'erin',
      periodStart: new Date(now - 60_000).toISOString(),
      timeInterval: interval,
    });
    channel.publish(
      'commands',
      'rights.issue',
      Buffer.from(
        JSON.stringify(
          createCloudEvent({
            source: '/test',
            type: 'rights.issue',
            subject: subscription.subscriptionId,
            data: issue,
          }),
        ),
      ),
    );
    await channel.waitForConfirms();
    await channel.close();
    const statesOfRights = async () =>
      (
        (await (await call('GET', '/id/users/erin/rights?grantorId=A', A)).json()) as {
          right: Array<{ state: string; link: Array<{ href: string }> }>;
        }
      ).right
        .filter((r) => r.link.some((l) => l.href.endsWith(`/subs/${subscription.subscriptionId}`)))
        .map((r) => r.state);
    await expect.poll(statesOfRights).toEqual(['ACTIVE']);
    expect((await call('POST', `/id/users/erin/subs/${subscription.subscriptionId}/suspend`, A)).status).toBe(204);
    await expect.poll(statesOfRights, { interval: 100 }).toEqual(['SUSPENDED']);
    expect((await call('POST', `/id/users/erin/subs/${subscription.subscriptionId}/activate`, A)).status).toBe(204);
    await expect.poll(statesOfRights, { interval: 100 }).toEqual(['ACTIVE']);
  });
});
