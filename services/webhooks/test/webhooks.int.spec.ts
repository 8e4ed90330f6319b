import { PARTIES, WebhookReceiver, clientsOf, systemFixture } from '@rs/testing';
import mongoose from 'mongoose';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Webhooks through the gateway, to real receivers on this machine (docs/api.md).

const { A, B, SP } = PARTIES;
const fx = systemFixture({
  name: 'webhooks',
  backends: ['catalog', 'rights', 'subscriptions', 'webhooks'],
  env: { WEBHOOK_RETRY_SCHEDULE: '1s,1s,1s', WEBHOOK_TIMEOUT_MS: '1500' },
  seed: {
    clients: clientsOf(PARTIES.grantors),
    users: ['alice'],
    skus: { news: { serviceProviderId: 'SP', grantorIds: ['A', 'B'] }, video: {} },
  },
});
const receivers: WebhookReceiver[] = [];
beforeAll(fx.start);
afterAll(async () => {
  for (const receiver of receivers) await receiver.stop();
  await fx.stop();
});

interface Created {
  endpointId: string;
  url: string;
  events: string[];
  description: string | null;
  secret: string;
  createdAt: string;
}
interface DeliveryView {
  deliveryId: string;
  eventId: string;
  type: string;
  status: string;
  attempts: number;
  lastStatus: number | null;
  nextAttemptAt: string | null;
}
const ADMIN = () => fx.system.adminHeaders().authorization!;

async function receiver(behaviour?: ConstructorParameters<typeof WebhookReceiver>[0]): Promise<WebhookReceiver> {
  const started = new WebhookReceiver(behaviour);
  await started.start();
  receivers.push(started);
  return started;
}
async function register(authorization: string, url: string, events?: string[]): Promise<Created> {
  const response = await fx.call('POST', '/webhooks/endpoints', authorization, {
    url,
    ...(events ? { events } : {}),
    description: 'test receiver',
  });
  expect(response.status, await response.clone().text()).toBe(201);
  return (await response.json()) as Created;
}
async function createRight(grantor: 'A' | 'B', sku = 'news'): Promise<string> {
  const authorization = grantor === 'A' ? A : B;
  const response = await fx.call('POST', '/id/users/alice/rights', authorization, {
    sku,
    grantorId: grantor,
    // news is provided by SP (the catalog says so; the right names it).
    ...(sku === 'news' ? { serviceProviderId: 'SP' } : {}),
    timeInterval: `${new Date(Date.now() - 60_000).toISOString()}/P1D`,
  });
  expect(response.status).toBe(201);
  return ((await response.json()) as { rightId: string }).rightId;
}
async function deliveriesOf(endpointId: string, authorization = A): Promise<DeliveryView[]> {
  const response = await fx.call('GET', `/webhooks/endpoints/${endpointId}/deliveries?limit=1000`, authorization);
  expect(response.status).toBe(200);
  return ((await response.json()) as { deliveries: DeliveryView[] }).deliveries;
}
/** Throws unless `key` signed the delivery `request` (Standard Webhooks). */
const verify = (request: WebhookReceiver['received'][number], key: string) =>
  new Webhook(key).verify(request.body, {
    'webhook-id': String(request.headers['webhook-id']),
    'webhook-timestamp': String(request.headers['webhook-timestamp']),
    'webhook-signature': String(request.headers['webhook-signature']),
  });
const subjectsOf = (target: WebhookReceiver) =>
  target.received.map((request) => (JSON.parse(request.body) as { subject: string }).subject);

describe('endpoints and signed deliveries', () => {
  it('when a grantor registers an endpoint and a right changes, then a signed CloudEvent arrives, verifiable with a Standard Webhooks library', async () => {
    const target = await receiver();
    const endpoint = await register(A, target.url, ['right.*']);
    expect(endpoint.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(endpoint.events).toEqual(['right.*']);

    // The secret is shown only once: not in the list, nor in a read.
    const listed = await (await fx.call('GET', '/webhooks/endpoints', A)).json();
    expect(JSON.stringify(listed)).not.toContain(endpoint.secret);
    const read = (await (await fx.call('GET', `/webhooks/endpoints/${endpoint.endpointId}`, A)).json()) as object;
    expect(read).toEqual({
      endpointId: endpoint.endpointId,
      url: endpoint.url,
      events: ['right.*'],
      description: 'test receiver',
      clocks: false,
      createdAt: endpoint.createdAt,
    });

    const sent = Date.now();
    const rightId = await createRight('A');
    await expect.poll(() => target.received.length).toBeGreaterThanOrEqual(1);
    const [request] = target.received;
    expect(request!.at - sent).toBeLessThan(2_000);
    expect(request!.headers['content-type']).toBe('application/json');
    const event = new Webhook(endpoint.secret).verify(request!.body, {
      'webhook-id': String(request!.headers['webhook-id']),
      'webhook-timestamp': String(request!.headers['webhook-timestamp']),
      'webhook-signature': String(request!.headers['webhook-signature']),
    }) as { id: string; type: string; subject: string; specversion: string; data: { grantorId: string } };
    expect(event).toMatchObject({ specversion: '1.0', type: 'right.created', subject: rightId });
    expect(request!.headers['webhook-id']).toBe(event.id);
    // A forged or altered body does not verify.
    expect(() =>
      new Webhook(endpoint.secret).verify(request!.body.replace(rightId, 'forged'), {
        'webhook-id': String(request!.headers['webhook-id']),
        'webhook-timestamp': String(request!.headers['webhook-timestamp']),
        'webhook-signature': String(request!.headers['webhook-signature']),
      }),
    ).toThrow();

    // The outcome is recorded once the endpoint has answered, so the log may lag the receiver a little.
    await expect.poll(async () => (await deliveriesOf(endpoint.endpointId))[0]?.status).toBe('delivered');
    const [delivery] = await deliveriesOf(endpoint.endpointId);
    expect(delivery).toMatchObject({
      eventId: event.id,
      type: 'right.created',
      status: 'delivered',
      attempts: 1,
      lastStatus: 204,
      nextAttemptAt: null,
    });
  });

  it('when events happen, then each endpoint gets those its grantor may see and its patterns match, an admin endpoint all', async () => {
    const ofA = await receiver();
    const ofB = await receiver();
    const ofProvider = await receiver();
    const subscriptionsOnly = await receiver();
    const ofAdmin = await receiver();
    await register(A, ofA.url);
    await register(B, ofB.url, ['right.created']);
    await register(SP, ofProvider.url, ['right.*']);
    await register(A, subscriptionsOnly.url, ['subscription.*']);
    await register(ADMIN(), ofAdmin.url, ['right.created']);

    const newsOfA = await createRight('A', 'news'); // provided by SP
    const videoOfA = await createRight('A', 'video');
    const videoOfB = await createRight('B', 'video');
    // A marker after them: once every event has reached the admin's endpoint, each has been
    // matched and its deliveries stored; attempts to one endpoint run side by side, so each
    // endpoint is waited for until it has what it should, and then must have nothing else.
    const marker = await createRight('B', 'video');
    await expect.poll(() => ofAdmin.received.length).toBe(4);
    await expect.poll(() => new Set(subjectsOf(ofB))).toEqual(new Set([videoOfB, marker]));
    await expect.poll(() => new Set(subjectsOf(ofA))).toEqual(new Set([newsOfA, videoOfA]));
    await expect.poll(() => subjectsOf(ofProvider)).toEqual([newsOfA]);

    expect(new Set(subjectsOf(ofA))).toEqual(new Set([newsOfA, videoOfA]));
    expect(new Set(subjectsOf(ofB))).toEqual(new Set([videoOfB, marker]));
    expect(subjectsOf(ofProvider)).toEqual([newsOfA]);
    expect(subscriptionsOnly.received).toEqual([]);
    expect(new Set(subjectsOf(ofAdmin))).toEqual(new Set([newsOfA, videoOfA, videoOfB, marker]));
  });

  it('when an endpoint fails, then it is retried on the schedule until it answers 2xx, and the log shows every attempt', async () => {
    const flaky = await receiver((_request, count) => ({ status: count <= 2 ? 503 : 200 }));
    const endpoint = await register(A, flaky.url, ['right.created']);
    await createRight('A');
    await expect.poll(() => flaky.received.length).toBe(3);
    const ids = flaky.received.map((request) => request.headers['webhook-id']);
    expect(new Set(ids).size).toBe(1); // the same webhook-id on every attempt
    const gaps = flaky.received.slice(1).map((request, i) => request.at - flaky.received[i]!.at);
    for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(900);
    await expect
      .poll(async () => (await deliveriesOf(endpoint.endpointId))[0])
      .toMatchObject({ status: 'delivered', attempts: 3, lastStatus: 200 });
  });

  it('when every attempt fails, then the delivery ends failed; a manual retry delivers it again at once', async () => {
    let up = false;
    const down = await receiver(() => ({ status: up ? 200 : 500 }));
    const endpoint = await register(A, down.url, ['right.created']);
    await createRight('A');
    // The first attempt and three retries (WEBHOOK_RETRY_SCHEDULE has three delays).
    await expect
      .poll(async () => (await deliveriesOf(endpoint.endpointId))[0])
      .toMatchObject({ status: 'failed', attempts: 4, lastStatus: 500, nextAttemptAt: null });
    expect(down.received).toHaveLength(4);

    up = true;
    const [failed] = await deliveriesOf(endpoint.endpointId);
    const retried = await fx.call(
      'POST',
      `/webhooks/endpoints/${endpoint.endpointId}/deliveries/${failed!.deliveryId}/retry`,
      A,
    );
    expect(retried.status).toBe(202);
    await expect.poll(() => down.received.length).toBe(5);
    await expect
      .poll(async () => (await deliveriesOf(endpoint.endpointId))[0])
      .toMatchObject({ status: 'delivered', attempts: 5, lastStatus: 200 });
  });

  it('when an endpoint is deleted, then nothing more is sent to it, and it is gone', async () => {
    const target = await receiver();
    const endpoint = await register(A, target.url, ['right.created']);
    expect((await fx.call('DELETE', `/webhooks/endpoints/${endpoint.endpointId}`, A)).status).toBe(204);
    expect((await fx.call('GET', `/webhooks/endpoints/${endpoint.endpointId}`, A)).status).toBe(404);
    expect((await fx.call('DELETE', `/webhooks/endpoints/${endpoint.endpointId}`, A)).status).toBe(404);
    const witness = await receiver();
    await register(A, witness.url, ['right.created']);
    await createRight('A');
    await expect.poll(() => witness.received.length).toBe(1);
    expect(target.received).toEqual([]);
  });

  it('when the secret is rotated, then both secrets sign for a while, each shown once and stored only sealed', async () => {
    const target = await receiver();
    const endpoint = await register(A, target.url, ['right.created']);
    const response = await fx.call('POST', `/webhooks/endpoints/${endpoint.endpointId}/secret`, A);
    expect(response.status).toBe(200);
    const { secret } = (await response.json()) as { secret: string };
    expect(secret).not.toBe(endpoint.secret);
    // At rest, neither secret is stored as it is.
    const db = mongoose.createConnection(fx.system.mongoUrlFor('webhooks'));
    await db.asPromise();
    const stored = JSON.stringify(await db.collection('endpoints').findOne({ _id: endpoint.endpointId } as never));
    await db.close();
    expect(stored).toContain('sealed');
    for (const key of [endpoint.secret, secret]) expect(stored).not.toContain(key.slice('whsec_'.length, 30));
    await createRight('A');
    await expect.poll(() => target.received.length).toBe(1);
    const [request] = target.received;
    expect(String(request!.headers['webhook-signature']).split(' ')).toHaveLength(2);
    for (const key of [endpoint.secret, secret]) expect(() => verify(request!, key)).not.toThrow();
  });

  it('when its secret is rotated many times at once, then every rotation is answered with a secret of its own, and each of them signs the next delivery', async () => {
    const target = await receiver();
    const endpoint = await register(A, target.url, ['right.created']);
    // One process's rotations of one endpoint take turns (docs/decisions/0074): racing, all but
    // one would lose each round, and the last of 24 would be told to retry (503).
    const rotations = await Promise.all(
      Array.from({ length: 24 }, () => fx.call('POST', `/webhooks/endpoints/${endpoint.endpointId}/secret`, A)),
    );
    expect(rotations.map((response) => response.status)).toEqual(Array(24).fill(200));
    const secrets = await Promise.all(
      rotations.map(async (response) => ((await response.json()) as { secret: string }).secret),
    );
    expect(new Set(secrets).size).toBe(24);
    await createRight('A');
    await expect.poll(() => target.received.length).toBe(1);
    // None was lost: the first secret and every rotation's sign while their overlap lasts.
    const [request] = target.received;
    for (const key of [endpoint.secret, ...secrets]) expect(() => verify(request!, key)).not.toThrow();
  });
});

describe('isolation', () => {
  it('when one endpoint hangs, then the others still get their deliveries at once, its attempts time out, and the metrics show it', async () => {
    const hanging = await receiver(() => 'hang');
    const healthy = await receiver();
    const stuck = await register(A, hanging.url, ['right.created']);
    await register(A, healthy.url, ['right.created']);
    const created: string[] = [];
    for (let i = 0; i < 20; i++) created.push(await createRight('A'));
    // The one bound here that is the assertion: had the healthy endpoint shared the hanging one's
    // attempts, it would wait for their 1.5 s timeouts (three rounds of eight at least).
    await expect.poll(() => new Set(subjectsOf(healthy)).size, { timeout: 3_000 }).toBe(20);
    // Bounded concurrency: the hanging endpoint holds at most WEBHOOK_CONCURRENCY_PER_ENDPOINT
    // attempts at once (timed-out attempts are retried, so it may receive more in all).
    expect(hanging.maxInFlight).toBeGreaterThan(0);
    expect(hanging.maxInFlight).toBeLessThanOrEqual(8);
    // A timed-out attempt counts as failed and is retried (lastStatus null: no answer).
    await expect
      .poll(async () => (await deliveriesOf(stuck.endpointId)).some((d) => d.attempts >= 1 && d.lastStatus === null))
      .toBe(true);
    // What an operator sees: deliveries by outcome, attempt latency, and the hanging endpoint's backlog.
    const metrics = await (await fetch(`${fx.system.service('webhooks').url}/metrics`)).text();
    expect(metrics).toMatch(/webhook_deliveries_total\{[^}]*outcome="delivered"[^}]*\} [1-9]/);
    expect(metrics).toMatch(/webhook_deliveries_total\{[^}]*outcome="retrying"[^}]*\} [1-9]/);
    expect(metrics).toMatch(/webhook_attempt_duration_seconds_count\{[^}]*outcome="delivered"/);
    expect(metrics).toMatch(
      new RegExp(`webhook_backlog_deliveries\\{[^}]*endpoint="${stuck.endpointId}"[^}]*\\} [1-9]`),
    );
  });
});

describe('bad input', () => {
  it('when a URL, a pattern or an id is wrong, then 400 or 404 with the contract content types, and nothing is stored', async () => {
    const before = ((await (await fx.call('GET', '/webhooks/endpoints', A)).json()) as { endpoints: unknown[] })
      .endpoints.length;
    for (const body of [
      { url: 'not a url' },
      { url: 'ftp://127.0.0.1/hook' },
      { url: 'http://127.0.0.1/hook', events: ['rights.created'] },
      { url: 'http://127.0.0.1/hook', events: ['nonsense.*'] },
      { url: 'http://127.0.0.1/hook', events: [] },
      { url: 'http://user:pw@127.0.0.1/hook' },
      { url: 'http://127.0.0.1/hook', unknown: true },
    ]) {
      const response = await fx.call('POST', '/webhooks/endpoints', A, body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
    }
    const after = ((await (await fx.call('GET', '/webhooks/endpoints', A)).json()) as { endpoints: unknown[] })
      .endpoints.length;
    expect(after).toBe(before);

    const target = await receiver();
    const ofB = await register(B, target.url);
    for (const path of [`/webhooks/endpoints/${ofB.endpointId}`, '/webhooks/endpoints/nosuchendpoint']) {
      const response = await fx.call('GET', path, A);
      expect(response.status).toBe(404);
      expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    }
    expect((await fx.call('DELETE', `/webhooks/endpoints/${ofB.endpointId}`, A)).status).toBe(404);
    expect((await fx.call('GET', `/webhooks/endpoints/${ofB.endpointId}/deliveries`, A)).status).toBe(404);
    expect((await fx.call('GET', `/webhooks/endpoints/${ofB.endpointId}`, B)).status).toBe(200);
    expect((await fx.call('GET', '/webhooks/endpoints', 'Basic bm9ib2R5Om5vdGhpbmc=')).status).toBe(401);
  });
});
