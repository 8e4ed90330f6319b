import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { clientsOf, systemFixture, TEST_ADMIN, TestSystem } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Every example of examples/ run against a running system, as an integrator would run it
// against `npm start`, its outcome read from the JSON lines it prints.
const fx = systemFixture({
  name: 'examples',
  backends: ['catalog', 'rights', 'subscriptions', 'scheduler', 'webhooks'],
  // Low enough that a bulk import meets 429s and has to honour Retry-After.
  env: { RATE_LIMIT_PER_SECOND: '20', RATE_LIMIT_BURST: '10', TEST_CLOCKS_MAX: '1', SCHEDULER_TICK_MS: '200' },
  seed: {
    clients: clientsOf({ grantor: 'G', provider: 'P' }),
    users: ['alice', 'rehearsal'],
    skus: {
      video: { serviceProviderId: 'P', grantorIds: ['G'] },
      articles: { serviceProviderId: 'P', grantorIds: ['G'] },
    },
  },
});
beforeAll(fx.start);
afterAll(fx.stop);

const running: ChildProcess[] = [];
afterAll(() => running.forEach((child) => child.kill()));

/** Runs an example with the platform's address and a client's credentials; its JSON lines as they come. */
function runExample(file: string, args: string[], env: Record<string, string> = {}, clientId = 'grantor') {
  const lines: Array<Record<string, unknown>> = [];
  let errors = '';
  const child = spawn(process.execPath, [path.resolve(__dirname, '..', file), ...args], {
    env: {
      PATH: process.env.PATH ?? '',
      PLATFORM_URL: fx.system.gatewayUrl,
      CLIENT_ID: clientId,
      CLIENT_SECRET: `secret-of-${clientId}`,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.push(child);
  let partial = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    const split = (partial + chunk.toString('utf8')).split('\n');
    partial = split.pop() ?? '';
    for (const line of split) if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
  });
  child.stderr!.on('data', (chunk: Buffer) => (errors += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  return {
    lines,
    exited,
    /** Resolves the first line that matches, once it has been printed. */
    line: (matches: (line: Record<string, unknown>) => boolean, timeout = 20_000) =>
      expect
        .poll(() => lines.find(matches), { timeout, message: `no such line; stderr: ${errors}` })
        .toBeDefined()
        .then(() => lines.find(matches)!),
    stderr: () => errors,
  };
}

const G = TestSystem.clientAuthorization('grantor');
const now = () => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');

async function createRight(user: string) {
  const response = await fx.call('POST', `/id/users/${user}/rights`, G, {
    sku: 'video',
    grantorId: 'G',
    serviceProviderId: 'P',
    timeInterval: `${now()}/P30D`,
    state: 'ACTIVE',
  });
  expect(response.status, await response.clone().text()).toBe(201);
  return ((await response.json()) as { rightId: string }).rightId;
}

describe('examples/', () => {
  it('check-entitlement: a provider checks online, then verifies a right token offline with keys fetched first', async () => {
    const rightId = await createRight('alice');
    const example = runExample('check-entitlement.mjs', ['alice', 'video'], {}, 'provider');
    expect(await example.exited, example.stderr()).toBe(0);
    expect(example.lines).toEqual([
      expect.objectContaining({
        connectId: 'alice',
        sku: 'video',
        entitled: true,
        offline: expect.objectContaining({ rightId, sku: 'video' }),
      }),
    ]);
  });

  it('metered-articles: a subscription of 10 articles a month, consumed by SKU and through a reservation, then topped up', async () => {
    const example = runExample('metered-articles.mjs', ['alice', 'articles', 'G'], {
      PROVIDER_ID: 'provider',
      PROVIDER_SECRET: 'secret-of-provider',
    });
    expect(await example.exited, example.stderr()).toBe(0);
    expect(example.lines).toEqual([
      expect.objectContaining({ balance: 10 }),
      { read: 1, remaining: 9 },
      { read: 2, remaining: 8 },
      { read: 3, remaining: 7 },
      { reserved: 2, committed: 1, remaining: 6 },
      { toppedUp: 5, balance: 11 },
    ]);
  });

  it('plan-change: an upgrade now ends the basic right and issues premium for the rest of the month; a downgrade waits for the next', async () => {
    const example = runExample('plan-change.mjs', ['alice', 'articles', 'video', 'G']);
    expect(await example.exited, example.stderr()).toBe(0);
    const [subscribed, upgraded, downgraded] = example.lines;
    expect(subscribed).toMatchObject({ rights: [{ sku: 'articles', state: 'ACTIVE' }] });
    expect(upgraded).toEqual({
      upgraded: ['video'],
      rights: [
        { sku: 'articles', state: 'EXPIRED' },
        { sku: 'video', state: 'ACTIVE' },
      ],
    });
    expect(downgraded).toMatchObject({ plan: ['video'], pending: ['articles'] });
    // From the next period's start: a month after the subscription's (28 to 31 days).
    const ahead = (Date.parse(String(downgraded!.from)) - Date.now()) / 86_400_000;
    expect(ahead).toBeGreaterThan(27);
    expect(ahead).toBeLessThan(32);
  });

  it('test-clock-year: a year of a monthly subscription rehearsed on a clock, then the clock deleted with it', async () => {
    const example = runExample('test-clock-year.mjs', ['rehearsal', 'articles', 'G']);
    expect(await example.exited, example.stderr()).toBe(0);
    const [started, year, checked, deleted] = example.lines;
    expect(started).toMatchObject({ time: '2026-01-01T00:00:00Z' });
    expect(year).toEqual({ time: '2027-01-01T00:00:00Z', rights: 13, expired: 12, active: ['2027-01-01T00:00:00Z'] });
    expect(checked).toEqual({ entitled: true, until: '2027-02-01T00:00:00Z', entitledInRealTime: false });
    expect(deleted).toEqual({ deleted: started!.clock });
  });

  it('webhook-receiver: verifies the signatures of right events and handles a redelivered one once', async () => {
    const receiver = runExample('webhook-receiver.mjs', [], { RECEIVER_PORT: '0' });
    const { endpointId } = (await receiver.line((line) => 'listening' in line)) as { endpointId: string };
    const rightId = await createRight('alice');
    const received = (await receiver.line((line) => line.received === 'right.created' && line.subject === rightId)) as {
      id: string;
    };
    // The platform delivers it again (as after a lost answer): the receiver sees the same id.
    const deliveries = await fx.call('GET', `/webhooks/endpoints/${endpointId}/deliveries`, G);
    const { deliveries: list } = (await deliveries.json()) as {
      deliveries: Array<{ deliveryId: string; eventId: string }>;
    };
    const delivery = list.find((entry) => entry.eventId === received.id)!;
    expect(
      (await fx.call('POST', `/webhooks/endpoints/${endpointId}/deliveries/${delivery.deliveryId}/retry`, G)).status,
    ).toBe(202);
    await receiver.line((line) => line.duplicate === received.id);
    expect(receiver.lines.filter((line) => line.id === received.id)).toHaveLength(1);
    expect(receiver.lines.some((line) => 'refused' in line)).toBe(false);
  });

  it('bulk-import: users and subscriptions imported once however often it runs, 429s waited out', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'import-'));
    const file = path.join(dir, 'import.json');
    // 90 requests against 20 a second (a burst of 10): eight at a time, they meet 429s unless
    // each takes over 400 ms.
    const users = Array.from({ length: 30 }, (_, i) => ({
      connectId: `imported-${i}`,
      subscriptions: [
        { timeSpec: `R/${now()}/P1M`, rightsSpec: [{ sku: 'video' }] },
        { timeSpec: `R12/${now()}/P1M`, rightsSpec: [{ sku: 'video' }] },
      ],
    }));
    writeFileSync(file, JSON.stringify({ grantorId: 'G', users }));
    const env = { ADMIN_ID: TEST_ADMIN.clientId, ADMIN_SECRET: TEST_ADMIN.secret };
    const first = runExample('bulk-import.mjs', [file], env);
    expect(await first.exited, first.stderr()).toBe(0);
    expect(first.lines[0]).toMatchObject({ users: 30, created: 60, replayed: 0 });
    expect(first.lines[0]!.waitedOn429).toBeGreaterThan(0);
    const again = runExample('bulk-import.mjs', [file], env);
    expect(await again.exited, again.stderr()).toBe(0);
    expect(again.lines[0]).toMatchObject({ users: 30, created: 0, replayed: 60 });
    // The imports spent the client's budget: the list waits its turn as they did.
    await expect
      .poll(async () => {
        const listed = await fx.call('GET', '/id/users/imported-3/subs?grantorid=G', G);
        return listed.status === 429 ? 'limited' : ((await listed.json()) as { subscription: unknown[] }).subscription;
      })
      .toHaveLength(2);
  });

  it('bulk-import: without the admin credentials, it stops with one line naming them, having done nothing', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'import-'));
    const file = path.join(dir, 'import.json');
    writeFileSync(file, JSON.stringify({ grantorId: 'G', users: [{ connectId: 'zoe', subscriptions: [] }] }));
    const run = runExample('bulk-import.mjs', [file]);
    expect(await run.exited).toBe(2);
    expect(run.stderr().trim().split('\n')).toEqual([
      'set ADMIN_ID and ADMIN_SECRET: the Basic credentials of an admin client (npm start prints one)',
    ]);
    expect((await fx.call('GET', '/id/users/zoe', G)).status).toBe(404);
  });

  it('consume-rights-events: its own queue receives each right event', async () => {
    const consumer = runExample('consume-rights-events.mjs', [], {
      AMQP_URL: fx.system.amqpUrl,
      QUEUE: 'example.rights-events',
    });
    // Its quorum queue declared on a broker the whole suite is using: given time, not timed.
    await consumer.line((line) => 'consuming' in line, 60_000);
    const rightId = await createRight('alice');
    expect(await fx.call('POST', `/id/users/alice/rights/${rightId}/suspend`, G)).toMatchObject({ status: 204 });
    await consumer.line((line) => line.event === 'right.suspended' && line.rightId === rightId);
    expect(consumer.lines.filter((line) => line.rightId === rightId).map((line) => line.event)).toEqual([
      'right.created',
      'right.suspended',
    ]);
  });
});
