import { defineConfig } from 'vitest/config';

/** The reliability test renews 1,000 subscriptions through crashes: it runs alone, after the rest. */
const ALONE = ['services/scheduler/test/renewal-reliability.e2e.spec.ts'];

export default defineConfig({
  test: {
    globalSetup: ['libs/testing/src/global-setup.ts'],
    env: { TZ: 'UTC' },
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 120_000,
    reporters: ['default', './vitest.summary-reporter.mjs'],
    projects: [
      {
        extends: true,
        test: {
          name: 'suite',
          include: ['libs/*/test/**/*.spec.ts', 'services/*/test/**/*.spec.ts', 'tools/*/test/**/*.spec.ts'],
          exclude: ALONE,
          // The tests wait on real servers and processes far more than they compute: three files
          // at a time (vitest's default on two cores is one) keep both cores busy.
          maxWorkers: 3,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: { name: 'alone', include: ALONE, maxWorkers: 1, sequence: { groupOrder: 1 } },
      },
    ],
  },
});
