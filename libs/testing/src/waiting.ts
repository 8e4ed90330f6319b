/**
 * How a test waits with `vi.waitFor` for what the system does in the background (an event
 * relayed and consumed, a history entry, a log line): up to 20 s, as `expect.poll` does
 * (vitest.config.mts). `vi.waitFor`'s own default, 1 s, is shorter than a relay's poll and a
 * consumer's batch on a loaded machine (CI failed on it).
 */
export const EVENTUALLY = { timeout: 20_000, interval: 100 } as const;
