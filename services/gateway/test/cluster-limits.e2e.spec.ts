import { TestSystem, clientsOf, systemFixture } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// docs/operations.md: a client's rate limit holds across the gateway's replicas, not per replica.
const fx = systemFixture({
  processes: true,
  name: 'cluster_limits',
  // The gateway is ready once its entitlement projection is loaded from the rights service.
  backends: ['rights'],
  replicas: { gateway: 2 },
  env: { RATE_LIMIT_PER_SECOND: '1', RATE_LIMIT_BURST: '10' },
  seed: { clients: clientsOf({ 'grantor-a': 'A', 'grantor-b': 'B' }), users: ['alice'] },
});
beforeAll(fx.start);
afterAll(fx.stop);

const get = (gateway: string, client: string) =>
  fetch(`${fx.system.service(gateway).url}/id/users/alice`, {
    headers: { authorization: TestSystem.clientAuthorization(client) },
  });

describe('rate limits across replicas (docs/operations.md)', () => {
  it('when a client spreads its requests over two gateway replicas, then together they let through its burst, not twice it', async () => {
    // Each replica counts the other within a membership renewal (a second): then it holds half
    // of the burst, which a request shows in what remains (4 of 5, not 9 of 10). Asked of both
    // replicas, a second apart: a whole bucket refills what each ask takes, so only a half one
    // shows fewer than 5.
    for (const gateway of ['gateway', 'gateway#2'])
      await expect
        .poll(
          async () => Number(/r=(\d+)/.exec((await get(gateway, 'grantor-b')).headers.get('ratelimit') ?? '')?.[1]),
          { interval: 1_100 },
        )
        .toBeLessThan(5);
    const statuses: number[] = [];
    for (let i = 0; i < 20; i++) statuses.push((await get(i % 2 ? 'gateway' : 'gateway#2', 'grantor-a')).status);
    const passed = statuses.filter((status) => status === 200).length;
    // 10 in all (5 a replica), and a refill of at most 1 a second while the 20 are sent.
    expect(passed).toBeGreaterThanOrEqual(10);
    expect(passed).toBeLessThanOrEqual(11);
    expect(statuses.filter((status) => status !== 200).every((status) => status === 429)).toBe(true);
  });
});
