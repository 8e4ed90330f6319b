import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { createCloudEvent, type RightsIssueData, type SubscriptionsRenewBatch } from '@rs/contracts';
import { EventCollector, idsBySubject, passExpiryMarker, rightsIssue, TestSystem } from '@rs/testing';
import amqp, { type ChannelModel, type ConfirmChannel } from 'amqplib';
import mongoose from 'mongoose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

// Renewal and expiry in batches. Commands are published here exactly as the
// scheduler and the subscriptions service publish them; effects are read through the API.
let system: TestSystem;
let rightEvents: EventCollector;
let subscriptionEvents: EventCollector;
let connection: ChannelModel;
let channel: ConfirmChannel;
const A = TestSystem.clientAuthorization('grantor-a');
const USER = 'batch-user';

/**
 * With the scheduler stopped: a marker subscription renewed by a command sent now; once its
 * right.created is in, every renew and issue command sent before it has been handled.
 */
async function renewalPassed(): Promise<void> {
  const marker = await createSubscription({ timeSpec: `R1/${isoSecond(Date.now() - 1_000)}/PT1H` });
  await send('subscriptions.renew', {
    items: [{ subscriptionId: marker, connectId: USER }],
  } satisfies SubscriptionsRenewBatch);
  await rightEvents.waitFor((messages) =>
    messages.some(
      (m) =>
        m.routingKey === 'right.created' &&
        (m.body.data as { link: Array<{ href: string }> }).link.some((l) => l.href.endsWith(`/subs/${marker}`)),
    ),
  );
}

/** Every command sent before now has been handled (a marker right's expiry has come through after them). */
const passed = () =>
  passExpiryMarker(system, { authorization: A, user: 'marker', grantorId: 'A', sku: 'news', events: rightEvents });
const isoSecond = (ms: number) => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/\.000Z$/, 'Z');

async function send(type: string, data: unknown): Promise<void> {
  const command = createCloudEvent({ source: '/test', type, subject: 'batch', data });
  channel.publish('commands', type, Buffer.from(JSON.stringify(command)), { persistent: true, messageId: command.id });
  await channel.waitForConfirms();
}

async function call(method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${system.gatewayUrl}${path}`, {
    method,
    headers: { authorization: A, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

async function createSubscription(body: object): Promise<string> {
  const response = await call('POST', `/id/users/${USER}/subs`, {
    grantorId: 'A',
    rightsSpec: [{ sku: 'news' }],
    ...body,
  });
  expect(response.status, await response.clone().text()).toBe(201);
  return ((await response.json()) as { subscriptionId: string }).subscriptionId;
}

type RightView = { rightId: string; state: string; timeInterval: string; link: Array<{ rel: string; href: string }> };
async function rightsOfUser(): Promise<RightView[]> {
  const rights: RightView[] = [];
  let url: string | null = `${system.gatewayUrl}/id/users/${USER}/rights?grantorId=A&limit=1000`;
  while (url) {
    const response: Response = await fetch(url, { headers: { authorization: A } });
    rights.push(...((await response.json()) as { right: RightView[] }).right);
    url = /<([^>]+)>;\s*rel="next"/.exec(response.headers.get('link') ?? '')?.[1] ?? null;
  }
  return rights;
}
const subscriptionOf = (right: RightView) =>
  right.link.find((l) => l.rel === 'subscription')?.href.split('/subs/')[1] ?? null;

beforeAll(async () => {
  system = await TestSystem.start({
    processes: true,
    name: 'batched_renewal',
    backends: ['catalog', 'rights', 'subscriptions', 'scheduler'],
    env: { SCHEDULER_TICK_MS: '200', LOG_LEVEL: 'warn' },
  });
  rightEvents = await EventCollector.start(system.amqpUrl, 'rights.events');
  subscriptionEvents = await EventCollector.start(system.amqpUrl, 'subscriptions.events');
  connection = await amqp.connect(system.amqpUrl);
  channel = await connection.createConfirmChannel();
  await system.seed({
    clients: [{ clientId: 'grantor-a', grantorId: 'A' }],
    users: [USER, 'marker'],
    skus: { news: {} },
  });
}, 120_000);
afterAll(async () => {
  await connection?.close();
  await rightEvents?.close();
  await subscriptionEvents?.close();
  await system?.stop();
});

describe('batches that partly repeat', () => {
  it('when a batch of rights.issue is delivered again after half of it was stored, then each right exists once with one right.created', async () => {
    const periodStart = isoSecond(Date.now() - 60_000);
    const interval = `${periodStart}/${isoSecond(Date.now() + 86_400_000)}`;
    const commands: RightsIssueData[] = Array.from({ length: 40 }, (_, i) =>
      rightsIssue({
        subscriptionId: `Sissue${i}${randomBytes(3).toString('hex')}`,
        connectId: USER,
        periodStart,
        timeInterval: interval,
      }),
    );
    const ours = new Set(commands.map((command) => command.subscriptionId));
    const issued = async () => (await rightsOfUser()).filter((right) => ours.has(subscriptionOf(right)!));
    for (const command of commands.slice(0, 20)) await send('rights.issue', command);
    await expect.poll(async () => (await issued()).length).toBe(20);
    for (const command of commands) await send('rights.issue', command);
    await expect.poll(async () => (await issued()).length).toBe(40);
    const rightIds = new Set((await issued()).map((right) => right.rightId));
    await rightEvents.waitFor(() =>
      [...rightIds].every((id) => idsBySubject(rightEvents.messages, 'right.created').has(id)),
    );
    await passed();
    expect(await issued()).toHaveLength(40);
    const created = idsBySubject(rightEvents.messages, 'right.created');
    for (const id of rightIds) expect(created.get(id)?.size, `right.created of ${id}`).toBe(1);
  });

  it('when the subscriptions service is killed halfway through a renewal batch and restarted, then every subscription has its right once, and one event per change', async () => {
    const scheduler = system.service('scheduler');
    await scheduler.stop(); // only this test's command renews these subscriptions
    try {
      const start = isoSecond(Date.now() - 1_000);
      const ids: string[] = [];
      for (let i = 0; i < 300; i += 30) {
        ids.push(
          ...(await Promise.all(
            Array.from({ length: 30 }, () => createSubscription({ timeSpec: `R1/${start}/PT1H` })),
          )),
        );
      }
      const renew: SubscriptionsRenewBatch = {
        items: ids.map((subscriptionId) => ({ subscriptionId, connectId: USER })),
      };
      await send('subscriptions.renew', renew);
      const generationOf = async (id: string) =>
        ((await (await call('GET', `/id/users/${USER}/subs/${id}`)).json()) as { generation: string }).generation;
      // Kill it as soon as the first renewals are stored, before the batch's events go out.
      const sample = ids.slice(0, 150).filter((_, i) => i % 15 === 0);
      await vi.waitFor(
        async () => {
          if (!(await Promise.all(sample.map(generationOf))).includes('2')) throw new Error('no renewal stored yet');
        },
        { timeout: 20_000, interval: 20 },
      );
      await system.service('subscriptions').kill();
      await system.service('subscriptions').start();

      const ofOurs = async () => (await rightsOfUser()).filter((right) => ids.includes(subscriptionOf(right)!));
      await expect.poll(async () => (await ofOurs()).length, { timeout: 30_000, interval: 500 }).toBe(300);
      await subscriptionEvents.waitFor(
        () => ids.every((id) => idsBySubject(subscriptionEvents.messages, 'subscription.renewed').has(id)),
        20_000,
      );
      await renewalPassed();
      const rights = await ofOurs();
      expect(new Set(rights.map(subscriptionOf)).size).toBe(300);
      const renewed = idsBySubject(subscriptionEvents.messages, 'subscription.renewed');
      for (const id of ids) expect(renewed.get(id)?.size, `subscription.renewed of ${id}`).toBe(1);
      const created = idsBySubject(rightEvents.messages, 'right.created');
      for (const right of rights) expect(created.get(right.rightId)?.size, `right.created of ${right.rightId}`).toBe(1);
      for (const id of ids) expect(await generationOf(id)).toBe('2');
    } finally {
      await scheduler.start();
    }
  }, 120_000);
});

describe('a batch mixing states', () => {
  it('when one renew batch holds ACTIVE, SUSPENDED, deleted, expired and unknown subscriptions, then each gets what its state allows and the batch is not dead-lettered', async () => {
    const scheduler = system.service('scheduler');
    await scheduler.stop();
    try {
      const started = isoSecond(Date.now() - 2_000);
      const active = await createSubscription({ timeSpec: `R/${started}/PT1H` });
      const suspended = await createSubscription({ timeSpec: `R/${started}/PT1H`, state: 'SUSPENDED' });
      const deleted = await createSubscription({ timeSpec: `R/${started}/PT1H` });
      expect((await call('DELETE', `/id/users/${USER}/subs/${deleted}`)).status).toBe(204);
      // Both of its periods ended before it was created: nothing to issue, it expires.
      const ended = await createSubscription({ timeSpec: `R2/${isoSecond(Date.now() - 10_000)}/PT1S` });
      const unknown = `Sunknown${randomBytes(4).toString('hex')}`;
      await send('subscriptions.renew', {
        items: [active, suspended, deleted, ended, unknown].map((subscriptionId) => ({
          subscriptionId,
          connectId: USER,
        })),
      } satisfies SubscriptionsRenewBatch);

      const stateOf = async (id: string) =>
        (await (await call('GET', `/id/users/${USER}/subs/${id}`)).json()) as { state: string };
      await expect.poll(async () => (await stateOf(ended)).state).toBe('EXPIRED');
      const statesOf = async (id: string) =>
        (await rightsOfUser()).filter((right) => subscriptionOf(right) === id).map((right) => right.state);
      await expect.poll(() => statesOf(active)).toEqual(['ACTIVE']);
      await expect.poll(() => statesOf(suspended)).toEqual(['SUSPENDED']);
      await renewalPassed();
      expect(await statesOf(deleted)).toEqual([]);
      expect(await statesOf(ended)).toEqual([]);
      expect(await system.rabbit.queueMessageCount(system.vhost, 'subscriptions.commands.dlq')).toBe(0);
    } finally {
      await scheduler.start();
    }
  });
});

describe('expiry in bulk', () => {
  it('when 1,000 rights end at the same instant, then all are EXPIRED within seconds, each with one right.expired', async () => {
    const end = Math.ceil(Date.now() / 1000) * 1000 + 6_000;
    const interval = `${isoSecond(Date.now() - 60_000)}/${isoSecond(end)}`;
    const subscriptions = Array.from({ length: 10 }, (_, i) => `Sbulk${i}${randomBytes(3).toString('hex')}`);
    for (const subscriptionId of subscriptions) {
      await send('rights.issue', {
        subscriptionId,
        connectId: USER,
        grantorId: 'A',
        periodStart: '2026-11-01T00:00:00Z',
        dueAt: '2026-11-01T00:00:00Z',
        rights: Array.from({ length: 100 }, (_, templateIndex) => ({
          templateIndex,
          sku: 'news',
          serviceProviderId: null,
          grantorContext: null,
          timeInterval: interval,
          state: 'ACTIVE' as const,
          quantity: null,
          grace: null,
        })),
      } satisfies RightsIssueData);
    }
    const ours = async () => (await rightsOfUser()).filter((right) => subscriptions.includes(subscriptionOf(right)!));
    await expect.poll(async () => (await ours()).length).toBe(1_000);
    const rightIds = new Set((await ours()).map((right) => right.rightId));
    const expiredOf = () =>
      [...idsBySubject(rightEvents.messages, 'right.expired').keys()].filter((id) => rightIds.has(id));
    await sleep(Math.max(0, end - Date.now())); // the wait is the test's subject: the rights end together at `end`
    // A generous bound: this asserts that every right expires once; how fast is measured by
    // `npm run bench:renewal` (docs/performance.md), not here.
    await rightEvents.waitFor(() => expiredOf().length === 1_000, 60_000);
    expect((await ours()).every((right) => right.state === 'EXPIRED')).toBe(true);
    await passed();
    const expired = idsBySubject(rightEvents.messages, 'right.expired');
    for (const id of rightIds) expect(expired.get(id)?.size, `right.expired of ${id}`).toBe(1);
  }, 120_000);
});

describe('catch-up', () => {
  it('when the scheduler was stopped while periods fell due, then at restart it issues them, and never a right that has already ended', async () => {
    const due = Math.ceil(Date.now() / 1000) * 1000 + 13_000; // past the "soon" margin: kept under its second
    const lasting = await Promise.all(
      Array.from({ length: 20 }, () => createSubscription({ timeSpec: `R/${isoSecond(due)}/PT1H` })),
    );
    const short = await Promise.all(
      Array.from({ length: 20 }, () => createSubscription({ timeSpec: `R2/${isoSecond(due)}/PT1S` })),
    );
    // Every subscription's schedule recorded by the scheduler before it stops.
    const scheduled = async () => {
      const db = mongoose.createConnection(system.mongoUrlFor('scheduler'));
      try {
        await db.asPromise();
        return await db.collection('subscription_schedules').countDocuments({ id: { $in: [...lasting, ...short] } });
      } finally {
        await db.close();
      }
    };
    await expect.poll(scheduled, { timeout: 20_000 }).toBeGreaterThanOrEqual(40);
    const scheduler = system.service('scheduler');
    await scheduler.stop();
    await sleep(Math.max(0, due + 4_000 - Date.now())); // the wait is the test's subject: the scheduler is down while both short periods end
    await scheduler.start();
    const rightsOf = async (ids: string[]) =>
      (await rightsOfUser()).filter((right) => ids.includes(subscriptionOf(right)!));
    await expect.poll(async () => (await rightsOf(lasting)).length).toBe(20);
    const expired = async () =>
      await Promise.all(
        short.map(
          async (id) => ((await (await call('GET', `/id/users/${USER}/subs/${id}`)).json()) as { state: string }).state,
        ),
      );
    await expect.poll(expired).toEqual(short.map(() => 'EXPIRED'));
    expect(await rightsOf(short)).toEqual([]);
    expect(new Set((await rightsOf(lasting)).map(subscriptionOf)).size).toBe(20);
  }, 60_000);
});
