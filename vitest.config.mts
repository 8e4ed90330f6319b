import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { defineConfig } from 'vitest/config';

/**
 * The reliability test renews 1,000 subscriptions on 24 s periods through crashes: most of
 * its 2.5 minutes is waiting for periods to pass. It starts first, in a worker of its own,
 * and the other files share the other three workers meanwhile.
 */
const FIRST = 'services/scheduler/test/renewal-reliability.e2e.spec.ts';

class ReliabilityFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    return [...sorted.filter((f) => f.moduleId.endsWith(FIRST)), ...sorted.filter((f) => !f.moduleId.endsWith(FIRST))];
  }
}

export default defineConfig({
  test: {
    globalSetup: ['libs/testing/src/global-setup.ts'],
    env: { TZ: 'UTC' },
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 120_000,
    reporters: ['default', './vitest.summary-reporter.mjs'],
    include: ['libs/*/test/**/*.spec.ts', 'services/*/test/**/*.spec.ts', 'tools/*/test/**/*.spec.ts'],
    // The tests wait on real servers far more than they compute: four files at a time (vitest's
    // default on two cores is one), one of them the reliability test, keep both cores busy.
    maxWorkers: 4,
    sequence: { sequencer: ReliabilityFirst },
  },
});
