import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { EventCollector, idsBySubject, PeriodicSubscriptions, RabbitCluster, TestSystem } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The platform on a three-node RabbitMQ cluster
// (deploy/local/rabbit-cluster.sh) with AMQP_URL naming the three nodes, the first first, so
// every service is connected to node 1 when it stops in the middle of renewals: they move to
// the others, the quorum queues keep their messages on the two nodes left, and afterwards
// every period of every subscription has exactly its right and every right its event.
const SUBSCRIPTIONS = 300;
// As the reliability tests': longer than the worst renewal lag with the suite running beside it.
// At 24 s, period 2 of some subscriptions was renewed 27 s after it fell due, the node down and
// the suite beside it (2026-12-03), and so never issued (docs/api.md): 30 s.
const PERIOD_S = 30;
const PERIODS = 3;
/** The subscriptions: how many, of how many users, on which periods, created from how far ahead. */
const LOAD = {
  count: SUBSCRIPTIONS,
  users: 10,
  periodS: PERIOD_S,
  periods: PERIODS,
  userPrefix: 'clustered',
  // 300 creations through the gateway, at the suite's start beside the reliability test's 1,000:
  // 25 s was not always enough in CI.
  leadMs: 45_000,
  creators: 8,
};

let system: TestSystem;
let rightEvents: EventCollector;
let load: PeriodicSubscriptions;

describe.runIf(existsSync('/usr/lib/rabbitmq/bin/rabbitmq-server'))('a three-node RabbitMQ cluster', () => {
  beforeAll(async () => {
    await RabbitCluster.start();
    system = await TestSystem.start({
      name: 'rabbit_cluster',
      backends: ['catalog', 'rights', 'subscriptions', 'scheduler'],
      broker: { amqpUrl: RabbitCluster.amqpUrl, managementUrl: RabbitCluster.managementUrl },
      env: { LOG_LEVEL: 'warn', RATE_LIMIT_PER_SECOND: '0', SCHEDULER_TICK_MS: '500' },
    });
    // On node 2, which stays up.
    rightEvents = await EventCollector.start(system.amqpUrl.split(',')[1]!, 'rights.events');
    load = await PeriodicSubscriptions.seeded(system, LOAD);
  }, 240_000);
  afterAll(async () => {
    await rightEvents?.close();
    await system?.stop();
    await RabbitCluster.stop();
  }, 120_000);

  it(`when node 1 stops while ${SUBSCRIPTIONS} subscriptions renew and comes back a period later, then every period has exactly its right and every right one right.created`, async () => {
    await load.create();
    const issued = () => idsBySubject(rightEvents.messages, 'right.created').size;
    const at = (ms: number) => sleep(Math.max(0, ms - Date.now())); // the wait is the test's subject: the node stops and returns at moments of the periods
    await at(load.base + PERIOD_S * 1_200);
    const issuedBefore = issued();
    await RabbitCluster.stopNode(1);
    // Period 2 falls due while the node is down (at 2 × PERIOD_S): it stays down until half of that
    // period's rights are out, at least 0.2 and at most half a period after, so that renewal is
    // seen going on without it however busy the machine is, and period 3 still renews after its
    // return.
    await at(load.base + PERIOD_S * 2_200);
    // Not there by then: the assertion below says how many were.
    await rightEvents
      .waitFor(
        () => issued() - issuedBefore > SUBSCRIPTIONS / 2,
        Math.max(0, load.base + PERIOD_S * 2_500 - Date.now()),
      )
      .catch(() => undefined);
    const issuedWhileDown = issued() - issuedBefore;
    await RabbitCluster.startNode(1);

    const expected = SUBSCRIPTIONS * PERIODS;
    await load.waitReporting(rightEvents, () => issued() >= expected, 120_000);
    // Every command sent before the marker has been handled: a duplicate would be in by now.
    const marker = await load.passed(rightEvents);
    // Renewal went on while the node was down (a period's worth is SUBSCRIPTIONS), not only after.
    expect(issuedWhileDown).toBeGreaterThan(SUBSCRIPTIONS / 2);

    const listed = await load.listedRights();
    expect(listed).toHaveLength(expected);
    const periods = load.periodsBySubscription(listed);
    for (const subscriptionId of load.indexOf.keys())
      expect(periods.get(subscriptionId), subscriptionId).toEqual([0, 1, 2]);
    const created = idsBySubject(rightEvents.messages, 'right.created');
    expect(new Set(created.keys())).toEqual(new Set([...listed.map((right) => right.rightId), marker]));
    // One event per right, however often the broker delivered it.
    expect([...created.values()].filter((ids) => ids.size !== 1)).toEqual([]);
  }, 360_000);
});
