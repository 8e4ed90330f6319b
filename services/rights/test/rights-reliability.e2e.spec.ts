import { TestSystem, systemFixture } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const A = TestSystem.clientAuthorization('grantor-a');

const fx = systemFixture({
  processes: true,
  name: 'rights_reliability',
  backends: ['catalog', 'rights'],
  collect: { 'rights.events': '#' },
  seed: { clients: [{ clientId: 'grantor-a', grantorId: 'A' }], users: ['dave'], skus: { news: {} } },
});
beforeAll(fx.start);
afterAll(fx.stop);
const call = (method: string, path: string, body?: unknown) => fx.call(method, path, A, body);

describe('no lost and no phantom right events', () => {
  it('when the rights service dies between storing changes and publishing them, then after restart each change is published, once per event id, and is in history once', async () => {
    const rights = fx.system.service('rights');
    // The broker takes no new connection: once its connection is cut, rights cannot publish.
    await fx.system.rabbit.limitConnections(fx.system.vhost, 0);
    expect(await fx.system.killBrokerConnection('rights')).toBe(1);
    const interval = `${new Date(Date.now() - 60_000).toISOString()}/P1D`;
    const created: string[] = [];
    for (let i = 0; i < 15; i++) {
      const response = await call('POST', '/id/users/dave/rights', {
        sku: 'news',
        grantorId: 'A',
        timeInterval: interval,
      });
      expect(response.status, await response.clone().text()).toBe(201);
      created.push(((await response.json()) as { rightId: string }).rightId);
    }
    for (const rightId of created.slice(0, 5))
      expect((await call('POST', `/id/users/dave/rights/${rightId}/activate`)).status).toBe(204);
    // Refused requests store nothing, so they must publish nothing.
    for (const rightId of created.slice(5, 10))
      expect((await call('POST', `/id/users/dave/rights/${rightId}/usage`)).status).toBe(409);
    expect(
      (await call('POST', '/id/users/dave/rights', { sku: 'nope', grantorId: 'A', timeInterval: interval })).status,
    ).toBe(400);
    await rights.kill();

    expect(await fx.system.pendingEvents('rights', 'rights')).toBeGreaterThan(0);

    await fx.system.rabbit.limitConnections(fx.system.vhost, null);
    await rights.start();
    const expected = new Set([
      ...created.map((id) => `right.created:${id}`),
      ...created.slice(0, 5).map((id) => `right.activated:${id}`),
    ]);
    const seen = () => new Set(fx.events('rights.events').messages.map((m) => `${m.routingKey}:${m.body.subject}`));
    await fx.events('rights.events').waitFor(() => [...expected].every((key) => seen().has(key)), 20_000);
    // Exactly these changes, each one event id (a de-duplicating consumer sees each once), nothing else.
    const ofDave = fx
      .events('rights.events')
      .messages.filter((m) => (m.body.data as { connectId?: string }).connectId === 'dave');
    expect(seen()).toEqual(expected);
    expect(new Set(ofDave.map((m) => m.body.id)).size).toBe(expected.size);
    // History (docs/api.md) holds the same changes, each once, and no refused one. The relay
    // records and publishes together: an event may be seen before its entry is stored.
    for (const [i, rightId] of created.entries()) {
      const entries = async () => {
        const response = await call('GET', `/id/users/dave/rights/${rightId}/history`);
        const { history } = (await response.json()) as { history: Array<{ type: string; generation: string }> };
        return history.map((entry) => `${entry.generation}:${entry.type}`);
      };
      await expect.poll(entries).toEqual(i < 5 ? ['1:right.created', '2:right.activated'] : ['1:right.created']);
    }
  });
});
