import { createLogger } from '@rs/logging';
import { testDatabase, WebhookReceiver, type TestDatabase } from '@rs/testing';
import { manualClock } from '@rs/time';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Dispatcher, type DispatcherOptions } from '../src/app/dispatcher';
import { Sender } from '../src/net/sender';
import { DeliveryStore, DeliverySweepCursor, slotOf, type Delivery } from '../src/store/delivery-store';
import type { Endpoint } from '../src/store/endpoint-store';

// The middle tier: the dispatcher with its real delivery store on the real database, sending
// to a real receiver, on a clock the test moves. Its sweeper never runs here, so a retry
// made at all is made by the process that wrote the attempt's outcome.

const clock = manualClock('2026-12-01T00:00:00Z');
/** A database that may answer slowly: the clock moves on while an attempt's outcome is written. */
class Outcomes extends DeliveryStore {
  slowByMs = 0;
  override async recordAttempt(...args: Parameters<DeliveryStore['recordAttempt']>) {
    clock.advance(this.slowByMs);
    return super.recordAttempt(...args);
  }
}

/** Fails the first attempt of every event, takes the next. */
const receiver: WebhookReceiver = new WebhookReceiver((request) => {
  const id = request.headers['webhook-id'];
  const attempts = receiver.received.filter((earlier) => earlier.headers['webhook-id'] === id).length;
  return { status: attempts === 1 ? 500 : 204 };
});
const endpoint: Endpoint = {
  endpointId: 'E1',
  grantorId: null,
  url: '',
  events: ['*'],
  description: null,
  clocks: false,
  secrets: [],
  createdAt: clock(),
  generation: 1,
};
const secret = `whsec_${Buffer.alloc(24, 7).toString('base64')}`;
let database: TestDatabase;
let store: Outcomes;
let sender: Sender;
let dispatcher: Dispatcher;

/** A dispatcher on the test's store and clock, sending each endpoint's deliveries to `urlOf` it. */
function dispatcherOf(
  urlOf: (endpointId: string) => string,
  liveIds: string[],
  options: Partial<DispatcherOptions> = {},
) {
  return new Dispatcher(
    {
      store,
      cursor: new DeliverySweepCursor(database.db.db!),
      endpoints: {
        withSecrets: async (endpointId) => ({
          endpoint: { ...endpoint, endpointId, url: urlOf(endpointId) },
          secrets: [secret],
        }),
        liveIds: async () => liveIds,
        // One grantor's endpoints, all of them.
        grantorOf: async () => 'G',
      },
      sender,
      logger: createLogger('webhooks-test', 'silent'),
      clock,
    },
    {
      perEndpoint: () => 2,
      waitingLimit: 1_000,
      timeoutMs: 2_000,
      schedule: [1_000, 1_000],
      sweepEveryMs: 3_600_000,
      ...options,
    },
  );
}

/** A new delivery of an event to an endpoint, as the event consumer makes it. */
const pendingDelivery = (deliveryId: string, endpointId = endpoint.endpointId): Delivery => ({
  deliveryId,
  endpointId,
  eventId: `event-${deliveryId}`,
  type: 'right.created',
  body: '{}',
  status: 'pending',
  attempts: 0,
  lastStatus: null,
  nextAttemptAt: null,
  createdAt: clock(),
  generation: 0,
});

beforeAll(async () => {
  await receiver.start();
  endpoint.url = receiver.url;
  database = await testDatabase('webhook_dispatcher');
  store = new Outcomes(database.db.db!);
  await store.ensureIndexes();
  sender = new Sender({ timeoutMs: 2_000, allowPrivate: true, maxSockets: 2 });
  dispatcher = dispatcherOf(() => receiver.url, [endpoint.endpointId]);
});
afterAll(async () => {
  await dispatcher?.stop();
  sender?.close();
  await receiver.stop();
  await database?.drop();
});

/** A delivery stored leased to this process, as the event consumer stores it, and handed to the dispatcher. */
async function deliver(deliveryId: string, to = dispatcher, endpointId = endpoint.endpointId): Promise<void> {
  const delivery = pendingDelivery(deliveryId, endpointId);
  const leasedUntil = to.ownLeaseUntil(clock());
  await store.insertMany([delivery], leasedUntil);
  to.enqueue([delivery], leasedUntil);
}
const idsReceived = () => receiver.received.map((request) => String(request.headers['webhook-id']));
const stateOf = async (deliveryId: string) => {
  const found = await store.find(endpoint.endpointId, deliveryId);
  return found && { status: found.status, attempts: found.attempts };
};

describe('the outcome of a failed attempt', () => {
  it('when it is written in time, then the retry is left to the sweeper at its second', async () => {
    store.slowByMs = 0;
    await deliver('D1');
    await expect.poll(() => stateOf('D1')).toEqual({ status: 'pending', attempts: 1 });
    await dispatcher.settled(); // a retry this process took would be under way, and awaited, here
    expect(idsReceived()).toEqual(['event-D1']);
  });

  it('when it lands after a sweeper may have passed its retry’s second, then this process makes the retry', async () => {
    store.slowByMs = 10_000;
    await deliver('D2');
    await expect.poll(() => stateOf('D2')).toEqual({ status: 'delivered', attempts: 2 });
    expect(idsReceived().filter((id) => id === 'event-D2')).toHaveLength(2);
  });
});

describe('memory held by waiting deliveries (docs/operations.md)', () => {
  it('when endpoints are slow, then no more deliveries wait in memory than the limit across all lanes; the rest are put off in the store', async () => {
    const hanging = new WebhookReceiver(() => 'hang');
    await hanging.start();
    const bounded = dispatcherOf(() => hanging.url, ['S1', 'S2'], {
      perEndpoint: () => 1,
      waitingLimit: 2,
      schedule: [1_000],
    });
    try {
      store.slowByMs = 0;
      const ids = ['W1', 'W2', 'W3', 'W4', 'W5', 'W6'];
      for (const [i, deliveryId] of ids.entries()) await deliver(deliveryId, bounded, i % 2 ? 'S2' : 'S1');
      // One attempt under way per endpoint (W1, W2), two waiting in all (W3, W4), the rest put off.
      await expect.poll(() => hanging.received.length).toBe(2);
      await expect
        .poll(async () =>
          (await store.pendingIn(slotOf(new Date(clock().getTime() + 5_000)))).map((d) => d.deliveryId).sort(),
        )
        .toEqual(['W5', 'W6']);
    } finally {
      await hanging.stop();
      await bounded.stop();
    }
  });
});

describe('a delivery put off while its lane is full (docs/performance.md, 2026-11-29)', () => {
  it('when a delivery stored leased to this process is put off, then whoever finds it as its put-off ends may attempt it at once', async () => {
    const hanging = new WebhookReceiver(() => 'hang');
    const taking = new WebhookReceiver(() => ({ status: 204 }));
    await Promise.all([hanging.start(), taking.start()]);
    const full = dispatcherOf(() => hanging.url, ['P'], { perEndpoint: () => 1, waitingLimit: 1 });
    const finder = dispatcherOf(() => taking.url, ['P']);
    try {
      store.slowByMs = 0;
      // P1 under way (its endpoint hangs), P2 waiting, P3 put off: its lane is full.
      for (const deliveryId of ['P1', 'P2', 'P3']) await deliver(deliveryId, full, 'P');
      const putOffTo = slotOf(new Date(clock().getTime() + 5_000));
      const putOff = async () => (await store.pendingIn(putOffTo)).filter((d) => d.endpointId === 'P');
      await expect.poll(async () => (await putOff()).map((d) => d.deliveryId)).toEqual(['P3']);
      // Its put-off ends; a sweeper (this process's or another's) finds it in its second.
      clock.advance(5_000);
      finder.enqueue(await putOff());
      await expect.poll(() => store.find('P', 'P3')).toMatchObject({ status: 'delivered', attempts: 1 });
    } finally {
      await Promise.all([full.stop(), finder.stop()]);
      await Promise.all([hanging.stop(), taking.stop()]);
    }
  });
});

describe('a write that lands in a second already swept', () => {
  it('when a delivery is stored into a second the sweeper has passed, then its second look finds it and delivers it', async () => {
    const taking = new WebhookReceiver(() => ({ status: 204 }));
    await taking.start();
    const cursor = new DeliverySweepCursor(database.db.db!);
    const late = dispatcherOf(() => taking.url, ['L'], { schedule: [1_000], sweepEveryMs: 50 });
    try {
      late.start();
      const passed = Math.floor(clock().getTime() / 1000) - 5;
      await expect.poll(async () => (await cursor.read()) ?? 0).toBeGreaterThan(passed);
      // As a put-off that took a slow database longer than the sweeper's lag would land.
      const delivery = pendingDelivery('L1', 'L');
      await store.insertMany([delivery], new Date(passed * 1000));
      clock.advance(40_000);
      await expect.poll(() => store.find('L', 'L1')).toMatchObject({ status: 'delivered', attempts: 1 });
      // (The other tests' deliveries pending in the swept seconds go to this receiver too.)
      expect(taking.received.filter((request) => request.headers['webhook-id'] === 'event-L1')).toHaveLength(1);
    } finally {
      await late.stop();
      await taking.stop();
    }
  });
});

describe('final outcomes inserted beside their deliveries, and holds (docs/decisions/0064)', () => {
  const stored = () => database.db.db!.collection<{ _id: string; status: string; attempts: number }>('deliveries');
  let taking: WebhookReceiver;
  beforeAll(async () => {
    taking = new WebhookReceiver(() => ({ status: 204 }));
    await taking.start();
  });
  afterAll(() => taking.stop());
  const sentTimes = (eventId: string) => taking.received.filter((r) => r.headers['webhook-id'] === eventId).length;
  const pendingOf = async (slot: string, endpointId: string) =>
    (await store.pendingIn(slot)).filter((d) => d.endpointId === endpointId).map((d) => d.deliveryId);

  it('when an attempt delivers, then the delivery reads delivered at once and its hold’s end finds nothing to attempt', async () => {
    store.slowByMs = 0;
    const delivering = dispatcherOf(() => taking.url, ['F']);
    try {
      const heldUntil = delivering.ownLeaseUntil(clock());
      await deliver('F1', delivering, 'F');
      await expect.poll(() => store.find('F', 'F1')).toMatchObject({ status: 'delivered', attempts: 1 });
      expect((await store.page('F', 10, null)).items).toMatchObject([{ deliveryId: 'F1', status: 'delivered' }]);
      expect(await store.backlog(['F'])).toEqual(new Map([['F', 0]]));

      clock.advance(heldUntil.getTime() - clock().getTime() + 1_000);
      expect(await pendingOf(slotOf(heldUntil), 'F')).toEqual([]);
      expect(await store.find('F', 'F1')).toMatchObject({ status: 'delivered', attempts: 1 });
      expect(sentTimes('event-F1')).toBe(1);
    } finally {
      await delivering.stop();
    }
  });

  it('when the process that stored a delivery dies before attempting it, then its hold’s end puts it where the sweeper finds it, and it is delivered', async () => {
    store.slowByMs = 0;
    const heldUntil = new Date(clock().getTime() + 25_000);
    await store.insertMany([pendingDelivery('K1', 'K'), pendingDelivery('K2', 'K')], heldUntil);
    // K1's attempt was made and recorded; K2's process died first.
    await store.recordAttempt(
      pendingDelivery('K1', 'K'),
      { status: 'delivered', lastStatus: 204, nextAttemptAt: null },
      heldUntil,
    );
    expect(await store.backlog(['K'])).toEqual(new Map([['K', 1]]));

    clock.advance(26_000);
    const found = await pendingOf(slotOf(heldUntil), 'K');
    expect(found).toEqual(['K2']);
    // A second look at the slot finds it again while it waits (the hold is gone; it lies in the slot).
    expect(await pendingOf(slotOf(heldUntil), 'K')).toEqual(['K2']);
    const finder = dispatcherOf(() => taking.url, ['K']);
    try {
      finder.enqueue(await store.pendingIn(slotOf(heldUntil)));
      await expect.poll(() => store.find('K', 'K2')).toMatchObject({ status: 'delivered', attempts: 1 });
      expect(await store.find('K', 'K1')).toMatchObject({ status: 'delivered', attempts: 1 });
      expect(sentTimes('event-K2')).toBe(1);
      expect(sentTimes('event-K1')).toBe(0);
    } finally {
      await finder.stop();
    }
  });

  it('when the process dies between storing deliveries and their hold, then the event handled again holds them, and its hold’s end finds them', async () => {
    const firstLease = new Date(clock().getTime() + 25_000);
    await store.insertMany([pendingDelivery('J1', 'J')], firstLease);
    // The crash: as if the hold had never been stored.
    await database.db.db!.collection('delivery_holds').deleteMany({ deliveryIds: 'J1' });

    clock.advance(1_000); // the event comes again, to another process
    const secondLease = new Date(clock().getTime() + 25_000);
    expect(await store.insertMany([pendingDelivery('J1', 'J')], secondLease)).toEqual(new Set());
    clock.advance(26_000);
    expect(await pendingOf(slotOf(secondLease), 'J')).toEqual(['J1']);
  });

  it('when an outcome is written after its attempt’s hold ended, then a claim by another attempt finds the attempt made and sends nothing', async () => {
    store.slowByMs = 0;
    const delivery = pendingDelivery('G1', 'G');
    const heldUntil = new Date(clock().getTime() + 1_000);
    await store.insertMany([delivery], heldUntil);
    clock.advance(2_000); // the hold ended; the outcome had not landed yet
    await store.recordAttempt(delivery, { status: 'delivered', lastStatus: 204, nextAttemptAt: null }, heldUntil);

    expect(await store.claim(delivery, clock(), new Date(clock().getTime() + 5_000))).toBeNull();
    expect(await stored().findOne({ _id: 'G1' })).toMatchObject({ status: 'delivered', attempts: 1 });
  });

  it('when a delivered delivery is retried by hand, then the retry counts as its next attempt', async () => {
    store.slowByMs = 0;
    const retrying = dispatcherOf(() => taking.url, ['H']);
    try {
      await deliver('H1', retrying, 'H');
      await expect.poll(() => store.find('H', 'H1')).toMatchObject({ status: 'delivered', attempts: 1 });

      const again = await store.retryNow('H', 'H1', clock());
      expect(again).toMatchObject({ status: 'pending', attempts: 1 });
      retrying.enqueue([again!]);
      await expect.poll(() => store.find('H', 'H1')).toMatchObject({ status: 'delivered', attempts: 2 });
      expect(sentTimes('event-H1')).toBe(2);
    } finally {
      await retrying.stop();
    }
  });
});
