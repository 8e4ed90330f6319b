import { replicaConnections } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EndpointStore, type StoredSecret } from '../src/store/endpoint-store';

// A rotation stores an endpoint's secrets by compare-and-set on the generation it read
// (docs/decisions/0046): however many replicas race from one read, exactly one is told it
// stored, and its secrets are the ones kept. Each store here has a connection of its own, as
// replicas do.

const WRITERS = 12;
let replicas: Awaited<ReturnType<typeof replicaConnections>>;

beforeAll(async () => {
  replicas = await replicaConnections('endpoint_store');
});
afterAll(() => replicas?.drop());

const secretOf = (writer: number): StoredSecret => ({
  sealed: { iv: 'iv', tag: 'tag', data: `secret of writer ${writer}` },
  createdAt: new Date(),
  retiresAt: null,
});

describe('secrets replaced by replicas at once', () => {
  it('when replicas replace the secrets of one endpoint from the same generation, then exactly one is told it stored, and its secrets are kept', async () => {
    const stores = replicas.connections.map((connection) => new EndpointStore(connection.db!));
    for (let round = 0; round < 5; round++) {
      const endpointId = `endpoint-${round}`;
      await stores[0]!.insert({
        endpointId,
        grantorId: 'A',
        url: 'https://receiver.example/hook',
        events: ['right.created'],
        description: null,
        clocks: false,
        secrets: [secretOf(-1)],
        createdAt: new Date(),
        generation: 1,
      });
      const read = (await stores[0]!.find(endpointId))!;
      const outcomes = await Promise.all(
        Array.from({ length: WRITERS }, (_, writer) =>
          stores[writer % stores.length]!.replaceSecrets(read, [...read.secrets, secretOf(writer)]),
        ),
      );
      const winners = outcomes.flatMap((stored, writer) => (stored ? [writer] : []));
      expect(winners, `round ${round}`).toHaveLength(1);
      const kept = (await stores[1]!.find(endpointId))!;
      expect(kept.generation).toBe(2);
      expect(kept.secrets.map((secret) => secret.sealed.data)).toEqual([
        'secret of writer -1',
        `secret of writer ${winners[0]}`,
      ]);
    }
  });
});
