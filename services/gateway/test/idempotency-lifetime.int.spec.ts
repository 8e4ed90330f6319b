import { setTimeout as sleep } from 'node:timers/promises';
import { systemFixture, TestSystem, clientsOf } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Idempotency-Key (docs/api.md) over a key's lifetime: removes and actions replayed, and the
// key forgotten after IDEMPOTENCY_TTL_S (short here). Crashes are in idempotency.e2e.spec.ts.

const TTL_S = 4;
const A = TestSystem.clientAuthorization('grantor-a');
const fx = systemFixture({
  name: 'idempotency_lifetime',
  backends: ['catalog', 'rights'],
  env: { IDEMPOTENCY_TTL_S: String(TTL_S) },
  collect: { 'rights.events': '#' },
  seed: { clients: clientsOf({ 'grantor-a': 'A' }), users: ['una', 'uma'], skus: { news: {} } },
});
beforeAll(fx.start);
afterAll(fx.stop);

const interval = `${new Date().toISOString().replace(/\.\d{3}Z$/, 'Z')}/P30D`;
function send(method: string, path: string, key: string | null, body?: object): Promise<Response> {
  return fetch(`${fx.system.gatewayUrl}${path}`, {
    method,
    headers: {
      authorization: A,
      ...(key === null ? {} : { 'idempotency-key': key }),
      ...(body ? { 'content-type': 'application/json' } : {}),
    },
    body: body ? JSON.stringify(body) : undefined,
  });
}
const rightBody = (extra: object = {}) => ({ sku: 'news', grantorId: 'A', timeInterval: interval, ...extra });
async function rightsOf(user: string): Promise<Array<{ rightId: string; grantorContext: string | null }>> {
  const response = await send('GET', `/id/users/${user}/rights?grantorId=A`, null);
  return ((await response.json()) as { right: Array<{ rightId: string; grantorContext: string | null }> }).right;
}
const eventsOf = (user: string, type: string) =>
  fx
    .events('rights.events')
    .messages.filter((m) => m.body.type === type && (m.body.data as { connectId: string }).connectId === user)
    .map((m) => m.body.subject);

describe('Idempotency-Key over its lifetime (docs/api.md)', () => {
  it('when a suspend and a remove are sent again with their keys, then their kept 204s come back and each changed the right once', async () => {
    const created = await send('POST', '/id/users/una/rights', null, rightBody({ state: 'ACTIVE' }));
    const { rightId } = (await created.json()) as { rightId: string };
    const path = `/id/users/una/rights/${rightId}`;
    for (const [method, action, key] of [
      ['POST', '/suspend', 'suspend-1'],
      ['DELETE', '', 'remove-1'],
    ] as const) {
      const first = await send(method, `${path}${action}`, key);
      expect(first.status).toBe(204);
      expect(first.headers.get('idempotent-replayed')).toBeNull();
      const again = await send(method, `${path}${action}`, key);
      expect(again.status).toBe(204);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
    }
    // Without its key the remove runs again, and finds nothing to remove.
    expect((await send('DELETE', path, null)).status).toBe(404);
    // The remove is the last change: once its event is here, every event of the right is.
    await fx.events('rights.events').waitFor(() => eventsOf('una', 'right.removed').length > 0);
    expect(eventsOf('una', 'right.suspended')).toEqual([rightId]);
    expect(eventsOf('una', 'right.removed')).toEqual([rightId]);
  });

  it('when IDEMPOTENCY_TTL_S has passed, then the key is forgotten: used again, it makes a new right from its new request', async () => {
    const first = await send('POST', '/id/users/uma/rights', 'monthly', rightBody({ grantorContext: 'january' }));
    expect(first.status).toBe(201);
    const january = ((await first.json()) as { rightId: string }).rightId;
    expect((await send('POST', '/id/users/uma/rights', 'monthly', rightBody())).status).toBe(422);

    await sleep(TTL_S * 1000 + 500); // the wait is the test's subject: past the key's lifetime
    const second = await send('POST', '/id/users/uma/rights', 'monthly', rightBody({ grantorContext: 'february' }));
    expect(second.status, await second.clone().text()).toBe(201);
    expect(second.headers.get('idempotent-replayed')).toBeNull();
    const february = (await second.json()) as { rightId: string; grantorContext: string };
    expect(february.rightId).not.toBe(january);
    expect(february.grantorContext).toBe('february');
    const stored = await rightsOf('uma');
    expect(stored.map((right) => [right.rightId, right.grantorContext]).sort()).toEqual(
      [
        [january, 'january'],
        [february.rightId, 'february'],
      ].sort(),
    );
  });
});
