import { CommandTypes, createCloudEvent, Exchanges, routingKeyOf, type RightsIssueData } from '@rs/contracts';
import { periodRightId } from '@rs/hashing';
import { clientsOf, rightsIssue, systemFixture, TestSystem } from '@rs/testing';
import mongoose from 'mongoose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// docs/decisions/0054: the commands of what lives on a test clock travel in a lane of their own,
// which the rights service takes from a few at a time; real time's commands never queue behind
// a rehearsal's.
const fx = systemFixture({
  name: 'clock_lane',
  backends: ['catalog', 'rights'],
  commands: true,
  seed: {
    clients: clientsOf({ 'grantor-a': 'A', 'grantor-b': 'B' }),
    users: ['rehearsed', 'real'],
    skus: { news: {} },
  },
});
beforeAll(fx.start);
afterAll(fx.stop);

const B = TestSystem.clientAuthorization('grantor-b');
const CLOCK_COMMANDS = 300;
const PER_COMMAND = 100;

/** Publishes a command as the platform's publisher routes it (`routingKeyOf`). */
function publish(data: RightsIssueData): void {
  const command = createCloudEvent<RightsIssueData>({
    source: '/test',
    type: CommandTypes.rightsIssue,
    subject: data.subscriptionId,
    data,
  });
  fx.commands.publish(
    Exchanges.commands,
    routingKeyOf(Exchanges.commands, command),
    Buffer.from(JSON.stringify(command)),
    {
      persistent: true,
    },
  );
}

describe('the clock lane of the rights commands', () => {
  it("when a rehearsal's commands wait by the hundred, then a real-time command is handled at once, beside them", async () => {
    for (let c = 0; c < CLOCK_COMMANDS; c++)
      publish({
        ...rightsIssue({
          subscriptionId: `rehearsal${c}`,
          connectId: 'rehearsed',
          periodStart: '2031-01-01T00:00:00Z',
          timeInterval: '2031-01-01T00:00:00Z/P1M',
          more: Array.from({ length: PER_COMMAND - 1 }, () => ({})),
        }),
        clockId: 'rehearsalclock',
      });
    await fx.commands.waitForConfirms();

    const periodStart = new Date(Date.now() - 60_000).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const real = rightsIssue({
      subscriptionId: 'realtime',
      connectId: 'real',
      grantorId: 'B',
      periodStart,
      timeInterval: `${periodStart}/P1M`,
    });
    const sent = Date.now();
    publish(real);
    await fx.commands.waitForConfirms();
    const rightId = periodRightId('realtime', periodStart, 0);
    await expect
      .poll(async () => (await fx.call('GET', `/id/users/real/rights/${rightId}`, B)).status, {
        timeout: 20_000,
        interval: 50,
      })
      .toBe(200);
    const tookMs = Date.now() - sent;

    // Most of the rehearsal was still to come: the real command did not wait for it (in one
    // queue, it came after all but the last few the consumer held).
    const db = await mongoose.createConnection(fx.system.mongoUrlFor('rights')).asPromise();
    try {
      const rehearsed = await db.collection('rights').countDocuments({ clockId: 'rehearsalclock' });
      expect(rehearsed, `the real right came after ${tookMs} ms`).toBeLessThan((CLOCK_COMMANDS * PER_COMMAND) / 2);
      // And the rehearsal goes on to its end: every one of its rights, once.
      await expect
        .poll(() => db.collection('rights').countDocuments({ clockId: 'rehearsalclock' }), {
          timeout: 120_000,
          interval: 1_000,
        })
        .toBe(CLOCK_COMMANDS * PER_COMMAND);
    } finally {
      await db.close();
    }
  }, 180_000);
});
