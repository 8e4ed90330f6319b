import { setTimeout as sleep } from 'node:timers/promises';
import { EventCollector, idsBySubject, PeriodicSubscriptions, TestSystem } from '@rs/testing';
import mongoose from 'mongoose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Issues "Subscriptions and the scheduler" and 8, Reliability: many subscriptions on periods
// short enough that renewal and expiry are busy the whole time run for several periods, with
// two scheduler replicas, while services crash (one scheduler for good) and broker
// connections are cut; afterwards every period of every subscription has exactly its right,
// and every right exactly its events, and history exactly the changes they report.
const SUBSCRIPTIONS = 1_000;
const USERS = 10;
// A period whose rights would already have ended when its renewal runs is never issued
// (docs/api.md), which is right, and not what this test is about: the periods are longer than
// the worst renewal lag here: every period has a crash, a restart or a broker cut in it, each
// of which delays the period's rights by seconds (docs/performance.md has the lag measured).
// At 24 s, one batch of 40 renewals came 24 s late after the scheduler's restart under a slow
// machine's full suite (2026-12-03); at 30 s, in CI beside the cluster test and the consumption
// race, some of period 2 came over 30 s late (alone on an idle machine the latest right of a
// period comes 3–4 s after it began): 45 s.
const PERIOD_S = 45;
const PERIODS = 4;
/** The subscriptions: how many, of how many users, on which periods, created from how far ahead. */
const LOAD = {
  count: SUBSCRIPTIONS,
  users: USERS,
  periodS: PERIOD_S,
  periods: PERIODS,
  userPrefix: 'reliable',
  // 1,000 creations, at the suite's start beside an `npm install` and a cluster test: 20 s (then
  // counted from before the seed) was not always enough in CI, and beside the consumption race
  // (which may start once the package test is done) they took over 45 s in a local run.
  leadMs: 75_000,
  creators: 16,
};

let system: TestSystem;
let rightEvents: EventCollector;
let subscriptionEvents: EventCollector;
let load: PeriodicSubscriptions;

beforeAll(async () => {
  system = await TestSystem.start({
    processes: true,
    name: 'renewal_reliability',
    backends: ['catalog', 'rights', 'subscriptions', 'scheduler'],
    replicas: { scheduler: 2 },
    env: { LOG_LEVEL: 'warn', RATE_LIMIT_PER_SECOND: '0', SCHEDULER_TICK_MS: '500' },
  });
  rightEvents = await EventCollector.start(system.amqpUrl, 'rights.events');
  subscriptionEvents = await EventCollector.start(system.amqpUrl, 'subscriptions.events');
  // Starts spread over one period, from a second well after the last create.
  load = await PeriodicSubscriptions.seeded(system, LOAD);
}, 120_000);
afterAll(async () => {
  await rightEvents?.close();
  await subscriptionEvents?.close();
  await system?.stop();
});

describe('renewal through crashes and broker outages', () => {
  it(`when ${SUBSCRIPTIONS} subscriptions on ${PERIOD_S} s periods run for ${PERIODS} periods while services crash and broker connections drop, then every period has exactly its right, every right its events, and history exactly those changes`, async () => {
    await load.create();
    const base = load.base;

    // Faults while periods are being renewed and rights expired.
    const at = async (ms: number) => sleep(Math.max(0, ms - Date.now())); // the wait is the test's subject: the faults come at moments of the periods
    await at(base + PERIOD_S * 500);
    await system.service('subscriptions').kill();
    await sleep(1_000); // the wait is the test's subject: the service is down for a second
    await system.service('subscriptions').start();
    expect(await system.killBrokerConnection('rights')).toBeGreaterThan(0);
    expect(await system.killBrokerConnection('scheduler')).toBeGreaterThan(0);
    await at(base + PERIOD_S * 1_500);
    await system.service('rights').kill();
    await sleep(1_000); // the wait is the test's subject: the service is down for a second
    await system.service('rights').start();
    expect(await system.killBrokerConnection('subscriptions')).toBeGreaterThan(0);
    await system.service('scheduler#2').kill(); // for good: the other takes over its partitions
    await at(base + PERIOD_S * 2_500);
    await system.service('scheduler').kill();
    await system.service('scheduler').start();

    // Everything has ended: every subscription expired, every right issued and expired.
    const last = base + (PERIOD_S - 1 + PERIOD_S * PERIODS) * 1000;
    await at(last);
    await subscriptionEvents.waitFor(
      () => idsBySubject(subscriptionEvents.messages, 'subscription.expired').size >= SUBSCRIPTIONS,
      300_000,
    );
    // Failing, it says how late each period's rights came.
    await load.waitReporting(
      rightEvents,
      () => idsBySubject(rightEvents.messages, 'right.expired').size >= SUBSCRIPTIONS * PERIODS,
      300_000,
    );
    // Every command sent before the marker has been handled: a duplicate would be in by now.
    const marker = await load.passed(rightEvents);

    // What users see: every right of every subscription, through the gateway.
    const listed = await load.listedRights();
    expect(listed).toHaveLength(SUBSCRIPTIONS * PERIODS);
    for (const right of listed) {
      expect(right.state).toBe('EXPIRED');
      const [start, end] = right.timeInterval.split('/').map((t) => Date.parse(t));
      expect(end! - start!).toBe(PERIOD_S * 1000);
    }
    const periodsBySubscription = load.periodsBySubscription(listed);
    for (const subscriptionId of load.indexOf.keys())
      expect(periodsBySubscription.get(subscriptionId), subscriptionId).toEqual(
        Array.from({ length: PERIODS }, (_, k) => k),
      );

    // Every right's events arrived, one event (however often delivered) per change, none for anything else.
    const rightIds = new Set([...listed.map((right) => right.rightId), marker]);
    for (const type of ['right.created', 'right.expired']) {
      const events = idsBySubject(rightEvents.messages, type);
      expect(new Set(events.keys()), type).toEqual(rightIds);
      for (const [rightId, ids] of events) expect(ids.size, `${type} of ${rightId}`).toBe(1);
    }
    const expired = idsBySubject(subscriptionEvents.messages, 'subscription.expired');
    expect(new Set(expired.keys())).toEqual(new Set(load.indexOf.keys()));
    for (const ids of expired.values()) expect(ids.size).toBe(1);

    // History (docs/api.md) holds exactly the changes the events reported: a record per event id, none else.
    for (const [service, collector] of [
      ['rights', rightEvents],
      ['subscriptions', subscriptionEvents],
    ] as const) {
      const db = mongoose.createConnection(system.mongoUrlFor(service));
      await db.asPromise();
      const records = await db
        .collection(`${service === 'rights' ? 'right' : 'subscription'}_history`)
        .find({}, { projection: { _id: 1 } })
        .toArray();
      await db.close();
      const eventIds = new Set(collector.messages.map((message) => message.body.id));
      expect(new Set(records.map((record) => String(record._id))), service).toEqual(eventIds);
    }
  }, 600_000);
});
