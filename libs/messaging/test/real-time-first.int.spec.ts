import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { type AmqpClient, REAL_TIME_QUIET_MS } from '../src/index';
import { testBroker, type TestBroker } from './test-broker';

let broker: TestBroker;
let client: AmqpClient;

const Work = z.object({ n: z.number().int(), clock: z.boolean() });
const LANE_WORK_MS = 150;

/** What the consumer saw: each lane message's start, with how many lane messages were in hand. */
const laneStarts: Array<{ at: number; inHand: number }> = [];
let laneInHand = 0;
let realInHand = 0;
let releaseReal: () => void = () => undefined;

beforeAll(async () => {
  broker = await testBroker('real-time-first');
  client = broker.client;
  await broker.consume('test.timed', {
    parse: (body) => Work.parse(body),
    prefetch: 16,
    lane: { holds: (work) => work.clock },
    handle: async (work) => {
      if (!work.clock) {
        realInHand++;
        await new Promise<void>((resolve) => (releaseReal = resolve));
        realInHand--;
        return;
      }
      laneStarts.push({ at: performance.now(), inHand: ++laneInHand });
      await sleep(LANE_WORK_MS);
      laneInHand--;
    },
  });
});
afterAll(() => broker?.close());

const send = (n: number, clock: boolean) =>
  client.publish('commands', 'test.timed', Buffer.from(JSON.stringify({ n, clock })), {
    persistent: true,
    contentType: 'application/json',
  });

describe('real time first (docs/decisions/0061)', () => {
  it('a clock lane takes one message at a time while real work is in hand and for the quiet period, then its share', async () => {
    await send(0, false);
    await vi.waitFor(() => expect(realInHand).toBe(1), { timeout: 10_000, interval: 20 });
    const lane = 40;
    for (let n = 1; n <= lane; n++) await send(n, true);
    // The lane goes on while the real message is in hand: one at a time, not stopped.
    await vi.waitFor(() => expect(laneStarts.length).toBeGreaterThanOrEqual(3), { timeout: 10_000, interval: 20 });
    releaseReal();
    const realEnded = performance.now();
    await vi.waitFor(() => expect(laneStarts).toHaveLength(lane), { timeout: 30_000, interval: 50 });

    // Real work in hand and for the quiet period after it: never two lane messages at once, yet
    // the lane was not stopped (it went on one at a time).
    const yielding = laneStarts.filter(({ at }) => at < realEnded + REAL_TIME_QUIET_MS - 50);
    expect(Math.max(...yielding.map(({ inHand }) => inHand))).toBe(1);
    // Once real time was quiet, the lane took its share of the consumer: several at once.
    const quiet = laneStarts.filter(({ at }) => at > realEnded + REAL_TIME_QUIET_MS + 50);
    expect(quiet.length).toBeGreaterThan(0);
    expect(Math.max(...quiet.map(({ inHand }) => inHand))).toBeGreaterThan(1);
  });
});
