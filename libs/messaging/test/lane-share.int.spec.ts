import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { testBroker, type TestBroker } from './test-broker';

let broker: TestBroker;

const Work = z.object({ n: z.number().int(), clock: z.boolean() });
/** How long a lane batch holds its messages: long enough that the lane's share fills while they wait. */
const BATCH_WORK_MS = 500;

/** The clock lane's batches as they started: their sizes, and how many lane messages were in hand. */
const laneBatches: Array<{ size: number; inHand: number }> = [];
let laneInHand = 0;

beforeAll(async () => {
  broker = await testBroker('lane-share');
  await broker.consume('test.batched', {
    parse: (body) => Work.parse(body),
    // Four batches of eight in flight for real time.
    prefetch: 32,
    lane: { holds: (work) => work.clock },
    handle: () => Promise.resolve(),
    batch: {
      max: 8,
      lingerMs: 20,
      handle: async (messages) => {
        if (!messages[0]!.message.clock) return;
        laneInHand += messages.length;
        laneBatches.push({ size: messages.length, inHand: laneInHand });
        await sleep(BATCH_WORK_MS);
        laneInHand -= messages.length;
      },
    },
  });
});
afterAll(() => broker?.close());

describe('a clock lane’s share (docs/decisions/0054, 0075)', () => {
  it('when its queue takes four batches at once for real time, then the lane, real time quiet, takes at most two batches of half the size', async () => {
    const lane = 64;
    // Sent together, so that a backlog waits on the lane even on a loaded machine (sent one
    // after another, they arrived slower than the lane cleared them, and no batch filled).
    await Promise.all(
      Array.from({ length: lane }, (_, n) =>
        broker.client.publish('commands', 'test.batched', Buffer.from(JSON.stringify({ n, clock: true })), {
          persistent: true,
          contentType: 'application/json',
        }),
      ),
    );
    await vi.waitFor(() => expect(laneBatches.reduce((sum, { size }) => sum + size, 0)).toBe(lane), {
      timeout: 30_000,
      interval: 50,
    });
    // Batches of at most 4, and at most 8 messages in hand (the queue's half would be 16).
    expect(Math.max(...laneBatches.map(({ size }) => size))).toBe(4);
    expect(Math.max(...laneBatches.map(({ inHand }) => inHand))).toBe(8);
  });
});
