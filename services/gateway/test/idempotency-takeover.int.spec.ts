import { replicaConnections } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IdempotencyStore } from '../src/store/idempotency-store';

// docs/api.md "Idempotency-Key": a retry whose earlier attempt was released (or crashed) takes
// the key over and runs; of retries that arrive together at several gateway replicas, exactly
// one runs and the others are told the key is in use. Each store here has a connection of its
// own, as replicas do.

const RETRIES = 12;
const TIMES = { leaseMs: 60_000, ttlS: 86_400 };
let replicas: Awaited<ReturnType<typeof replicaConnections>>;

beforeAll(async () => {
  replicas = await replicaConnections('idempotency_takeover');
});
afterAll(() => replicas?.drop());

describe('a released key taken over by retries at several replicas', () => {
  it('when retries of a released attempt arrive together at several replicas, then exactly one runs, as the same attempt', async () => {
    const stores = replicas.connections.map((connection) => new IdempotencyStore(connection, () => new Date()));
    for (let round = 0; round < 5; round++) {
      const key = `key-${round}`;
      const first = await stores[0]!.begin('client-a', key, 'POST /usage', TIMES);
      expect(first.kind).toBe('run');
      await stores[0]!.release('client-a', key, 'POST /usage');
      const retries = await Promise.all(
        Array.from({ length: RETRIES }, (_, retry) =>
          stores[retry % stores.length]!.begin('client-a', key, 'POST /usage', TIMES),
        ),
      );
      const ran = retries.filter((begun) => begun.kind === 'run');
      expect(ran, `round ${round}`).toHaveLength(1);
      expect(ran[0]).toEqual(first);
      expect(retries.filter((begun) => begun.kind !== 'run').map((begun) => begun.kind)).toEqual(
        Array(RETRIES - 1).fill('running'),
      );
    }
  });
});
