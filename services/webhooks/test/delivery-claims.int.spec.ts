import { replicaConnections } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeliveryStore, type Delivery } from '../src/store/delivery-store';

// Every replica's sweeper reads the same seconds, so the replicas find the same due deliveries
// and each tries to claim them. A claim is a compare-and-set on what its sweeper read
// (docs/decisions/0046): however many replicas claim one delivery from one read, exactly one
// attempts it, and no write read before a claim landed undoes it. Each store here has a
// connection of its own, as replicas do.

const CLAIMERS = 12;
const ROUNDS = 5;
let replicas: Awaited<ReturnType<typeof replicaConnections>>;
let stores: DeliveryStore[];

beforeAll(async () => {
  replicas = await replicaConnections('delivery_claims');
  stores = replicas.connections.map((connection) => new DeliveryStore(connection.db!));
  await stores[0]!.ensureIndexes();
});
afterAll(() => replicas?.drop());

const now = new Date('2026-12-03T05:00:00Z');
const later = (ms: number) => new Date(now.getTime() + ms);

/** A delivery whose first attempt's lease ended a minute ago (its process died), as a sweeper reads it. */
async function dueDelivery(deliveryId: string): Promise<Delivery> {
  const delivery: Delivery = {
    deliveryId,
    endpointId: 'E',
    eventId: `event-${deliveryId}`,
    type: 'right.created',
    body: '{}',
    status: 'pending',
    attempts: 0,
    lastStatus: null,
    nextAttemptAt: null,
    createdAt: later(-120_000),
    generation: 0,
  };
  await stores[0]!.insertMany([delivery], later(-60_000));
  return (await stores[0]!.find('E', deliveryId))!;
}

const leaseOf = async (deliveryId: string) =>
  (await replicas.connections[0]!.db!.collection('deliveries').findOne({ _id: deliveryId as never }))?.leaseUntil;

describe('a due delivery found by every replica', () => {
  it('when replicas claim it at once from the same read, then exactly one is given it', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const read = await dueDelivery(`claimed-${round}`);
      const claims = await Promise.all(
        Array.from({ length: CLAIMERS }, (_, claimer) =>
          stores[claimer % stores.length]!.claim(read, now, later(30_000 + claimer)),
        ),
      );
      const winners = claims.flatMap((claim, claimer) => (claim ? [claimer] : []));
      expect(winners, `round ${round}`).toHaveLength(1);
      expect(await leaseOf(read.deliveryId)).toEqual(later(30_000 + winners[0]!));
    }
  });

  it('when one replica puts it off while others claim it, then a claim that was given it keeps its lease', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const read = await dueDelivery(`put-off-${round}`);
      const [claims] = await Promise.all([
        Promise.all(
          Array.from({ length: CLAIMERS - 1 }, (_, claimer) =>
            stores[(claimer + 1) % stores.length]!.claim(read, now, later(30_000 + claimer)),
          ),
        ),
        stores[0]!.putOff(read, { at: later(5_000), now }),
      ]);
      const winners = claims.flatMap((claim, claimer) => (claim ? [claimer] : []));
      expect(winners.length, `round ${round}`).toBeLessThanOrEqual(1);
      if (winners.length === 1) expect(await leaseOf(read.deliveryId)).toEqual(later(30_000 + winners[0]!));
    }
  });
});
