import { beforeEach } from 'vitest';
import { runningSystems } from './running-systems';

// A setup file of every test project (vitest.config.mts): when a test fails, its report shows
// what the services of its file's systems logged while it ran (info and above), so a failure
// seen once in CI can be read, not only rerun.
beforeEach((context) => {
  const since = Date.now();
  context.onTestFailed(() => {
    for (const system of runningSystems) {
      const logs = system.logsSince(since);
      if (logs) process.stderr.write(`The services' logs of ${system.vhost} during "${context.task.name}":\n${logs}\n`);
    }
  });
});
