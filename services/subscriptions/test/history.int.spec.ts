import { PARTIES, clientsOf, systemFixture, type CollectedMessage } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// History of rights and subscriptions through the gateway (docs/api.md "History"): every
// change in generation order, with who made it and what it changed, kept
// after the resource is gone; the change events carry the same actor.

const { A, B, SP } = PARTIES;
const fx = systemFixture({
  name: 'history',
  backends: ['catalog', 'rights', 'subscriptions', 'scheduler'],
  bearer: true,
  env: { SCHEDULER_TICK_MS: '200' },
  collect: { 'rights.events': '#', 'subscriptions.events': '#' },
  seed: {
    clients: clientsOf({ ...PARTIES.grantors, 'app-a': 'A' }),
    users: ['alice', 'bob'],
    skus: { news: { serviceProviderId: 'SP', grantorIds: ['A', 'B'] } },
  },
});
beforeAll(fx.start);
afterAll(fx.stop);

interface Entry {
  generation: string;
  type: string;
  time: string;
  actor: { kind: string; id: string };
  changes: Record<string, [unknown, unknown]>;
}
const ADMIN = () => fx.system.adminHeaders().authorization!;
const bearer = (scope: string) => fx.issuer.token('app-a', 'alice', { scope }).then((token) => `Bearer ${token}`);
const iso = (offsetMs: number) => new Date(Date.now() + offsetMs).toISOString().replace(/\.\d{3}Z$/, 'Z');

async function historyOf(path: string, authorization = A): Promise<Entry[]> {
  const response = await fx.call('GET', `${path}/history`, authorization);
  expect(response.status, await response.clone().text()).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  return ((await response.json()) as { history: Entry[] }).history;
}
/**
 * Waits for the history to hold `types`, in order. docs/api.md promises 2 s in normal operation;
 * under the suite's load it can take longer, so this waits as long as any poll (vitest.config.mts).
 */
async function historyHolding(path: string, types: string[], authorization = A): Promise<Entry[]> {
  await expect.poll(async () => (await historyOf(path, authorization)).map((e) => e.type)).toEqual(types);
  return historyOf(path, authorization);
}
const eventsOf = (exchange: string, subject: string): CollectedMessage[] =>
  fx.events(exchange).messages.filter((message) => message.body.subject === subject);
/** Each entry's actor is the one its event carried (`actorkind`, `actorid`). */
async function expectEventsAgree(exchange: string, subject: string, history: Entry[]) {
  await fx.events(exchange).waitFor(() => eventsOf(exchange, subject).length >= history.length);
  const actorOf = new Map(
    eventsOf(exchange, subject).map((m) => {
      const event = m.body as unknown as {
        type: string;
        actorkind: string;
        actorid: string;
        data: { sequence: number };
      };
      return [`${event.data.sequence}:${event.type}`, { kind: event.actorkind, id: event.actorid }];
    }),
  );
  for (const entry of history)
    expect(actorOf.get(`${entry.generation}:${entry.type}`), entry.type).toEqual(entry.actor);
}

/** A right of alice's, granted by A, active for the next hour. */
async function createRight(fields: Record<string, string> = {}) {
  const created = await fx.call('POST', '/id/users/alice/rights', A, {
    sku: 'news',
    grantorId: 'A',
    timeInterval: `${iso(-60_000)}/${iso(3_600_000)}`,
    ...fields,
  });
  expect(created.status).toBe(201);
  return (await created.json()) as Record<string, unknown> & { rightId: string };
}

/**
 * Removes the resource as its grantor: it is gone, its history stays, for its grantor and
 * admins, and the removal is its last entry; `refused` callers get 404.
 */
async function expectKeptAfterRemoval(path: string, kind: 'right' | 'subscription', refused: string[]) {
  expect((await fx.call('DELETE', path, A)).status).toBe(204);
  expect((await fx.call('GET', path, A)).status).toBe(404);
  const removal = kind === 'right' ? 'right.removed' : 'subscription.deleted';
  const history = await historyHolding(path, [`${kind}.created`, removal]);
  expect(history[1]!.actor).toEqual({ kind: 'client', id: 'grantor-a' });
  expect(await historyOf(path, ADMIN())).toEqual(history);
  for (const other of refused) expect((await fx.call('GET', `${path}/history`, other)).status).toBe(404);
}

describe('history of a right (docs/api.md)', () => {
  it('when clients and a user change a right, then each change is listed in order, with its actor and fields, and its event agrees', async () => {
    const right = await createRight({ serviceProviderId: 'SP' });
    const path = `/id/users/alice/rights/${right.rightId}`;
    expect((await fx.call('POST', `${path}/activate`, A)).status).toBe(204);
    expect((await fx.call('POST', `${path}/usage`, await bearer('id.user.right.use'))).status).toBe(204);

    const history = await historyHolding(path, ['right.created', 'right.activated', 'right.used']);
    expect(history.map((e) => e.generation)).toEqual(['1', '2', '3']);
    expect(history.map((e) => e.actor)).toEqual([
      { kind: 'client', id: 'grantor-a' },
      { kind: 'client', id: 'grantor-a' },
      { kind: 'user', id: 'alice' },
    ]);
    // The creation lists every field as [null, value]: the right as it was created.
    const { generation: _generation, ...fields } = right;
    for (const [field, value] of Object.entries(fields))
      expect(history[0]!.changes[field], field).toEqual([null, value]);
    expect(history[1]!.changes.state).toEqual(['CREATED', 'ACTIVE']);
    expect(history[2]!.changes).toEqual({ used: [false, true] });
    for (const entry of history) expect(Date.parse(entry.time)).not.toBeNaN();
    await expectEventsAgree('rights.events', right.rightId, history);

    // Whoever may read the right may read its history: its provider, a Bearer token with the read scope, admins.
    expect(await historyOf(path, SP)).toEqual(history);
    expect(await historyOf(path, await bearer('id.user.right.read'))).toEqual(history);
    expect(await historyOf(path, ADMIN())).toEqual(history);
    expect((await fx.call('GET', `${path}/history`, B)).status).toBe(404);
  });

  it('when a right is removed, then its history stays, for its grantor and admins only', async () => {
    const { rightId } = await createRight({ serviceProviderId: 'SP', state: 'ACTIVE' });
    await expectKeptAfterRemoval(`/id/users/alice/rights/${rightId}`, 'right', [
      SP,
      B,
      await bearer('id.user.right.read'),
    ]);
  });

  it('when the history is read a page at a time, then the Link cursors walk every entry once, in order', async () => {
    const { rightId } = await createRight();
    const path = `/id/users/alice/rights/${rightId}`;
    for (const command of ['activate', 'suspend', 'activate', 'suspend'])
      expect((await fx.call('POST', `${path}/${command}`, A)).status).toBe(204);
    const all = await historyHolding(path, [
      'right.created',
      'right.activated',
      'right.suspended',
      'right.activated',
      'right.suspended',
    ]);

    const pages: Entry[][] = [];
    let next: string | null = `${fx.system.gatewayUrl}${path}/history?limit=2`;
    while (next) {
      const response: Response = await fetch(next, { headers: { authorization: A } });
      expect(response.status).toBe(200);
      pages.push(((await response.json()) as { history: Entry[] }).history);
      next = /<([^>]+)>; rel="next"/.exec(response.headers.get('link') ?? '')?.[1] ?? null;
      expect(pages.length).toBeLessThan(5);
    }
    expect(pages.map((page) => page.length)).toEqual([2, 2, 1]);
    expect(pages.flat()).toEqual(all);
  });

  it('when the request is bad, then a clear error and nothing else', async () => {
    const malformed = await fx.call('GET', '/id/users/alice/rights/nope/history?cursor=x', A);
    expect(malformed.status).toBe(400);
    expect(malformed.headers.get('content-type')).toMatch(/^text\/plain/);
    expect((await fx.call('GET', '/id/users/alice/rights/nosuchright/history', A)).status).toBe(404);
    expect((await fx.call('GET', '/id/users/alice/rights/nosuchright/history?limit=0', A)).status).toBe(400);
    // A right of another user is not found under this user's path.
    const { rightId } = await createRight();
    expect((await fx.call('GET', `/id/users/bob/rights/${rightId}/history`, A)).status).toBe(404);
    // A token without the read scope is refused by the gateway: 401 with the scope it needs (docs/api.md).
    const noScope = await fx.call(
      'GET',
      `/id/users/alice/rights/${rightId}/history`,
      await bearer('id.user.right.use'),
    );
    expect(noScope.status).toBe(401);
    expect(noScope.headers.get('www-authenticate')).toMatch(
      /error="insufficient_scope", scope="id\.user\.right\.read"/,
    );
  });
});

describe('history of a subscription (docs/api.md)', () => {
  it('when a client changes a subscription and the platform renews it and cascades to its rights, then both histories name who did what', async () => {
    const created = await fx.call('POST', '/id/users/alice/subs', A, {
      grantorId: 'A',
      timeSpec: `R/${iso(-1_000)}/PT8S`,
      rightsSpec: [{ sku: 'news' }],
    });
    expect(created.status).toBe(201);
    const { subscriptionId } = (await created.json()) as { subscriptionId: string };
    const path = `/id/users/alice/subs/${subscriptionId}`;
    // The current period is issued at once, the next one 7 s later: renewals by the scheduler.
    // (Periods long enough that the suspension's cascade reaches the second period's right
    // before it ends: with 3 s periods it sometimes found it EXPIRED.)
    await expect
      .poll(async () => (await historyOf(path)).filter((e) => e.type === 'subscription.renewed').length)
      .toBeGreaterThanOrEqual(2);
    expect((await fx.call('POST', `${path}/suspend`, A)).status).toBe(204);

    const history = await historyOf(path);
    expect(history[0]).toMatchObject({
      type: 'subscription.created',
      generation: '1',
      actor: { kind: 'client', id: 'grantor-a' },
    });
    expect(history[0]!.changes.state).toEqual([null, 'ACTIVE']);
    const renewals = history.filter((e) => e.type === 'subscription.renewed');
    for (const renewal of renewals) {
      expect(renewal.actor).toEqual({ kind: 'system', id: 'scheduler' });
      expect(Object.keys(renewal.changes)).toContain('nextPeriod');
    }
    await expect.poll(async () => (await historyOf(path)).at(-1)?.type).toBe('subscription.suspended');
    const suspended = (await historyOf(path)).at(-1)!;
    expect(suspended).toMatchObject({
      actor: { kind: 'client', id: 'grantor-a' },
      changes: { state: ['ACTIVE', 'SUSPENDED'] },
    });
    expect((await historyOf(path)).map((e) => Number(e.generation))).toEqual(
      [...(await historyOf(path)).map((e) => Number(e.generation))].sort((a, b) => a - b),
    );
    await expectEventsAgree('subscriptions.events', subscriptionId, await historyOf(path));

    // Its rights: issued by the platform for the subscription, suspended by the cascade.
    type Listed = { rightId: string; state: string; link: Array<{ rel: string; href: string }> };
    const issuedRights = async () =>
      (
        (await (await fx.call('GET', '/id/users/alice/rights?grantorId=A&limit=1000', A)).json()) as { right: Listed[] }
      ).right.filter((r) => r.link.some((l) => l.href.endsWith(`/subs/${subscriptionId}`)));
    expect((await issuedRights()).length).toBeGreaterThanOrEqual(2);
    // The cascade is a command after the suspension's event: it may land a moment later.
    await expect.poll(async () => (await issuedRights()).find((r) => r.state === 'SUSPENDED')).toBeDefined();
    const current = (await issuedRights()).find((r) => r.state === 'SUSPENDED');
    const rightHistory = await historyHolding(`/id/users/alice/rights/${current!.rightId}`, [
      'right.created',
      'right.suspended',
    ]);
    expect(rightHistory.map((e) => e.actor)).toEqual([
      { kind: 'system', id: 'subscriptions' },
      { kind: 'system', id: 'subscriptions' },
    ]);
    await expectEventsAgree('rights.events', current!.rightId, rightHistory);
  });

  it('when a subscription is deleted, then its history stays, for its grantor and admins only', async () => {
    const created = await fx.call('POST', '/id/users/bob/subs', A, {
      grantorId: 'A',
      timeSpec: `R/${iso(86_400_000)}/P1M`,
      rightsSpec: [{ sku: 'news' }],
    });
    const { subscriptionId } = (await created.json()) as { subscriptionId: string };
    await expectKeptAfterRemoval(`/id/users/bob/subs/${subscriptionId}`, 'subscription', [B]);
  });
});
