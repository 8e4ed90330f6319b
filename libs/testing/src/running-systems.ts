/** A test system as a failed test's report reads it. */
export interface RunningSystem {
  readonly vhost: string;
  /** What its services logged since `since` (ms since the epoch). */
  logsSince(since: number): string;
}

const KEY = Symbol.for('@rs/testing running systems');

/**
 * The test systems started in this process and not stopped. On `globalThis`: a test file loads
 * this package's build, the setup file (libs/testing/src/failure-logs.ts) its sources, and both
 * must see the same systems.
 */
export const runningSystems = ((globalThis as Record<symbol, unknown>)[KEY] ??=
  new Set<RunningSystem>()) as Set<RunningSystem>;
