import { systemFixture, TestSystem, clientsOf } from '@rs/testing';
import mongoose from 'mongoose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

// Idempotency-Key through the gateway (docs/api.md), with two gateway replicas sharing the keys.

const UPSTREAM_TIMEOUT_MS = 2_000;
const A = TestSystem.clientAuthorization('grantor-a');
const A2 = TestSystem.clientAuthorization('app-a');
const fx = systemFixture({
  processes: true,
  name: 'idempotency',
  backends: ['catalog', 'rights', 'subscriptions'],
  replicas: { gateway: 2 },
  env: { UPSTREAM_TIMEOUT_MS: String(UPSTREAM_TIMEOUT_MS) },
  collect: { 'rights.events': 'right.created', 'platform.events': 'audit.recorded' },
  seed: {
    clients: clientsOf({ 'grantor-a': 'A', 'app-a': 'A' }),
    users: ['ivy', 'ida', 'crash', 'ursa', 'audited'],
    skus: { news: {} },
  },
});
beforeAll(fx.start);
afterAll(fx.stop);

const gateway = (replica: 1 | 2) => fx.system.service(replica === 1 ? 'gateway' : 'gateway#2').url;
const interval = `${new Date().toISOString().replace(/\.\d{3}Z$/, 'Z')}/P30D`;
function create(user: string, key: string | null, body: object = {}, options: { replica?: 1 | 2; auth?: string } = {}) {
  return fetch(`${gateway(options.replica ?? 1)}/id/users/${user}/rights`, {
    method: 'POST',
    headers: {
      authorization: options.auth ?? A,
      'content-type': 'application/json',
      ...(key === null ? {} : { 'idempotency-key': key }),
    },
    body: JSON.stringify({ sku: 'news', grantorId: 'A', timeInterval: interval, state: 'ACTIVE', ...body }),
  });
}
async function rightsOf(user: string): Promise<string[]> {
  const response = await fetch(`${gateway(1)}/id/users/${user}/rights?grantorId=A`, { headers: { authorization: A } });
  return ((await response.json()) as { right: Array<{ rightId: string }> }).right.map((right) => right.rightId);
}
/** The audit entries of the gateway's database still waiting for their answer (docs/audit.md). */
async function openAuditEntries(): Promise<number> {
  const db = await mongoose.createConnection(fx.system.mongoUrlFor('gateway')).asPromise();
  try {
    const groups = await db.collection<{ entries: unknown[] }>('audit_begun').find().toArray();
    return groups.reduce((count, group) => count + group.entries.length, 0);
  } finally {
    await db.close();
  }
}
/** The state of an Idempotency-Key's record in the gateway's database, or null before it is claimed. */
async function keyState(clientId: string, key: string): Promise<string | null> {
  const db = await mongoose.createConnection(fx.system.mongoUrlFor('gateway')).asPromise();
  try {
    const found = await db.collection('idempotency_keys').findOne({ _id: `${clientId}\n${key}` as never });
    return (found?.state as string | undefined) ?? null;
  } finally {
    await db.close();
  }
}
const createdFor = (user: string) =>
  new Set(
    fx
      .events('rights.events')
      .messages.filter((m) => (m.body.data as { connectId: string }).connectId === user)
      .map((m) => m.body.subject),
  );

describe('Idempotency-Key (docs/api.md)', () => {
  it('when a create is sent again with its key, on any replica, then its kept answer comes back and one right exists', async () => {
    const first = await create('ivy', 'order-1');
    expect(first.status).toBe(201);
    const body = await first.text();
    for (const replica of [1, 2] as const) {
      const again = await create('ivy', 'order-1', {}, { replica });
      expect(again.status).toBe(201);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.headers.get('etag')).toBe(first.headers.get('etag'));
      expect(again.headers.get('location')).toBe(first.headers.get('location'));
      expect(again.headers.get('content-type')).toMatch(/^application\/json/);
      expect(await again.text()).toBe(body);
    }
    expect(await rightsOf('ivy')).toHaveLength(1);
    await fx.events('rights.events').waitFor(() => createdFor('ivy').size > 0);
    expect(createdFor('ivy').size).toBe(1);
  });

  it('when the key comes with another request, then 422 text/plain and nothing is made; another client has its own keys', async () => {
    expect((await create('ida', 'order-2')).status).toBe(201);
    const other = await create('ida', 'order-2', { grantorContext: 'something else' });
    expect(other.status).toBe(422);
    expect(other.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await rightsOf('ida')).toHaveLength(1);
    // The same key of another API client is another key.
    const own = await create('ida', 'order-2', {}, { auth: A2 });
    expect(own.status).toBe(201);
    expect(own.headers.get('idempotent-replayed')).toBeNull();
    expect(await rightsOf('ida')).toHaveLength(2);
  });

  it('when the key is malformed, then 400 text/plain and nothing is made', async () => {
    for (const key of ['two words', 'x'.repeat(256), 'é']) {
      const response = await create('ida', key);
      expect(response.status, key).toBe(400);
      expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
      expect(await response.text()).toMatch(/Idempotency-Key/);
    }
    expect(await rightsOf('ida')).toHaveLength(2);
  });

  it('when the first attempt got a 5xx, then the retry runs again', async () => {
    const catalog = fx.system.service('catalog');
    await catalog.stop();
    try {
      // A SKU the rights service has never seen: it must ask the catalog, which is down.
      const failed = await create('ida', 'order-3', { sku: 'late' });
      expect(failed.status).toBe(503);
    } finally {
      await catalog.start();
    }
    await fetch(`${gateway(1)}/catalog/skus/late`, {
      method: 'PUT',
      headers: fx.system.adminHeaders({ 'content-type': 'application/json' }),
      body: '{}',
    });
    const retried = await create('ida', 'order-3', { sku: 'late' });
    expect(retried.status).toBe(201);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
  });

  it('when the gateway is killed between the effect of a create and its answer, then the retry with the key returns that right, and it is the only one', async () => {
    const rights = fx.system.service('rights');
    // The rights service stops answering: the create reaches it, and waits.
    process.kill(rights.pid!, 'SIGSTOP');
    const lost = create('crash', 'order-4').catch(() => null);
    try {
      // Once the first attempt has claimed the key (its record in the gateway's database).
      await expect.poll(() => keyState('grantor-a', 'order-4')).toBe('running');
      const meanwhile = await create('crash', 'order-4', {}, { replica: 2 });
      expect(meanwhile.status).toBe(409);
      expect(meanwhile.headers.get('retry-after')).toBe('1');
      await fx.system.service('gateway').kill();
    } finally {
      process.kill(rights.pid!, 'SIGCONT');
    }
    expect(await lost).toBeNull();
    // The effect happened; its answer went nowhere.
    await fx.events('rights.events').waitFor(() => createdFor('crash').size === 1);
    await fx.system.service('gateway').start();

    // The first attempt owns the key until its lease ends; then the retry runs and finds its right.
    const retried = await vi.waitFor(
      async () => {
        const answer = await create('crash', 'order-4');
        if (answer.status === 409) throw new Error('the first attempt still owns the key');
        return answer;
      },
      { timeout: 30_000, interval: 500 },
    );
    expect(retried.status, await retried.clone().text()).toBe(201);
    const { rightId } = (await retried.json()) as { rightId: string };
    expect([...createdFor('crash')]).toEqual([rightId]);
    expect(await rightsOf('crash')).toEqual([rightId]);
    // And from now on it is a replay.
    const replayed = await create('crash', 'order-4', {}, { replica: 2 });
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
  });

  it('when the rights service answers after the gateway gave up and then dies, then the retry with the key returns the right it stored, the only one', async () => {
    const rights = fx.system.service('rights');
    process.kill(rights.pid!, 'SIGSTOP');
    let first: Response;
    try {
      first = await create('ursa', 'late-1');
    } finally {
      process.kill(rights.pid!, 'SIGCONT');
    }
    // The gateway stopped waiting (a 5xx is not kept); the service then made the right anyway.
    expect(first.status).toBe(504);
    await fx.events('rights.events').waitFor(() => createdFor('ursa').size === 1);
    // The process that made it is gone: the retry is answered from what was stored.
    await rights.kill();
    await rights.start();

    // The key stays bound to its request although no answer was kept.
    const other = await create('ursa', 'late-1', { grantorContext: 'other' });
    expect(other.status).toBe(422);
    expect(other.headers.get('content-type')).toMatch(/^text\/plain/);

    const retried = await create('ursa', 'late-1');
    expect(retried.status, await retried.clone().text()).toBe(201);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
    const { rightId } = (await retried.json()) as { rightId: string };
    expect([...createdFor('ursa')]).toEqual([rightId]);
    expect(await rightsOf('ursa')).toEqual([rightId]);
    expect((await create('ursa', 'late-1')).headers.get('idempotent-replayed')).toBe('true');
  });
});

describe('the audit log through a crash (docs/audit.md)', () => {
  it('when the gateway is killed between the record of an admin’s change and its answer, then the entry stays, with status null, and is listed and published by the other replica', async () => {
    const rights = fx.system.service('rights');
    const admin = fx.system.adminHeaders().authorization!;
    process.kill(rights.pid!, 'SIGSTOP');
    const lost = create('audited', null, {}, { auth: admin }).catch(() => null);
    try {
      // Recorded before it is forwarded.
      await expect.poll(openAuditEntries, { timeout: 10_000 }).toBe(1);
      await fx.system.service('gateway').kill();
    } finally {
      process.kill(rights.pid!, 'SIGCONT');
    }
    expect(await lost).toBeNull();
    await fx.system.service('gateway').start();
    const entry = await vi.waitFor(
      async () => {
        const page = await fetch(`${gateway(2)}/admin/audit?subject=/id/users/audited/rights`, {
          headers: { authorization: admin },
        });
        const [found] = ((await page.json()) as { entries: Array<Record<string, unknown>> }).entries;
        if (!found) throw new Error('not listed yet');
        return found;
      },
      { timeout: 60_000, interval: 1_000 },
    );
    expect(entry).toMatchObject({
      action: 'POST /id/users/{connectId}/rights',
      subject: `${fx.system.gatewayUrl}/id/users/audited/rights`,
      grantorId: 'A',
      status: null,
    });
    expect(await openAuditEntries()).toBe(0);
    const published = await fx
      .events('platform.events')
      .waitFor((messages) => messages.some((message) => message.body.subject === entry.auditId));
    expect(published.find((message) => message.body.subject === entry.auditId)!.body.data).toEqual(entry);
  });
});
