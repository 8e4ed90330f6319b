import type { AuditEntry } from '@rs/contracts';
import { clientsOf, systemFixture, TEST_ADMIN, TestSystem } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// docs/audit.md: every change of an admin client or a staff member is recorded before it is
// forwarded and completed with its answer; staff say why; the log is read through
// GET /admin/audit, a page at a time, and each entry is also audit.recorded on platform.events.
const fx = systemFixture({
  name: 'audit',
  backends: ['catalog', 'rights', 'subscriptions'],
  bearer: true,
  collect: { 'platform.events': 'audit.recorded' },
  seed: {
    clients: clientsOf({ 'grantor-a': 'A', 'grantor-b': 'B' }),
    users: ['alice', 'bob'],
    skus: { news: { grantorIds: ['A', 'B'] } },
  },
});
beforeAll(fx.start);
afterAll(fx.stop);

const admin = () => fx.system.adminHeaders().authorization!;
const staff = async (member: string, role: 'read' | 'write' | 'admin', grantors: string[] = []) =>
  `Bearer ${await fx.issuer.staffToken(member, role, grantors)}`;
const because = (reason: string) => ({ 'x-audit-reason': reason });
const rightBody = (grantorId: string, extra: object = {}) => ({
  sku: 'news',
  grantorId,
  timeInterval: '2026-01-01T00:00:00Z/2099-01-01T00:00:00Z',
  state: 'ACTIVE',
  ...extra,
});

/** The entries `authorization` reads with `query`, every page followed by its Link. */
async function readAll(authorization: string, query = ''): Promise<AuditEntry[]> {
  const entries: AuditEntry[] = [];
  let next: string | null = `${fx.system.gatewayUrl}/admin/audit?limit=3${query}`;
  while (next) {
    const response: Response = await fetch(next, { headers: { authorization } });
    expect(response.status, await response.clone().text()).toBe(200);
    entries.push(...((await response.json()) as { entries: AuditEntry[] }).entries);
    next = /<([^>]+)>; rel="next"/.exec(response.headers.get('link') ?? '')?.[1] ?? null;
  }
  return entries;
}

describe('recording (docs/audit.md)', () => {
  it('when a write staff member grants and suspends a right with a reason, then each change has an entry naming them, the reason and the answer, and each is published as audit.recorded', async () => {
    const agent = await staff('ann', 'write', ['A']);
    const created = await fx.call('POST', '/id/users/alice/rights', agent, rightBody('A'), because('paid by transfer'));
    expect(created.status, await created.clone().text()).toBe(201);
    const { rightId, href } = (await created.json()) as { rightId: string; href: string };
    const suspended = await fx.call(
      'POST',
      `/id/users/alice/rights/${rightId}/suspend`,
      agent,
      undefined,
      because('fraud%20check%20%E2%80%94%20ticket%2042'), // percent-encoded UTF-8
    );
    expect(suspended.status).toBe(204);

    // An entry is listed once its answer is recorded, just after the client has it.
    await expect.poll(async () => (await readAll(admin(), '&actor=ann')).length).toBe(2);
    const entries = await readAll(admin(), '&actor=ann');
    const creation = entries.find((entry) => entry.action === 'POST /id/users/{connectId}/rights');
    const suspension = entries.find((entry) => entry.action.endsWith('/suspend'));
    expect(creation).toMatchObject({
      actor: { kind: 'staff', id: 'ann', issuer: fx.issuer.issuer, name: 'Agent ann' },
      action: 'POST /id/users/{connectId}/rights',
      subject: href,
      grantorId: 'A',
      reason: 'paid by transfer',
      status: 201,
      requestId: created.headers.get('x-request-id'),
    });
    expect(suspension).toMatchObject({
      action: 'POST /id/users/{connectId}/rights/{rightId}/suspend',
      subject: `${fx.system.gatewayUrl}/id/users/alice/rights/${rightId}/suspend`,
      grantorId: 'A',
      reason: 'fraud check — ticket 42',
      status: 204,
    });
    expect(Date.parse(suspension!.at)).toBeGreaterThanOrEqual(Date.parse(creation!.at));
    // The history of the right names the staff member as its actor too (recorded once its events are out).
    const actors = async () =>
      (
        (await (await fx.call('GET', `/id/users/alice/rights/${rightId}/history`, admin())).json()) as {
          history: Array<{ actor: { kind: string; id: string } }>;
        }
      ).history.map((entry) => entry.actor);
    await expect.poll(actors).toContainEqual({ kind: 'staff', id: 'ann' });
    // Each entry is an event too, as the API shows it.
    const published = await fx
      .events('platform.events')
      .waitFor(
        (messages) => entries.every((entry) => messages.some((message) => message.body.subject === entry.auditId)),
        20_000,
      );
    const event = published.find((message) => message.body.subject === creation!.auditId)!;
    expect(event.body).toMatchObject({ type: 'audit.recorded', source: '/gateway', data: creation });
  });

  it('when a staff member changes anything without a reason, or with one too long, then 400 and nothing is changed or recorded', async () => {
    const agent = await staff('bea', 'write', ['A']);
    for (const headers of [{}, because(''), because('x'.repeat(501)), because('   ')]) {
      const refused = await fx.call('POST', '/id/users/alice/rights', agent, rightBody('A'), headers);
      expect(refused.status).toBe(400);
      expect(await refused.text()).toMatch(/X-Audit-Reason/);
    }
    expect(await readAll(admin(), '&actor=bea')).toEqual([]);
    const rights = (await (await fx.call('GET', '/id/users/alice/rights?grantorId=A', admin())).json()) as {
      right: unknown[];
    };
    expect(rights.right.length).toBeLessThanOrEqual(1); // the first test's right only
  });

  it('when an admin client changes things, then they are recorded without a reason; a grantor’s own client and reads are not recorded', async () => {
    const before = (await readAll(admin())).length;
    expect((await fx.call('PUT', '/id/users/carol', admin())).status).toBe(201);
    const mine = await fx.call(
      'POST',
      '/id/users/bob/rights',
      TestSystem.clientAuthorization('grantor-b'),
      rightBody('B'),
    );
    expect(mine.status).toBe(201);
    expect((await fx.call('GET', '/id/users/bob/rights?grantorId=B', admin())).status).toBe(200);
    await expect.poll(async () => (await readAll(admin())).length - before).toBe(1);
    const after = await readAll(admin());
    expect(after[0]).toMatchObject({
      actor: { kind: 'client', id: TEST_ADMIN.clientId, issuer: null, name: null },
      action: 'PUT /id/users/{connectId}',
      subject: `${fx.system.gatewayUrl}/id/users/carol`,
      reason: null,
      status: 201,
    });
  });
});

describe('reading (docs/audit.md)', () => {
  it('when the log is filtered by subject, grantor and time, then each filter finds exactly its entries, page after page', async () => {
    const agent = await staff('cal', 'write', ['A', 'B']);
    const made: Record<string, string> = {};
    for (const [user, grantor] of [
      ['alice', 'A'],
      ['alice', 'B'],
      ['bob', 'A'],
      ['bob', 'B'],
    ] as const) {
      const response = await fx.call('POST', `/id/users/${user}/rights`, agent, rightBody(grantor), because('setup'));
      expect(response.status).toBe(201);
      made[`${user}-${grantor}`] = ((await response.json()) as { rightId: string }).rightId;
    }
    await expect.poll(async () => (await readAll(admin(), '&actor=cal')).length).toBe(4);
    const mine = await readAll(admin(), '&actor=cal');
    expect(mine.map((entry) => entry.grantorId).sort()).toEqual(['A', 'A', 'B', 'B']);

    // Everything about alice (her rights, and anything under them), and about one right.
    const aboutAlice = await readAll(admin(), `&actor=cal&subject=${encodeURIComponent('/id/users/alice')}`);
    expect(aboutAlice.map((entry) => entry.subject).sort()).toEqual(
      [made['alice-A'], made['alice-B']].map((id) => `${fx.system.gatewayUrl}/id/users/alice/rights/${id}`).sort(),
    );
    const oneRight = `${fx.system.gatewayUrl}/id/users/bob/rights/${made['bob-B']}`;
    expect((await readAll(admin(), `&subject=${encodeURIComponent(oneRight)}`)).map((entry) => entry.subject)).toEqual([
      oneRight,
    ]);
    expect((await readAll(admin(), '&actor=cal&grantorId=B')).map((entry) => entry.grantorId)).toEqual(['B', 'B']);

    // Time: before the first of them finds none of them; after the last, none either.
    const times = mine.map((entry) => Date.parse(entry.at));
    const iso = (ms: number) => new Date(ms).toISOString();
    expect(await readAll(admin(), `&actor=cal&before=${iso(Math.min(...times))}`)).toEqual([]);
    expect(await readAll(admin(), `&actor=cal&after=${iso(Math.max(...times) + 1000)}`)).toEqual([]);
    expect(await readAll(admin(), `&actor=cal&after=${iso(Math.min(...times) - 1000)}`)).toHaveLength(4);
  });

  it('when staff read the log, then read and write staff see only their grantor’s entries, admin staff all; an API client of a grantor may not read it', async () => {
    const ofA = await readAll(await staff('dee', 'read', ['A']));
    expect(ofA.length).toBeGreaterThan(0);
    expect(new Set(ofA.map((entry) => entry.grantorId))).toEqual(new Set(['A']));
    expect(await readAll(await staff('dee', 'read', ['A']), '&grantorId=B')).toEqual([]);
    const several = await fetch(`${fx.system.gatewayUrl}/admin/audit`, {
      headers: { authorization: await staff('eve', 'read', ['A', 'B']) },
    });
    expect(several.status).toBe(400);
    expect(await readAll(await staff('eve', 'read', ['A', 'B']), '&grantorId=B')).not.toEqual([]);
    expect((await readAll(await staff('fay', 'admin'))).length).toBe((await readAll(admin())).length);
    const client = await fetch(`${fx.system.gatewayUrl}/admin/audit`, {
      headers: { authorization: TestSystem.clientAuthorization('grantor-a') },
    });
    expect(client.status).toBe(401);
  });

  it('when a query is malformed, then 400 naming the parameter', async () => {
    for (const [query, named] of [
      ['after=yesterday', 'after'],
      ['before=2026-13-01T00:00:00Z', 'before'],
      ['limit=0', 'limit'],
      ['cursor=nope', 'cursor'],
      [`actor=${'x'.repeat(513)}`, 'actor'],
    ]) {
      const response = await fetch(`${fx.system.gatewayUrl}/admin/audit?${query}`, {
        headers: { authorization: admin() },
      });
      expect(response.status, query).toBe(400);
      expect(await response.text()).toMatch(new RegExp(`^${named}`));
    }
  });
});
