import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['libs/*/test/**/*.spec.ts', 'services/*/test/**/*.spec.ts'],
    globalSetup: ['libs/testing/src/global-setup.ts'],
    env: { TZ: 'UTC' },
    pool: 'forks',
    // The tests wait on real servers and processes far more than they compute: three files
    // at a time (vitest's default on two cores is one) keep both cores busy.
    maxWorkers: 3,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    reporters: ['default', './vitest.summary-reporter.mjs'],
  },
});
