import { replicaConnections } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compareAndSetWrite, isLostCompareAndSet } from '../src/index';

// docs/decisions/0046: a compare-and-set on `generation` has one winner however many writers
// race, as on MongoDB, also on the local FerretDB (its PostgreSQL guard). The writers here use
// connections of their own and no in-process lock: as replicas of a service do.

const WRITERS = 12;
let replicas: Awaited<ReturnType<typeof replicaConnections>>;

beforeAll(async () => {
  replicas = await replicaConnections('compare_and_set');
});
afterAll(() => replicas?.drop());

describe('compare-and-set across connections (docs/decisions/0046)', () => {
  it('when writers on several connections race to move one document from a generation to the next, then exactly one is told it won, and its change is the one stored', async () => {
    const documents = () => replicas.connections[0]!.db!.collection('counters');
    for (let round = 0; round < 10; round++) {
      const id = `counter-${round}`;
      await documents().insertOne({ _id: id, generation: 1, writer: null, outbox: [], outboxPending: false } as never);
      const outcomes = await Promise.all(
        Array.from({ length: WRITERS }, async (_, writer) => {
          const { filter, update } = compareAndSetWrite(
            { id, generation: 1, set: { generation: 2, writer }, outbox: [] },
            {},
            true,
          );
          try {
            const result = await replicas.connections[writer % replicas.connections.length]!.db!.collection(
              'counters',
            ).updateOne(filter, update);
            return result.modifiedCount === 1 ? writer : null;
          } catch (error) {
            if (isLostCompareAndSet(error)) return null;
            throw error;
          }
        }),
      );
      const winners = outcomes.filter((writer) => writer !== null);
      expect(winners, `round ${round}`).toHaveLength(1);
      expect(await documents().findOne({ _id: id } as never)).toMatchObject({ generation: 2, writer: winners[0] });
    }
  });
});
